#pragma once
// From work (FLOPs, bytes, parameters) to time on a cluster profile. GEMMs run at peak times an
// efficiency looked up in the profile's calibrated GEMM tables (nearest shape in log space, same
// precision): the products timed inside training steps where the profile has them, else those timed
// back to back (gemm_seconds). Memory-bound kernels at an achieved bandwidth from the calibrated
// kernel curves.
// Without calibration the defaults below apply and every result lists them as assumptions.
// Collective and copy rates are capped by calibrated bandwidth curves, explicitly per op.

#include <optional>
#include <string>
#include <vector>

#include "cluster_profile.hpp"
#include "layer_costs.hpp"
#include "stack_model.hpp"
#include "task_graph.hpp"

namespace trainsim::sim {

// Tensors of one size on one rank (program/grad_shard_pieces.hpp groups a shard's tensors so).
struct ShardPiece {
  double bytes = 0;  // one tensor's shard on one rank (or its elements, where a caller says so)
  int count = 0;     // tensors of that size
};

// Assumed where a profile has no calibration (and said so in every result).
inline constexpr double DEFAULT_GEMM_EFFICIENCY = 0.7;    // large tensor-core GEMMs, cuBLAS
inline constexpr double DEFAULT_KERNEL_EFFICIENCY = 0.8;  // elementwise kernels, of HBM bandwidth

// The tensor-core precision a model's numerics run their GEMMs in (mixed precision computes in
// its half type; fp32 in fp32). The request checks the profile has that peak before simulating.
hw::ComputePrecision compute_precision(wl::Numerics n);

class CostModel {
 public:
  // Throws std::invalid_argument when the GPU has no peak for the model's precision (a request
  // never gets here: planner/request.cpp refuses such a profile as a ConfigError).
  // `stack`: the training stack whose products are costed. calibration.gemm_in_step measured
  // PyTorch's products in PyTorch's steps; the trainsim reference calls cuBLASLt itself with its
  // heuristic's first algorithm (calibrate/cuda/ref_gemm.cpp) and keeps the table timed back to back
  // (with the in-step table two of its committed rows, reports/validation/reference/, came out at
  // -12.6% and -13.2%, where they are within 7% with the back-to-back table).
  CostModel(const hw::ClusterProfile& profile, wl::Numerics numerics, const wl::TrainingStack& stack);

  // An unbatched product at the profile's table of products timed inside training steps
  // (calibration.gemm_in_step) where it has one for the precision, else at its table of products
  // timed back to back (calibration.gemm), else at DEFAULT_GEMM_EFFICIENCY. A product with fp32
  // operands in a lower-precision step (wl::Gemm::fp32) at the fp32 peak and the fp32 entries of
  // calibration.gemm, its operands 4 bytes an element. A product whose sizes are not all multiples of
  // 8 (aligned_gemm) is looked up among the table's unaligned entries where it has any.
  double gemm_seconds(const wl::Gemm& g) const;
  bool costs_in_step(const wl::Gemm& g) const;
  bool fp32_in_lower_precision(const wl::Gemm& g) const;
  // A memory-bound kernel at the first of its own curves the profile calibrated (wl::MemoryKernel::curves,
  // as the stack that launches it orders them), else at its generic class's curve, else the copy's,
  // else at DEFAULT_KERNEL_EFFICIENCY of HBM bandwidth.
  double kernel_seconds(const wl::MemoryKernel& k) const;
  double pass_seconds(const wl::PassCost& pass) const;
  // pass_seconds split by kernel class, as a profiler trace names kernels (validate compares them,
  // planner/validate/profiler_trace.hpp): the GEMMs (materialized attention's batched products
  // among them, cuBLAS kernels in a trace); flash attention's kernels; the rest, memory-bound
  // kernels (the softmax of materialized attention among them); with the gaps between kernels
  // (launch_gap_seconds) the parts add up to pass_seconds.
  struct PassClasses {
    double gemm = 0, attention = 0, gaps = 0;
  };
  // The GPU's gaps between a pass's queued kernels: a kernel queued behind another starts
  // calibration.host_dispatch.gpu_kernel_us after it ends (trainsim-calibrate's host_dispatch part;
  // reports/calibration/step-interference/ measured 1.3-1.6 us for real kernels back to back).
  // The memory-bound kernels' curves were timed as blocks of back-to-back launches by CUDA events,
  // so each costed kernel entry that is a compute-stream launch holds one gap already; the GEMM and
  // flash attention tables are the profiler's kernel durations, which hold none. So: one gap per
  // launch the pass counts (PassCost::launches) beyond those entries (launches_in_entries()); 0 where
  // the pass counts no launches or the profile has no gpu_kernel_us. Part of pass_seconds, in no
  // kernel class.
  double launch_gap_seconds(const wl::PassCost& pass) const;
  PassClasses pass_classes(const wl::PassCost& pass) const;
  // Flash attention from the profile's calibrated kernels (nearest shape), when it has them and
  // the pass runs flash attention; the attention GEMMs are then not timed (attention_gemm).
  bool times_flash(const wl::PassCost& pass) const;
  double flash_seconds(const wl::PassCost& pass) const;
  static bool attention_gemm(const wl::Gemm& g);
  // PyTorch's CPU AdamW over `params` parameters in one of `processes` ranks stepping at once on
  // a node: the calibrated run with the nearest process count (calibration.cpu_optimizers), else
  // CPU-Adam's rate shared by the processes (said in assumptions).
  // A measured calibration.torch_offload (fused AdamW over pinned shards in processes holding a
  // CUDA context, as FSDP2's CPUOffloadPolicy(pin_memory=True) runs it) is preferred.
  // Where that run carries seconds per tensor by size (CpuOptimizerRate::seconds_per_tensor) and
  // `tensors` lists the process's shard (elements per tensor, grouped by size), the step is costed
  // tensor by tensor instead: between measured sizes linearly, below the smallest at its time (a
  // parallel region costs at least that), above the largest at its time per element.
  double torch_cpu_adam_seconds(double params, int processes, const std::vector<ShardPiece>& tensors = {}) const;
  // PyTorch's `grad += new` on the CPU over a copied fp32 shard of `bytes`, `gpus` ranks of the
  // node doing it at once (calibration.torch_offload "cpu_grad_add"); 0 when not calibrated.
  double torch_grad_add_seconds(double bytes, int gpus) const;
  // What a blocking copy of `bytes` into fresh pageable memory costs beyond the calibrated rate
  // when every destination page faults in (GLIBC_MMAP_THRESHOLD_MAX_BYTES): 0 from that size up,
  // where the calibration's copies faulted already, and where the profile has no such curve.
  double pageable_fault_seconds(double bytes, int gpus) const;
  // Adam over `params` parameters on the GPU (memory-bound).
  double gpu_adam_seconds(double params, wl::Numerics numerics) const;
  // The trainsim reference's Adam kernel (calibrate/cuda/ref_kernels.cu, adam_step): fp32 master,
  // moments and gradient, and a new bf16 copy where the stack keeps one, at the rate of its
  // calibration.reference_kernels class "adam" (else the copy curve).
  double reference_adam_seconds(double params, bool writes_bf16_copy) const;
  // The optimizer step on the GPU over `params` parameters, as the stack runs it: PyTorch's fused
  // AdamW over fp32 parameter, gradient and both moments (28 bytes a parameter), the reference's
  // Adam kernel, else gpu_adam_seconds.
  double gpu_optimizer_seconds(double params, wl::Numerics numerics, const wl::StackStates& states) const;

