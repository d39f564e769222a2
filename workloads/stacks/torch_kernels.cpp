#include "torch_kernels.hpp"

#include <array>
#include <stdexcept>
#include <string>

namespace trainsim::wl {
namespace {

struct TorchKernel {
  std::string_view name;
  std::array<const char*, MAX_KERNEL_CURVES> curves;  // calibration.kernels, in order of preference
};

// Each kernel's own curve first. The substitutes: DDP's gradient scaling into its buckets and the
// layer's copies in its layouts, elementwise fp32-rate passes, at PyTorch's fp32 copy; FSDP2's own
// kernels (merge_fsdp_kernels.py) at the plain kernel they batch or split; the layer's kernels in
// their split layouts (torch_layer_kernels.py) at the contiguous kernel. SwiGLU's backward reads the
// split forward's rate per byte where measured (its forward-and-backward bench is host-bound at the
// smaller sizes, reports/calibration/layer-kernels/), else the contiguous forward-and-backward.
constexpr TorchKernel TORCH_KERNELS[] = {
    {"torch:adamw_fused_fp32", {"torch_adamw_fused_fp32"}},
    {"torch:add_bf16", {"torch_add_bf16"}},
    {"torch:add_fp32", {"torch_add_fp32"}},
    {"torch:add_fp32_bf16", {"torch_add_fp32_bf16", "torch_add_fp32"}},
    {"torch:add_inplace_fp32", {"torch_add_inplace_fp32"}},
    {"torch:bias_grad_bf16", {"torch_bias_grad_bf16", "torch_copy_fp32"}},
    {"torch:cast_bf16_to_fp32", {"torch_cast_bf16_to_fp32"}},
    {"torch:cast_fp32_to_bf16", {"torch_cast_fp32_to_bf16"}},
    {"torch:chunk_cat_bf16_to_fp32", {"torch_chunk_cat_bf16_to_fp32", "torch_cast_bf16_to_fp32"}},
    {"torch:copy_fp32", {"torch_copy_fp32"}},
    {"torch:cross_entropy_fwd_bwd_fp32", {"torch_cross_entropy_fwd_bwd_fp32"}},
    {"torch:foreach_cast_fp32_to_bf16", {"torch_foreach_cast_fp32_to_bf16", "torch_cast_fp32_to_bf16"}},
    {"torch:foreach_copy_bf16", {"torch_foreach_copy_bf16"}},
    {"torch:gelu_bwd_bf16", {"torch_gelu_bwd_bf16"}},
    {"torch:gelu_fwd_bf16", {"torch_gelu_fwd_bf16"}},
    {"torch:layernorm_fwd_bf16", {"torch_layernorm_fwd_bf16"}},
    {"torch:layernorm_fwd_bwd_bf16", {"torch_layernorm_fwd_bwd_bf16"}},
    {"torch:layernorm_fwd_bwd_fp32", {"torch_layernorm_fwd_bwd_fp32"}},
    {"torch:layernorm_fwd_fp32", {"torch_layernorm_fwd_fp32"}},
    {"torch:mul_scalar_fp32", {"torch_mul_scalar_fp32", "torch_copy_fp32"}},
    {"torch:rmsnorm_fwd_bf16", {"torch_rmsnorm_fwd_bf16"}},
    {"torch:rmsnorm_fwd_bwd_bf16", {"torch_rmsnorm_fwd_bwd_bf16"}},
    {"torch:rmsnorm_fwd_bwd_fp32", {"torch_rmsnorm_fwd_bwd_fp32"}},
    {"torch:rmsnorm_fwd_fp32", {"torch_rmsnorm_fwd_fp32"}},
    {"torch:rotary_split_fwd_bf16", {"torch_rotary_split_fwd_bf16", "torch_rotary_fwd_bf16"}},
    {"torch:split_cat_bf16", {"torch_split_cat_bf16", "torch_copy_fp32"}},
    {"torch:split_copy_bf16", {"torch_split_copy_bf16", "torch_copy_fp32"}},
    {"torch:swiglu_split_bwd_bf16",
     {"torch_swiglu_split_bwd_bf16", "torch_swiglu_split_fwd_bf16", "torch_swiglu_fwd_bwd_bf16"}},
    {"torch:swiglu_split_fwd_bf16", {"torch_swiglu_split_fwd_bf16", "torch_swiglu_fwd_bf16"}},
};

}  // namespace

MemoryKernel torch_kernel(std::string_view name, double bytes, bool compute_stream_launch) {
  for (const TorchKernel& k : TORCH_KERNELS) {
    if (k.name != name) continue;
    MemoryKernel out{k.name.data(), bytes, compute_stream_launch};
    for (int i = 0; i < MAX_KERNEL_CURVES; ++i) out.curves[i] = {CurveTable::KERNELS, k.curves[i]};
    return out;
  }
  throw std::invalid_argument("no PyTorch kernel named " + std::string(name) + " (workloads/stacks/torch_kernels.cpp)");
}

}  // namespace trainsim::wl
