#pragma once
// calibration.reference_kernels: the rates of the trainsim reference step's own kernels by class
// (trainsim-calibrate --only reference_kernels times the launchers of calibrate/cuda/ref_kernels.cu
// at the shapes the reference runs). The size axis is the bytes one launch moves, as
// workloads/stacks/reference_stack.cpp (reference_kernel_bytes) counts them for the same class.
//
//   "reference_kernels": {"source": "...", "curves": [
//     {"what": "causal_softmax_fwd", "points": [{"bytes": 1.3e8, "GBps": 2900}, ...]}, ...]}

#include <nlohmann/json.hpp>
#include <string_view>

#include "cluster_profile.hpp"
#include "strict_json.hpp"

namespace trainsim::hw {

// The classes a profile may hold (workloads::reference_kernel_class names the same ones; a test
// holds the two lists equal).
inline constexpr std::string_view REFERENCE_KERNEL_CLASSES[] = {
    "layernorm_fwd", "layernorm_bwd_input", "layernorm_bwd_params", "split_qkv",       "merge_heads",
    "split_heads",   "merge_qkv_grad",      "causal_softmax_fwd",   "causal_softmax_bwd", "column_sum_fp32",
    "column_sum_bf16", "adam",              "cast_fp32_to_bf16",    "add_inplace_fp32"};

// Unknown classes, a class listed twice, sizes out of order or rates out of range are ConfigErrors.
void read_reference_kernels(StrictObject o, Calibration& cal);
nlohmann::ordered_json reference_kernels_to_json(const Calibration& c);

}  // namespace trainsim::hw
