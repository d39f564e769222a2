#pragma once
// Where each GPU's time goes in a step. Categories are exclusive: compute; communication not
// hidden behind compute (exposed); offload I/O (copies, storage) hidden behind neither; optimizer
// work (GPU Adam, or the CPU optimizer working for it) behind none of those; and idle (the bubble:
// no op of the GPU running), measured on its own, so the five add up to the step only if the
// accounting is right.

#include <limits>
#include <vector>

#include "engine.hpp"
#include "task_graph.hpp"

namespace trainsim::sim {

struct GpuBusy {
  double compute_s = 0;
  double exposed_communication_s = 0;
  double exposed_offload_io_s = 0;
  double optimizer_s = 0;
  double idle_s = 0;
  double hardware_flops = 0;
  // Busy as CUDA events around a stack's calls count it (reports/validation/README.md, "The
  // pipeline bubble"): the union of each call's span (Op::action) from the moment its first work
  // could reach the compute stream (its host dispatch starting, the stream's earlier work and the
  // waits it was queued behind, such as a receive, done) to its last kernel's end. A GPU waiting
  // inside a call for its host to issue kernels is busy here and idle above. Forward and backward
  // calls, and the optimizer step's time outside them.
  double call_span_compute_s = 0;
  double call_span_optimizer_s = 0;
  // GPU kernel time by class, as a profiler trace of the step would sum its kernels (validate
  // compares them): the compute ops' time in the replay split by their costed classes (Op::gemm_seconds,
  // attention_seconds; the rest memory-bound kernels, less the gaps between kernels, gap_seconds,
  // which a trace's kernel durations do not hold), and the optimizer's GPU kernels. Summed
  // over ops, so two overlapping ops count twice, as two kernels do in a trace.
  double gemm_kernel_s = 0, attention_kernel_s = 0, other_kernel_s = 0, optimizer_kernel_s = 0;
};

// Busy time of each simulated GPU over [from, to); hardware FLOPs of the ops of steps
// first_step..last_step. A collective counts for its participants, any other op for its GPU.
std::vector<GpuBusy> gpu_busy(const TaskGraph& graph, const ReplayResult& replay, int gpus, double from, double to,
                              int first_step = 0, int last_step = std::numeric_limits<int>::max());

}  // namespace trainsim::sim
