#pragma once
// Large host arrays for the CPU benchmarks: 2 MiB aligned and advised onto transparent huge
// pages (madvise; only advice, ignored where THP is off), and left untouched at allocation so the
// threads that use them fault their own pages in. With 4 KiB pages, TLB misses (doubly costly
// under virtualization) made CPU-Adam vary by 15% from run to run on the test machine.

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <type_traits>

namespace trainsim::calibrate {

template <class T>
class HugeArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  explicit HugeArray(std::size_t count) : count_(count) {
    constexpr std::size_t HUGE_PAGE = std::size_t{2} << 20;
    bytes_ = std::max(HUGE_PAGE, (count * sizeof(T) + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE);
    data_ = static_cast<T*>(std::aligned_alloc(HUGE_PAGE, bytes_));
    if (data_ == nullptr) throw std::bad_alloc();
    ::madvise(data_, bytes_, MADV_HUGEPAGE);
  }
  ~HugeArray() { std::free(data_); }
  HugeArray(const HugeArray&) = delete;
  HugeArray& operator=(const HugeArray&) = delete;

  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  T& operator[](std::size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace trainsim::calibrate
