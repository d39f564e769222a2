// A profiler trace's kernels by class (profiler_trace.hpp, kernel_class), as `trainsim validate`
// sets them against the replay's: the names PyTorch 2.11's kernels and its libraries' carry in the
// committed traces, and the sums over a trace written here.
#include <gtest/gtest.h>

#include "profiler_trace.hpp"
#include "test_support.hpp"

namespace trainsim::planner {
namespace {

TEST(KernelClass, NamesTheClassesOfTheCommittedTracesKernels) {
  EXPECT_STREQ(kernel_class("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"), "gemm");
  EXPECT_STREQ(kernel_class("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64"), "gemm");
  EXPECT_STREQ(kernel_class("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(Params)"), "gemm");
  // Flash attention's kernels carry CUTLASS types in their names: attention first.
  EXPECT_STREQ(kernel_class("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
                            "cutlass::bfloat16_t>>(Flash_fwd_params)"),
               "attention");
  EXPECT_STREQ(kernel_class("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"), "nccl");
  EXPECT_STREQ(kernel_class("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                            "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous "
                            "namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>>"),
               "optimizer");
  // FSDP2's foreach copies run through multi_tensor_apply too, but are copies, not the optimizer.
  EXPECT_STREQ(kernel_class("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                            "namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::CopyFunctor<c10::BFloat16, "
                            "float, 2, 1, 1>>"),
               "other");
  EXPECT_STREQ(kernel_class("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"), "other");
}

TEST(KernelClass, TraceSumsEachKernelsDurationIntoItsClass) {
  const test::ScratchDir dir;
  // Overlapping kernels both count (a sum of kernel time, not busy time); the memcpy is a copy.
  const std::string path = dir.write("t.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "nvjet_a", "ts": 0, "dur": 1000},
    {"ph": "X", "cat": "kernel", "name": "nvjet_b", "ts": 500, "dur": 2000},
    {"ph": "X", "cat": "kernel", "name": "flash_bwd", "ts": 3000, "dur": 400},
    {"ph": "X", "cat": "kernel", "name": "FusedAdamMathFunctor", "ts": 4000, "dur": 300},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv", "ts": 0, "dur": 5000},
    {"ph": "X", "cat": "kernel", "name": "layer_norm_kernel", "ts": 4500, "dur": 100},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "ts": 4700, "dur": 200}]})json");
  const TraceSummary t = read_profiler_trace(path);
  EXPECT_NEAR(t.gemm_kernel_s, 3000e-6, 1e-12);
  EXPECT_NEAR(t.attention_kernel_s, 400e-6, 1e-12);
  EXPECT_NEAR(t.optimizer_kernel_s, 300e-6, 1e-12);
  EXPECT_NEAR(t.nccl_kernel_s, 5000e-6, 1e-12);
  EXPECT_NEAR(t.other_kernel_s, 100e-6, 1e-12);
  EXPECT_NEAR(t.copy_s, 200e-6, 1e-12);
  EXPECT_EQ(t.kernels, 6u);
}

}  // namespace
}  // namespace trainsim::planner
