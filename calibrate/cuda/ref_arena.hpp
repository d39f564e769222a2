#pragma once
// The reference step's own GPU allocator: one cudaMalloc, every buffer placed once at start by a
// bump pointer (256-byte aligned). Run first without memory to size it (counting mode), then for
// real; its high-water mark is the "peak allocated" the measured run reports.

#include <cstddef>
#include <string>

#include "../errors.hpp"

namespace trainsim::calibrate::ref {

class Arena {
 public:
  Arena() = default;  // counting: hands out no memory, only adds up sizes
  Arena(char* base, std::size_t capacity) : base_(base), capacity_(capacity) {}
  template <class T>
  T* alloc(std::size_t count) {
    const std::size_t bytes = (count * sizeof(T) + 255) / 256 * 256;
    if (base_ != nullptr && used_ + bytes > capacity_) {
      throw CalibrationError("reference arena: " + std::to_string(used_ + bytes) + " bytes needed, " +
                             std::to_string(capacity_) + " reserved (sizing pass and real pass disagree)");
    }
    T* p = base_ != nullptr ? reinterpret_cast<T*>(base_ + used_) : nullptr;
    used_ += bytes;
    return p;
  }
  std::size_t used() const { return used_; }

 private:
  char* base_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t used_ = 0;
};

}  // namespace trainsim::calibrate::ref
