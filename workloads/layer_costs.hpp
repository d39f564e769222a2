#pragma once
// The lowering from model + strategy to work: every GEMM (with its shape, for efficiency lookup)
// and every memory-bound kernel (with the bytes it moves) of one transformer layer, the
// embedding and the output layer, for one micro-batch on one tensor-parallel rank. Hardware-free:
// the simulator turns these into seconds with a cluster profile.
//
// FLOPs follow Narayanan et al. 2021 (Megatron-LM), Sec. 5.1 / Appendix: a layer's forward is
// 24 b s h^2 + 4 b s^2 h, the backward twice that, the logits 2 b s h V; so a step without
// recompute is 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) FLOPs and with full recompute
// 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::wl {

struct Gemm {
  const char* name;
  double m = 0, n = 0, k = 0;  // C[m x n] = A[m x k] B[k x n]
  double batch = 1;            // batched GEMMs (attention): this many of them
  // fp32 operands in a step of lower precision (a captured product that autocast does not reach,
  // such as SDPA's math path): PyTorch runs it without TF32 unless the user allows it
  // (torch.backends.cuda.matmul.allow_tf32 is False by default since PyTorch 1.12).
  bool fp32 = false;
  double flops() const { return 2.0 * m * n * k * batch; }
};

// The generic memory-bound kernels trainsim-calibrate times on every GPU (calibration.kernels
// "copy", "layernorm", "gelu", "softmax"): a kernel without a calibrated curve of its own is costed
// at the one closest to it in access pattern, elementwise passes at the copy's.
enum class KernelClass { COPY, LAYERNORM, GELU, SOFTMAX };
// The calibration table a kernel's own curve lives in: calibration.kernels (PyTorch's kernels,
// calibrate/scripts/torch_microbench.py, and the generic ones) or calibration.reference_kernels (the
// trainsim reference's, workloads/stacks/reference_kernels.hpp).
enum class CurveTable { KERNELS, REFERENCE_KERNELS };
struct CalibratedCurve {
  CurveTable table = CurveTable::KERNELS;
  const char* name = nullptr;  // the curve's `what`; nullptr: no curve
};
// Enough for the longest chain a stack sets (workloads/stacks/torch_kernels.cpp).
inline constexpr int MAX_KERNEL_CURVES = 3;

struct MemoryKernel {
  const char* name;
  double bytes = 0;  // read + written
  // Whether the entry is a kernel on the compute stream, as the stack's traces hold it: false for a
  // kernel the stack runs on a stream of its own, or for work the traces show no kernel for
  // (PassCost::launches_in_entries).
  bool compute_stream_launch = true;
  // How it is costed, set by whoever makes the kernel (it knows which framework launches it): at the
  // first of `curves` the profile calibrated, else at its generic class's curve, else at the copy's
  // (sim/costs/cost_model.cpp, CostModel::kernel_seconds).
  KernelClass generic = KernelClass::COPY;
  std::array<CalibratedCurve, MAX_KERNEL_CURVES> curves{};  // in order of preference
};

// Flash attention's work in one pass: a profile with calibrated flash kernels times it per shape
// (CostModel::flash_seconds) instead of the attention GEMMs, which stay listed for FLOP counts.
struct FlashWork {
  double batch_heads = 0;  // micro-batch x heads on this rank
  double seq = 0;
  double head_dim = 0;
  bool backward = false;
};

// One pass (forward or backward) of one part of the model on one rank.
struct PassCost {
  std::vector<Gemm> gemms;
  std::vector<MemoryKernel> kernels;
  bool fused_attention = false;  // flash attention: scores, softmax and context in one kernel
  FlashWork flash;               // set with fused_attention
  // Kernels the stack launches on the compute stream for this pass, where counted (a PyTorch
  // stack's transformer layer, workloads/stacks/stack_layer.hpp); 0: not counted.
  double launches = 0;
  // Of them, those a costed kernel entry stands for, one an entry (a compute-stream launch with
  // bytes): its curve, timed as back-to-back launches, holds the gap before each launch it timed
  // (CostModel::launch_gap_seconds).
  double launches_in_entries() const;
  double flops() const;
  double bytes() const;
};

struct LayerCost {
  PassCost forward;
  PassCost backward;  // dgrad and wgrad GEMMs of every forward GEMM, kernels' backward
};

// A layer as the stack runs it (workloads/stacks/stack_model.hpp), else the papers' layer.
LayerCost transformer_layer_cost(const ModelSpec& m, const Strategy& s);
LayerCost output_layer_cost(const ModelSpec& m, const Strategy& s);  // final norm, logits, loss
// The papers' layer's and head's matrix products and attention kernel alone, without the
// memory-bound kernels around them: what a stack's own layer computes in its GEMMs before it adds
// the kernels it launches (stack_layer.cpp, reference_stack.cpp).
LayerCost transformer_layer_products(const ModelSpec& m, const Strategy& s);
LayerCost output_layer_products(const ModelSpec& m, const Strategy& s);
LayerCost embedding_cost(const ModelSpec& m, const Strategy& s);

// Bytes an Adam step reads and writes per parameter on a GPU (mixed precision: fp32 weight,
// momentum, variance and the gradient read; fp32 weight, momentum, variance and the 16-bit
// weight written).
double adam_bytes_per_param(Numerics n);

// Model FLOPs of one training step (all ranks), counted from the operators above, without
// recompute: the numerator of "TFLOP/s per GPU" as Narayanan et al. report it.
double model_flops_per_step(const ModelSpec& m, const Strategy& s);

}  // namespace trainsim::wl
