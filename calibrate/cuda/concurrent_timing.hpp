#pragma once
// Wall-clock timing of work that runs on several GPUs at once, one host thread per GPU (as each
// rank of a training job drives its own GPU): all threads start together at a barrier and a
// sample ends when the last one finishes.

#include <barrier>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace trainsim::calibrate {

// body(slot) runs on thread `slot` (0..threads-1) once per warm-up and once per sample; it must
// finish its work (synchronize its streams) before returning. Returns seconds per sample.
inline std::vector<double> time_concurrent(int threads, int warmup, int samples, const std::function<void(int)>& body) {
  std::barrier start(threads + 1), end(threads + 1);
  std::mutex error_mutex;
  std::exception_ptr error;
  std::vector<std::thread> workers;
  const int rounds = warmup + samples;
  for (int slot = 0; slot < threads; ++slot) {
    workers.emplace_back([&, slot] {
      for (int r = 0; r < rounds; ++r) {
        start.arrive_and_wait();
        try {
          body(slot);
        } catch (...) {
          std::lock_guard lock(error_mutex);
          if (!error) error = std::current_exception();
        }
        end.arrive_and_wait();  // reached even after an error, so nobody waits forever
      }
    });
  }
  std::vector<double> seconds;
  for (int r = 0; r < rounds; ++r) {
    start.arrive_and_wait();
    const auto t0 = std::chrono::steady_clock::now();
    end.arrive_and_wait();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r >= warmup) seconds.push_back(s);
  }
  for (auto& w : workers) w.join();
  if (error) std::rethrow_exception(error);
  return seconds;
}

}  // namespace trainsim::calibrate
