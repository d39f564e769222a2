#pragma once
// A vector that keeps its first N elements inside itself, for the short lists every instruction
// carries (its dependencies, its memory effects: one to four each). A program of a 1T step holds
// tens of thousands of instructions and the planner builds thousands of programs per sweep
// (sim/critical_path.hpp); with std::vector two heap blocks per instruction made allocation the
// largest cost of the walk. Only for trivially copyable elements; the subset of std::vector's
// interface the program builders use.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace trainsim::sim {

template <typename T, std::size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable elements only");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() = default;
  SmallVector(std::initializer_list<T> items) { append(items.begin(), items.end()); }
  SmallVector(const std::vector<T>& items) { append(items.begin(), items.end()); }  // NOLINT: implicit, as a vector would take it
  SmallVector(const SmallVector& o) { append(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { take(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) {
      size_ = 0;
      append(o.begin(), o.end());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      heap_.reset();
      size_ = 0;
      capacity_ = N;
      take(o);
    }
    return *this;
  }
  SmallVector& operator=(std::initializer_list<T> items) {
    size_ = 0;
    append(items.begin(), items.end());
    return *this;
  }
  SmallVector& operator=(const std::vector<T>& items) {
    size_ = 0;
    append(items.begin(), items.end());
    return *this;
  }

  T* data() { return heap_ ? heap_.get() : inline_; }
  const T* data() const { return heap_ ? heap_.get() : inline_; }
  iterator begin() { return data(); }
  iterator end() { return data() + size_; }
  const_iterator begin() const { return data(); }
  const_iterator end() const { return data() + size_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  void clear() { size_ = 0; }
  void reserve(std::size_t n) { grow_to(n); }

  void push_back(const T& v) {
    grow_to(size_ + 1);
    data()[size_++] = v;
  }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    push_back(T{std::forward<Args>(args)...});
    return back();
  }
  // Appends [first, last); inserting anywhere but at the end is not supported.
  template <typename It>
  iterator insert(const_iterator pos, It first, It last) {
    if (pos != end()) throw std::logic_error("SmallVector: insert only at the end");
    const std::size_t at = size_;
    append(first, last);
    return data() + at;
  }

  bool operator==(const SmallVector& o) const { return std::equal(begin(), end(), o.begin(), o.end()); }

 private:
  template <typename It>
  void append(It first, It last) {
    grow_to(size_ + static_cast<std::size_t>(std::distance(first, last)));
    for (; first != last; ++first) data()[size_++] = *first;
  }
  void grow_to(std::size_t n) {
    if (n <= capacity_) return;
    if (n > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("SmallVector: more than 2^32 - 1 elements");
    const std::size_t capacity = std::min<std::size_t>(std::max<std::size_t>(n, 2 * std::size_t{capacity_}), std::numeric_limits<std::uint32_t>::max());
    std::unique_ptr<T[]> bigger(new T[capacity]);
    std::memcpy(bigger.get(), data(), size_ * sizeof(T));
    heap_ = std::move(bigger);
    capacity_ = static_cast<std::uint32_t>(capacity);
  }
  void take(SmallVector& o) {
    if (o.heap_) {
      heap_ = std::move(o.heap_);
      capacity_ = o.capacity_;
    } else {
      std::memcpy(inline_, o.inline_, o.size_ * sizeof(T));
    }
    size_ = o.size_;
    o.size_ = 0;
    o.capacity_ = N;
  }

  T inline_[N]{};
  std::unique_ptr<T[]> heap_;
  // 32-bit counts: an instruction holds two of these lists, a walk tens of thousands of them.
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = N;
};

}  // namespace trainsim::sim
