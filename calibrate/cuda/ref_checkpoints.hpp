#pragma once
// Activation checkpoints in host memory (`--checkpoints host`, with `--recompute layer`): each
// layer's input x(l), the fp32 residual stream, is copied to pinned host memory after the layer's
// forward and brought back one layer ahead of its recompute, as ZeRO-Infinity offloads activation
// checkpoints (Rajbhandari et al. 2021, sec. 5.1.2). The copies out run on a stream of their own
// (device to host), the copies in on another (host to device), ordered against the compute stream
// by CUDA events only, as the simulator replays them (sim/schedules/data_parallel_schedule.cpp:
// SAVE_CHECKPOINT after a layer's forward, LOAD_CHECKPOINT `fetch_ahead` computes before its first
// recompute; sim/program/data_parallel_lowering.cpp: the D2H and H2D streams). GptGpu
// (ref_model.cpp) decides when; this class owns the host buffers, streams and events.

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "ref_param_store.hpp"

namespace trainsim::calibrate::ref {

class HostCheckpoints {
 public:
  // One pinned host buffer of `elems` floats per checkpointed boundary x(0) .. x(layers - 1).
  HostCheckpoints(int layers, std::size_t elems);
  ~HostCheckpoints();
  HostCheckpoints(const HostCheckpoints&) = delete;
  HostCheckpoints& operator=(const HostCheckpoints&) = delete;

  // Copy x(l) from `src` to the host once the compute stream has reached this point.
  void save(int l, const float* src, cudaStream_t compute);
  // The compute stream waits until x(l)'s copy out has finished (its GPU buffer may be reused).
  void wait_saved(int l, cudaStream_t compute);
  // Copy x(l) back into `dst` once the compute stream has reached this point and its copy out
  // has finished.
  void load(int l, float* dst, cudaStream_t compute);
  // The compute stream waits until x(l) is back.
  void wait_loaded(int l, cudaStream_t compute);

  // Per step: busy intervals of each copy stream, bytes each way (cleared by clear_step()).
  void clear_step();
  IntervalLog out_log, in_log;
  double bytes_out = 0, bytes_in = 0;

 private:
  std::size_t bytes_;
  std::vector<float*> host_;
  std::vector<cudaEvent_t> saved_, loaded_;
  cudaEvent_t reached_ = nullptr;  // the compute stream's point a copy waits for
  cudaStream_t out_ = nullptr, in_ = nullptr;
};

}  // namespace trainsim::calibrate::ref
