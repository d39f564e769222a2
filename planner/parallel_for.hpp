#pragma once
// Runs `body(i)` for i in [0, n) on up to `threads` threads (here when one suffices), each index
// once; after a failure no new index starts, and the first exception is rethrown once all threads
// have stopped. The order in which indices run is not fixed: callers write to index-owned slots.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace trainsim::planner {

template <typename Body>
void parallel_for(std::size_t n, int threads, Body&& body) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr failure;
  std::mutex failure_lock;
  auto work = [&] {
    for (std::size_t i = next++; i < n && !failed; i = next++) {
      try {
        body(i);
      } catch (...) {
        const std::lock_guard<std::mutex> hold(failure_lock);
        if (!failure) failure = std::current_exception();
        failed = true;
      }
    }
  };
  const std::size_t workers = std::min(n, static_cast<std::size_t>(std::max(1, threads)));
  if (workers <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < workers; ++t) pool.emplace_back(work);
    for (auto& t : pool) t.join();
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace trainsim::planner
