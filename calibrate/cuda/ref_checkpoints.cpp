#include "ref_checkpoints.hpp"

#include "cuda_check.hpp"

namespace trainsim::calibrate::ref {

HostCheckpoints::HostCheckpoints(int layers, std::size_t elems) : bytes_(elems * sizeof(float)) {
  CUDA_CHECK(cudaStreamCreateWithFlags(&out_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&in_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&reached_, cudaEventDisableTiming));
  for (int l = 0; l < layers; ++l) {
    void* p = nullptr;
    CUDA_CHECK(cudaHostAlloc(&p, bytes_, cudaHostAllocPortable));
    host_.push_back(static_cast<float*>(p));
    for (auto* v : {&saved_, &loaded_}) {
      cudaEvent_t e = nullptr;
      CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      v->push_back(e);
    }
  }
}

HostCheckpoints::~HostCheckpoints() {
  // Nothing may still be copying into or out of the buffers freed below.
  if (out_ != nullptr) cudaStreamSynchronize(out_);
  if (in_ != nullptr) cudaStreamSynchronize(in_);
  for (float* p : host_) cudaFreeHost(p);
  for (cudaEvent_t e : saved_) cudaEventDestroy(e);
  for (cudaEvent_t e : loaded_) cudaEventDestroy(e);
  if (reached_ != nullptr) cudaEventDestroy(reached_);
  if (out_ != nullptr) cudaStreamDestroy(out_);
  if (in_ != nullptr) cudaStreamDestroy(in_);
}

void HostCheckpoints::save(int l, const float* src, cudaStream_t compute) {
  const auto i = static_cast<std::size_t>(l);
  CUDA_CHECK(cudaEventRecord(reached_, compute));
  CUDA_CHECK(cudaStreamWaitEvent(out_, reached_, 0));
  out_log.begin(out_);
  CUDA_CHECK(cudaMemcpyAsync(host_[i], src, bytes_, cudaMemcpyDeviceToHost, out_));
  out_log.end(out_);
  CUDA_CHECK(cudaEventRecord(saved_[i], out_));
  bytes_out += static_cast<double>(bytes_);
}

void HostCheckpoints::wait_saved(int l, cudaStream_t compute) {
  CUDA_CHECK(cudaStreamWaitEvent(compute, saved_[static_cast<std::size_t>(l)], 0));
}

void HostCheckpoints::load(int l, float* dst, cudaStream_t compute) {
  const auto i = static_cast<std::size_t>(l);
  CUDA_CHECK(cudaEventRecord(reached_, compute));
  CUDA_CHECK(cudaStreamWaitEvent(in_, reached_, 0));
  CUDA_CHECK(cudaStreamWaitEvent(in_, saved_[i], 0));
  in_log.begin(in_);
  CUDA_CHECK(cudaMemcpyAsync(dst, host_[i], bytes_, cudaMemcpyHostToDevice, in_));
  in_log.end(in_);
  CUDA_CHECK(cudaEventRecord(loaded_[i], in_));
  bytes_in += static_cast<double>(bytes_);
}

void HostCheckpoints::wait_loaded(int l, cudaStream_t compute) {
  CUDA_CHECK(cudaStreamWaitEvent(compute, loaded_[static_cast<std::size_t>(l)], 0));
}

void HostCheckpoints::clear_step() {
  out_log.clear();
  in_log.clear();
  bytes_out = bytes_in = 0;
}

}  // namespace trainsim::calibrate::ref
