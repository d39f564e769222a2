#pragma once
// A PyTorch profiler trace (the Chrome trace JSON torch.profiler exports, optionally gzipped) read
// for what a validation compares: the step as the GPU saw it (first to last GPU activity, or the
// ProfilerStep span when the trace has one), the time compute kernels and NCCL kernels kept the
// GPU busy, the communication no compute hid, the GPU's idle share, and the allocator's peak when
// the trace recorded memory events.

#include <optional>
#include <string>
#include <string_view>

namespace trainsim::planner {

struct TraceSummary {
  double step_s = 0;              // ProfilerStep span, else first GPU start to last GPU end
  bool step_from_profiler_step = false;
  double compute_busy_s = 0;      // union of non-NCCL kernels, copies and memsets
  double nccl_busy_s = 0;         // union of NCCL kernels
  double exposed_communication_s = 0;  // NCCL busy while nothing else runs
  double gpu_span_s = 0;          // first GPU start to last GPU end
  double idle_fraction = 0;       // share of gpu_span_s no GPU activity covers
  // Share of gpu_span_s without compute (no kernel other than NCCL's, no copy, no memset): idle
  // time plus NCCL kernels alone. A pipeline stage waiting for its neighbour sits in an NCCL
  // receive kernel, so this, not idle_fraction, is the stage's bubble as the trace shows it.
  double no_compute_fraction = 0;
  std::size_t kernels = 0;
  // Kernel time by class, each kernel's duration summed (kernel_class): what the replay costs as
  // GEMMs, attention, the other (memory-bound) kernels and the optimizer's, and NCCL's; copies and
  // memsets apart.
  double gemm_kernel_s = 0, attention_kernel_s = 0, other_kernel_s = 0, optimizer_kernel_s = 0, nccl_kernel_s = 0, copy_s = 0;
  std::optional<double> peak_allocated_bytes;  // from [memory] events (profile_memory=True)
  std::string gpu;     // deviceProperties[0].name, when the trace has it
  int world_size = 0;  // distributedInfo.world_size (0: not a distributed trace)
};

// The class of a CUDA kernel by its name, as PyTorch's kernels and its libraries' are named: "nccl"
// (NCCL's), "attention" (flash attention, fused multi-head or SDPA kernels), "optimizer" (Adam's
// fused kernels), "gemm" (cuBLAS's nvjet, gemm, CUTLASS and xmma kernels), else "other"
// (elementwise, norms, reductions, copies done by kernels, FSDP2's foreach copies).
const char* kernel_class(std::string_view name);

// Throws ConfigError naming the file for a trace that cannot be read or is not a Chrome trace
// with GPU activity.
TraceSummary read_profiler_trace(const std::string& path);

}  // namespace trainsim::planner