  // Calibrated rate caps (bytes/s of the op's ring hop or copy); 0 when uncalibrated.
  double collective_cap(CollectiveKind kind, int group_size, double bytes) const;
  // Copies: `pageable` when the host side is pageable memory (the driver stages it), `gpus` the
  // GPUs of the node copying at once. calibration.torch_offload's curve for (direction, memory)
  // measured at the nearest GPU count when there is one, else the single-GPU curve of
  // calibration.copies ("h2d_pinned", "d2h_pageable", ...).
  double copy_cap(OpKind kind, double bytes, bool pageable = false, int gpus = 1) const;

  hw::ComputePrecision precision() const { return precision_; }
  double peak_flops() const { return peak_flops_; }
  // What the costs rest on; the reference's kernel table only where the stack runs those kernels.
  std::vector<std::string> assumptions() const;

 private:
  hw::ClusterProfile profile_;  // a copy: a cost model outlives the profile it was made from
  hw::ComputePrecision precision_;
  double peak_flops_ = 0;
  double element_bytes_ = 2;
  const wl::StackModel* stack_;  // the training stack (static: stack_model's)
  struct LogGemm {
    double lm, ln, lk, efficiency;  // log m, log n, log k of a table entry
    bool aligned;                   // aligned_gemm(m, n, k)
  };
  static LogGemm log_gemm(double m, double n, double k, double efficiency);
  std::vector<LogGemm> block_gemms_;  // calibration.gemm of this precision
  std::vector<LogGemm> fp32_gemms_;   // calibration.gemm of fp32, for wl::Gemm::fp32 in a lower-precision step
  double fp32_peak_flops_ = 0;        // 0 when the profile has no fp32 peak
  std::vector<LogGemm> step_gemms_;   // calibration.gemm_in_step of it, each also transposed; empty for the reference
};

// Whether a product's m, n and k are all multiples of 8 elements: every operand's leading dimension a
// multiple of 16 bytes at 16-bit precision, which cuBLAS's fastest kernels need (its documentation,
// "Tensor Core Usage"); CostModel::gemm_seconds looks an unaligned product up among unaligned entries.
bool aligned_gemm(double m, double n, double k);

// Linear interpolation of a curve in log(bytes), clamped at its ends.
double interpolate_curve(const std::vector<hw::CurvePoint>& points, double bytes);

// glibc serves an allocation above its largest mmap threshold (DEFAULT_MMAP_THRESHOLD_MAX: 32 MiB on
// 64-bit) with a fresh mmap, so the bench's pageable copies from that size up fault in every
// destination page and those below it reuse resident heap pages (workloads/stacks/training_stacks.md,
// "FSDP2").
inline constexpr double GLIBC_MMAP_THRESHOLD_MAX_BYTES = 32.0 * 1024 * 1024;
// A pageable copy curve's cost of faulting in a fresh destination page, per byte: its mean time
// per byte from glibc's threshold up less its time per byte at its largest size below; 0 where
// the curve has no point on one side.
double fresh_page_seconds_per_byte(const std::vector<hw::CurvePoint>& points);

}  // namespace trainsim::sim
