#pragma once
// Owning handles for device memory, pinned host memory, streams and events. Destructors cannot
// throw, so they release quietly; every acquisition is checked.

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "cuda_check.hpp"

namespace trainsim::calibrate {

// Makes `device` current for the lifetime of the guard.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    CUDA_CHECK(cudaGetDevice(&previous_));
    CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t bytes) : device_(device), bytes_(bytes) {
    DeviceGuard g(device);
    CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      device_ = o.device_;
    }
    return *this;
  }
  template <class T = void>
  T* as() const { return static_cast<T*>(ptr_); }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void release() {
    if (ptr_ != nullptr) {
      cudaSetDevice(device_);
      cudaFree(ptr_);
      ptr_ = nullptr;
    }
  }
  void* ptr_ = nullptr;
  int device_ = 0;
  std::size_t bytes_ = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
    // Portable: usable for copies to every GPU, not only the current one.
    CUDA_CHECK(cudaHostAlloc(&ptr_, bytes, cudaHostAllocPortable));
  }
  ~PinnedBuffer() {
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&&) = delete;
  template <class T = void>
  T* as() const { return static_cast<T*>(ptr_); }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class Stream {
 public:
  explicit Stream(int device) : device_(device) {
    DeviceGuard g(device);
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~Stream() {
    if (stream_ != nullptr) {
      cudaSetDevice(device_);
      cudaStreamDestroy(stream_);
    }
  }
  Stream(Stream&& o) noexcept : stream_(std::exchange(o.stream_, nullptr)), device_(o.device_) {}
  Stream& operator=(Stream&&) = delete;
  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }
  void sync() const { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
};

class Event {
 public:
  explicit Event(int device, unsigned flags = cudaEventDefault) : device_(device) {
    DeviceGuard g(device);
    CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags));
  }
  ~Event() {
    if (event_ != nullptr) {
      cudaSetDevice(device_);
      cudaEventDestroy(event_);
    }
  }
  Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)), device_(o.device_) {}
  Event& operator=(Event&&) = delete;
  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t s) const { CUDA_CHECK(cudaEventRecord(event_, s)); }

 private:
  cudaEvent_t event_ = nullptr;
  int device_ = 0;
};

inline double elapsed_seconds(const Event& start, const Event& stop) {
  float ms = 0;
  CUDA_CHECK(cudaEventSynchronize(stop.get()));
  CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace trainsim::calibrate
