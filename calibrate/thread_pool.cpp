#include "thread_pool.hpp"

#include <algorithm>

namespace trainsim::calibrate {

ThreadPool::ThreadPool(int threads) : size_(std::max(1, threads)) {
  for (int i = 1; i < size_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::worker(int index) {
  unsigned long seen = 0;
  for (;;) {
    const std::function<void(int)>* job = nullptr;
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    try {
      (*job)(index);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    if (--remaining_ == 0) done_.notify_one();
  }
}

void ThreadPool::run(const std::function<void(int)>& fn) {
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    remaining_ = size_ - 1;
    error_ = nullptr;
    ++generation_;
  }
  start_.notify_all();
  std::exception_ptr own;
  try {
    fn(0);
  } catch (...) {
    own = std::current_exception();
  }
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return remaining_ == 0; });
  job_ = nullptr;
  if (own) std::rethrow_exception(own);
  if (error_) std::rethrow_exception(error_);
}

std::pair<std::size_t, std::size_t> chunk_of(std::size_t n, int parts, int index, std::size_t align) {
  const std::size_t p = static_cast<std::size_t>(std::max(1, parts));
  std::size_t chunk = (n + p - 1) / p;
  chunk = (chunk + align - 1) / align * align;
  const std::size_t begin = std::min(n, chunk * static_cast<std::size_t>(index));
  const std::size_t end = std::min(n, begin + chunk);
  return {begin, end};
}

}  // namespace trainsim::calibrate
