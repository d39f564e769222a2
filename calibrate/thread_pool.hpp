#pragma once
// A fixed set of worker threads that run one function on every worker and wait for all of them.
// CPU-Adam and the host-memory benchmark time many short parallel steps; starting threads per
// step would measure thread creation instead of the optimizer.

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace trainsim::calibrate {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }
  // Runs fn(i) for i in [0, size()), index 0 on the calling thread, and returns when all are done.
  // An exception thrown by any worker is rethrown here.
  void run(const std::function<void(int)>& fn);

 private:
  void worker(int index);

  int size_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(int)>* job_ = nullptr;
  unsigned long generation_ = 0;
  int remaining_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

// [begin, end) of worker `index` when `n` items are split in `parts` chunks aligned to `align`.
std::pair<std::size_t, std::size_t> chunk_of(std::size_t n, int parts, int index, std::size_t align);

}  // namespace trainsim::calibrate
