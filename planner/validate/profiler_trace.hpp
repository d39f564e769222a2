#pragma once
// A PyTorch profiler trace (the Chrome trace JSON torch.profiler exports, optionally gzipped) read
// for what a validation compares: the step as the GPU saw it (first to last GPU activity, or the
// ProfilerStep span when the trace has one), the time compute kernels and NCCL kernels kept the
// GPU busy, the communication no compute hid, the GPU's idle share, and the allocator's peak when
// the trace recorded memory events.

#include <nlohmann/json.hpp>
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

// A trace's summary as a small JSON document, the extract a measured run names instead of its
// trace (measured.trace_summary): the validation reads nothing of a trace but its TraceSummary, so
// the rows come out the same, bit for bit, from either (JSON numbers round-trip a double).
// {"schema_version": 1, "kind": "trainsim.trace_summary", "source": the trace's file name,
//  "step_s", "step_from_profiler_step", "gpu_span_s", "compute_busy_s", "nccl_busy_s",
//  "exposed_communication_s", "idle_fraction", "no_compute_fraction", "kernels",
//  "kernel_s": {"gemm", "attention", "other", "optimizer", "nccl"}, "copy_s",
//  "peak_allocated_bytes" (only when the trace recorded memory events), "gpu", "world_size"}.
// `trainsim validate --summarize-trace TRACE -o FILE` writes one.
nlohmann::ordered_json trace_summary_json(const TraceSummary& t, const std::string& source);

// Reads such a summary strictly: a missing, unknown or out-of-range key is a ConfigError naming
// the file and the key.
TraceSummary read_trace_summary(const std::string& path);

}  // namespace trainsim::planner
