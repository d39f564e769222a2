#pragma once
// The trainsim reference step's kernel classes and the bytes each launch moves: header only, so
// that trainsim-calibrate (which times them) and the lowering (which prices them) share one
// formula without calibrate linking the workloads library.

namespace trainsim::wl {

// The reference's kernel classes that have calibrated rates of their own (trainsim-calibrate
// --only reference_kernels times the very launchers of calibrate/cuda/ref_kernels.cu and writes
// calibration.reference_kernels). Their access patterns (a causal half of fp32 scores, a strided
// head transpose, a column reduction, an fp32-row LayerNorm) are none of the generic calibrated
// kernels' (copy, bf16 LayerNorm, GELU, dense softmax).
enum class ReferenceKernel {
  LAYERNORM_FWD,         // rows = tokens, cols = hidden
  LAYERNORM_BWD_INPUT,   // accumulating into dx
  LAYERNORM_BWD_PARAMS,
  SPLIT_QKV,             // rows = tokens, cols = hidden (the input is [T, 3h])
  MERGE_HEADS,
  SPLIT_HEADS,
  MERGE_QKV_GRAD,        // rows = tokens, cols = hidden (the output is [T, 3h])
  CAUSAL_SOFTMAX_FWD,    // rows = batch x heads x seq, cols = seq
  CAUSAL_SOFTMAX_BWD,
  COLUMN_SUM_FP32,       // rows x cols input
  COLUMN_SUM_BF16,
  ADAM,                  // rows = parameters, cols = 1: fp32 master, moments and gradient, new bf16 copy
  CAST_FP32_TO_BF16,     // rows = elements, cols = 1 (ZeRO-3: a shard before its all-gather)
  ADD_INPLACE_FP32,      // rows = elements, cols = 1 (ZeRO-3: a scattered gradient into the shard)
};
inline constexpr ReferenceKernel REFERENCE_KERNELS[] = {
    ReferenceKernel::LAYERNORM_FWD,      ReferenceKernel::LAYERNORM_BWD_INPUT, ReferenceKernel::LAYERNORM_BWD_PARAMS,
    ReferenceKernel::SPLIT_QKV,          ReferenceKernel::MERGE_HEADS,         ReferenceKernel::SPLIT_HEADS,
    ReferenceKernel::MERGE_QKV_GRAD,     ReferenceKernel::CAUSAL_SOFTMAX_FWD,  ReferenceKernel::CAUSAL_SOFTMAX_BWD,
    ReferenceKernel::COLUMN_SUM_FP32,    ReferenceKernel::COLUMN_SUM_BF16,     ReferenceKernel::ADAM,
    ReferenceKernel::CAST_FP32_TO_BF16,  ReferenceKernel::ADD_INPLACE_FP32};
// The class's name in calibration.reference_kernels ("causal_softmax_fwd", ...), and the bytes one
// launch reads and writes: the size axis of its calibrated curve. The same formula prices the
// stack's kernels and turns the calibration's times into rates.
inline const char* reference_kernel_class(ReferenceKernel k) {
  switch (k) {
    case ReferenceKernel::LAYERNORM_FWD: return "layernorm_fwd";
    case ReferenceKernel::LAYERNORM_BWD_INPUT: return "layernorm_bwd_input";
    case ReferenceKernel::LAYERNORM_BWD_PARAMS: return "layernorm_bwd_params";
    case ReferenceKernel::SPLIT_QKV: return "split_qkv";
    case ReferenceKernel::MERGE_HEADS: return "merge_heads";
    case ReferenceKernel::SPLIT_HEADS: return "split_heads";
    case ReferenceKernel::MERGE_QKV_GRAD: return "merge_qkv_grad";
    case ReferenceKernel::CAUSAL_SOFTMAX_FWD: return "causal_softmax_fwd";
    case ReferenceKernel::CAUSAL_SOFTMAX_BWD: return "causal_softmax_bwd";
    case ReferenceKernel::COLUMN_SUM_FP32: return "column_sum_fp32";
    case ReferenceKernel::COLUMN_SUM_BF16: return "column_sum_bf16";
    case ReferenceKernel::ADAM: return "adam";
    case ReferenceKernel::CAST_FP32_TO_BF16: return "cast_fp32_to_bf16";
    case ReferenceKernel::ADD_INPLACE_FP32: return "add_inplace_fp32";
  }
  return "?";
}

inline double reference_kernel_bytes(ReferenceKernel k, double rows, double cols) {
  const double n = rows * cols;
  switch (k) {
    case ReferenceKernel::LAYERNORM_FWD: return (4 + 2) * n;             // fp32 in, bf16 out
    case ReferenceKernel::LAYERNORM_BWD_INPUT: return (4 + 4 + 8) * n;   // dy, x in; dx read and written
    case ReferenceKernel::LAYERNORM_BWD_PARAMS: return (4 + 4) * n;      // dy, x in
    case ReferenceKernel::SPLIT_QKV:                                      // fp32 [T, 3h] in, bf16 q, k, v out
    case ReferenceKernel::MERGE_QKV_GRAD: return (12 + 6) * n;           // fp32 dq, dk, dv in, bf16 [T, 3h] out
    case ReferenceKernel::MERGE_HEADS:
    case ReferenceKernel::SPLIT_HEADS: return (4 + 2) * n;               // fp32 in, bf16 out
    case ReferenceKernel::CAUSAL_SOFTMAX_FWD: return (4.0 / 2 + 2) * n;  // causal half of fp32 scores, bf16 P
    case ReferenceKernel::CAUSAL_SOFTMAX_BWD: return (2.0 / 2 + 4.0 / 2 + 2) * n;  // half of P, dP; bf16 dS
    case ReferenceKernel::COLUMN_SUM_FP32: return 4 * n;
    case ReferenceKernel::COLUMN_SUM_BF16: return 2 * n;
    // Master, m, v and the fp32 gradient read; master, m, v and the bf16 copy written. Without the
    // copy (ZeRO-3 keeps none: ref_param_store.cpp) a launch moves 28 bytes per parameter, priced
    // at the same class's rate.
    case ReferenceKernel::ADAM: return (16 + 14) * n;
    case ReferenceKernel::CAST_FP32_TO_BF16: return (4 + 2) * n;
    case ReferenceKernel::ADD_INPLACE_FP32: return (4 + 4 + 4) * n;  // a read and written, b read
  }
  return 0;
}

}  // namespace trainsim::wl
