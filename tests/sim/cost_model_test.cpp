// The cost model applies calibrated tables explicitly: nearest GEMM shape, curves interpolated
// in log(bytes), collective and copy rates capped at measured bandwidth.
#include "cost_model.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "engine.hpp"
#include "isolation.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "reference_kernel_table.hpp"
#include "reference_stack.hpp"
#include "stack_layer.hpp"
#include "torch_kernels.hpp"
#include "test_support.hpp"

namespace trainsim::sim {
namespace {

hw::ClusterProfile calibrated() {
  hw::ClusterProfile p = hw::builtin_profile("dgx-h100");
  p.calibration.gemm = {{hw::ComputePrecision::BF16, 8192, 8192, 8192, 0.7},
                        {hw::ComputePrecision::BF16, 1024, 1024, 1024, 0.4},
                        {hw::ComputePrecision::FP16, 8192, 8192, 8192, 0.9}};
  p.calibration.collectives = {{"all_reduce", 4, {{1e6, 10}, {1e9, 100}}}};
  p.calibration.kernels = {{"copy", 1, {{1e6, 1000}, {1e9, 3000}}}};
  return p;
}

// One launch of a reference kernel class moving `bytes`.
wl::MemoryKernel reference(wl::ReferenceKernel k, double bytes) {
  wl::MemoryKernel out = wl::reference_kernel(k, 1, 1);
  out.bytes = bytes;
  return out;
}

TEST(CostModel, GemmEfficiencyComesFromTheNearestCalibratedShapeOfItsPrecision) {
  const hw::ClusterProfile p = calibrated();
  const CostModel c(p, wl::Numerics::BF16_MIXED, {});
  const double peak = 989.4e12;
  const wl::Gemm big{"x", 8000, 8000, 8000, 1};
  EXPECT_NEAR(c.gemm_seconds(big), big.flops() / (peak * 0.7), 1e-12);
  const wl::Gemm small{"x", 1000, 1100, 900, 1};
  EXPECT_NEAR(c.gemm_seconds(small), small.flops() / (peak * 0.4), 1e-15);
}

// A profile's table of products timed inside training steps (calibration.gemm_in_step) is preferred
// for unbatched products, a product and its transpose alike; batched products and precisions it does
// not have keep the table timed back to back.
TEST(CostModel, UnbatchedProductsPreferTheTableTimedInsideSteps) {
  hw::ClusterProfile p = calibrated();
  p.calibration.gemm_in_step = {{hw::ComputePrecision::BF16, 8192, 1024, 4096, 0.85},
                                {hw::ComputePrecision::BF16, 1024, 1024, 1024, 0.5}};
  const CostModel c(p, wl::Numerics::BF16_MIXED, {});
  const double peak = 989.4e12;
  const wl::Gemm forward{"x", 8192, 1024, 4096, 1};
  EXPECT_NEAR(c.gemm_seconds(forward), forward.flops() / (peak * 0.85), 1e-12);
  const wl::Gemm transposed{"x", 1024, 8192, 4096, 1};  // nearer the 8192 x 1024 entry's transpose than 1024^3
  EXPECT_NEAR(c.gemm_seconds(transposed), transposed.flops() / (peak * 0.85), 1e-12);
  const wl::Gemm batched{"x", 8000, 8000, 8000, 2};
  EXPECT_NEAR(c.gemm_seconds(batched), batched.flops() / (peak * 0.7), 1e-12);
  const CostModel fp16(p, wl::Numerics::FP16_MIXED, {});
  EXPECT_NEAR(fp16.gemm_seconds(forward), forward.flops() / (peak * 0.9), 1e-12);
  // The trainsim reference calls cuBLASLt with its own algorithm choice: the table timed back to back.
  wl::TrainingStack reference;
  reference.kind = wl::StackKind::TRAINSIM_REFERENCE;
  const CostModel own(p, wl::Numerics::BF16_MIXED, reference);
  EXPECT_NEAR(own.gemm_seconds(forward), forward.flops() / (peak * 0.7), 1e-12);
  EXPECT_NE(c.assumptions().front().find("inside training steps"), std::string::npos) << c.assumptions().front();
  EXPECT_EQ(fp16.assumptions().front().find("inside training steps"), std::string::npos) << fp16.assumptions().front();
}

// A product with fp32 operands in a bf16 step (SDPA's math path upcasts, outside autocast) runs at
// the fp32 peak (no TF32: PyTorch's default) and the fp32 entries of the table, its traffic at 4 bytes
// an element; in an fp32 step nothing changes.
TEST(CostModel, Fp32ProductsInALowerPrecisionStepUseTheFp32PeakAndTable) {
  hw::ClusterProfile p = calibrated();
  p.calibration.gemm.push_back({hw::ComputePrecision::FP32, 4096, 4096, 4096, 0.74});
  const CostModel c(p, wl::Numerics::BF16_MIXED, {});
  wl::Gemm scores{"batched_gemm", 2048, 2048, 64, 96};
  scores.fp32 = true;
  const double fp32_peak = 67e12;  // dgx-h100: H100 SXM5 datasheet, fp32
  const double compute = 2.0 * 2048 * 2048 * 64 * 96 / (fp32_peak * 0.74);
  EXPECT_NEAR(c.gemm_seconds(scores), compute, 1e-12);
  scores.fp32 = false;
  EXPECT_LT(c.gemm_seconds(scores) * 3, compute);  // bf16: bound by its 2-byte traffic
  // Memory-bound at fp32: [96, 2048, 2048] written at 4 bytes dominates a k = 1 product.
  wl::Gemm outer{"batched_gemm", 2048, 2048, 1, 96, true};
  const double traffic = (2048.0 + 2048.0 + 2048.0 * 2048.0) * 96 * 4;
  EXPECT_NEAR(c.gemm_seconds(outer), traffic / (3350e9 * DEFAULT_KERNEL_EFFICIENCY), 1e-9);
  const CostModel fp32_step(p, wl::Numerics::FP32, {});
  scores.fp32 = true;
  EXPECT_NEAR(fp32_step.gemm_seconds(scores), compute, 1e-12);
}

// A product with a size that is no multiple of 8 (GPT-2's vocabulary of 50257) takes the nearest
// calibrated entry that is unaligned too, where the table has one; an aligned product never does.
TEST(CostModel, UnalignedProductsTakeTheUnalignedEntries) {
  hw::ClusterProfile p = calibrated();
  const double peak = 989.4e12;
  const wl::Gemm head{"gemm", 4096, 50257, 1600, 1};
  const wl::Gemm padded{"gemm", 4096, 50304, 1600, 1};
  const CostModel before(p, wl::Numerics::BF16_MIXED, {});
  EXPECT_NEAR(before.gemm_seconds(head), head.flops() / (peak * 0.7), 1e-12);  // no unaligned entry: 8192^3's
  p.calibration.gemm.push_back({hw::ComputePrecision::BF16, 2048, 50257, 1024, 0.3});
  const CostModel c(p, wl::Numerics::BF16_MIXED, {});
  EXPECT_NEAR(c.gemm_seconds(head), head.flops() / (peak * 0.3), 1e-12);
  EXPECT_NEAR(c.gemm_seconds(padded), padded.flops() / (peak * 0.7), 1e-12);
  EXPECT_TRUE(aligned_gemm(4096, 50304, 1600));
  EXPECT_FALSE(aligned_gemm(4096, 50257, 1600));
  EXPECT_FALSE(aligned_gemm(4100, 4096, 4096));
}

TEST(CostModel, CurvesInterpolateInLogBytesAndClampAtTheirEnds) {
  const std::vector<hw::CurvePoint> curve{{1e6, 10}, {1e9, 100}};
  EXPECT_DOUBLE_EQ(interpolate_curve(curve, 1e6), 10);
  EXPECT_NEAR(interpolate_curve(curve, std::sqrt(1e6 * 1e9)), 55, 1e-9);  // halfway in log space
  EXPECT_DOUBLE_EQ(interpolate_curve(curve, 1e12), 100);
  EXPECT_DOUBLE_EQ(interpolate_curve(curve, 1), 10);
  const CostModel c(calibrated(), wl::Numerics::BF16_MIXED, {});
  EXPECT_NEAR(c.kernel_seconds({"residual_add", 1e9}), 1e9 / 3000e9, 1e-15);
  EXPECT_DOUBLE_EQ(c.collective_cap(CollectiveKind::ALL_REDUCE, 4, 1e9), 100e9);
  EXPECT_DOUBLE_EQ(c.collective_cap(CollectiveKind::ALL_GATHER, 4, 1e9), 0.0);  // not calibrated: link rate
}

// The cost model knows no kernel by name: it walks the curves the kernel carries, in their order and
// in their tables, then its generic class's curve, then the copy's.
TEST(CostModel, KernelsAreCostedAtTheFirstOfTheirCurvesTheProfileHas) {
  hw::ClusterProfile p = calibrated();  // copy: 1000 GB/s at 1 MB, 3000 GB/s at 1 GB
  p.calibration.kernels.push_back({"gelu", 1, {{1e6, 2000}, {1e9, 2000}}});
  p.calibration.kernels.push_back({"second", 1, {{1e6, 1500}, {1e9, 1500}}});
  p.calibration.reference_kernels.push_back({"third", 1, {{1e6, 500}, {1e9, 500}}});
  const CostModel c(p, wl::Numerics::BF16_MIXED, {});
  wl::MemoryKernel k{"second", 1e9, true, wl::KernelClass::GELU};
  EXPECT_NEAR(c.kernel_seconds(k), 1e9 / 2000e9, 1e-15);  // no curves: its class, whatever its name
  k.curves = {{{wl::CurveTable::KERNELS, "missing"},
               {wl::CurveTable::REFERENCE_KERNELS, "second"},  // in the other table: not this one
               {wl::CurveTable::REFERENCE_KERNELS, "third"}}};
  EXPECT_NEAR(c.kernel_seconds(k), 1e9 / 500e9, 1e-15);
  k.curves[1].table = wl::CurveTable::KERNELS;
  EXPECT_NEAR(c.kernel_seconds(k), 1e9 / 1500e9, 1e-15);
  k.curves = {};
  k.generic = wl::KernelClass::SOFTMAX;  // not calibrated here: the copy's
  EXPECT_NEAR(c.kernel_seconds(k), 1e9 / 3000e9, 1e-15);
  EXPECT_THROW(wl::torch_kernel("torch:not_a_kernel", 1), std::invalid_argument);
}

// The trainsim reference's own kernels ("ref:<class>") are priced from calibration.reference_kernels
// when the profile has the class, else as the closest generic kernel; other stacks never see it.
TEST(CostModel, ReferenceKernelsUseTheirOwnCalibratedClass) {
  hw::ClusterProfile p = calibrated();
  p.calibration.kernels.push_back({"softmax", 1, {{1e6, 2000}, {1e9, 4000}}});
  const CostModel generic(p, wl::Numerics::BF16_MIXED, {});
  p.calibration.reference_kernels = {{"causal_softmax_fwd", 1, {{1e6, 500}, {1e9, 1000}}}};
  const CostModel own(p, wl::Numerics::BF16_MIXED, {});
  EXPECT_NEAR(own.kernel_seconds(reference(wl::ReferenceKernel::CAUSAL_SOFTMAX_FWD, 1e9)), 1e9 / 1000e9, 1e-15);
  EXPECT_NEAR(own.kernel_seconds(reference(wl::ReferenceKernel::CAUSAL_SOFTMAX_FWD, std::sqrt(1e6 * 1e9))), std::sqrt(1e15) / 750e9, 1e-15);
  EXPECT_NEAR(generic.kernel_seconds(reference(wl::ReferenceKernel::CAUSAL_SOFTMAX_FWD, 1e9)), 1e9 / 4000e9, 1e-15);  // no class: softmax
  EXPECT_NEAR(own.kernel_seconds(reference(wl::ReferenceKernel::CAUSAL_SOFTMAX_BWD, 1e9)), 1e9 / 4000e9, 1e-15);  // class not measured
  EXPECT_NEAR(own.kernel_seconds({"softmax", 1e9, true, wl::KernelClass::SOFTMAX}), 1e9 / 4000e9, 1e-15);  // PyTorch stacks' softmax
  EXPECT_NEAR(own.kernel_seconds(reference(wl::ReferenceKernel::SPLIT_QKV, 1e9)), 1e9 / 3000e9, 1e-15);  // a transpose: copy
  // The table is named among the assumptions of the reference stack only.
  const wl::TrainingStack reference{wl::StackKind::TRAINSIM_REFERENCE};
  const CostModel own_reference(p, wl::Numerics::BF16_MIXED, reference);
  p.calibration.reference_kernels.clear();
  const CostModel generic_reference(p, wl::Numerics::BF16_MIXED, reference);
  EXPECT_FALSE(own_reference.assumptions() == generic_reference.assumptions());
  EXPECT_EQ(own.assumptions(), generic.assumptions());
}

// A PyTorch kernel is priced from its own "torch_<name>" curve; a layer's kernels calibrated in their
// layouts (calibrate/scripts/torch_layer_kernels.py) fall back, in a profile without those curves,
// to the plain kernel of the same traffic, and that to our own closest kernel.
TEST(CostModel, LayerKernelsFallBackToThePlainPyTorchKernelOfTheirTraffic) {
  hw::ClusterProfile p = calibrated();
  p.calibration.kernels.push_back({"torch_add_fp32", 1, {{1e6, 3500}, {1e9, 3500}}});
  p.calibration.kernels.push_back({"torch_copy_fp32", 1, {{1e6, 3800}, {1e9, 3800}}});
  p.calibration.kernels.push_back({"torch_rotary_fwd_bf16", 1, {{1e6, 1200}, {1e9, 1200}}});
  const CostModel plain(p, wl::Numerics::BF16_MIXED, {});
  EXPECT_NEAR(plain.kernel_seconds(wl::torch_kernel("torch:add_fp32_bf16", 1e9)), 1e9 / 3500e9, 1e-15);
  EXPECT_NEAR(plain.kernel_seconds(wl::torch_kernel("torch:bias_grad_bf16", 1e9)), 1e9 / 3800e9, 1e-15);
  EXPECT_NEAR(plain.kernel_seconds(wl::torch_kernel("torch:split_cat_bf16", 1e9)), 1e9 / 3800e9, 1e-15);
  EXPECT_NEAR(plain.kernel_seconds(wl::torch_kernel("torch:mul_scalar_fp32", 1e9)), 1e9 / 3800e9, 1e-15);  // DDP's scaling into buckets
  EXPECT_NEAR(plain.kernel_seconds(wl::torch_kernel("torch:rotary_split_fwd_bf16", 1e9)), 1e9 / 1200e9, 1e-15);
  EXPECT_NEAR(plain.kernel_seconds(wl::torch_kernel("torch:swiglu_split_fwd_bf16", 1e9)), 1e9 / 3000e9, 1e-15);  // no plain curve: copy
  // SwiGLU's backward: the contiguous forward-and-backward curve where the split forward's is not
  // measured; where it is, its rate per byte.
  EXPECT_NEAR(plain.kernel_seconds(wl::torch_kernel("torch:swiglu_split_bwd_bf16", 1e9)), 1e9 / 3000e9, 1e-15);  // neither: copy
  p.calibration.kernels.push_back({"torch_swiglu_fwd_bwd_bf16", 1, {{1e6, 1600}, {1e9, 1600}}});
  p.calibration.kernels.push_back({"torch_swiglu_fwd_bf16", 1, {{1e6, 2400}, {1e9, 2400}}});
  const CostModel contiguous(p, wl::Numerics::BF16_MIXED, {});
  EXPECT_NEAR(contiguous.kernel_seconds(wl::torch_kernel("torch:swiglu_split_bwd_bf16", 1e9)), 1e9 / 1600e9, 1e-15);
  EXPECT_NEAR(contiguous.kernel_seconds(wl::torch_kernel("torch:swiglu_split_fwd_bf16", 1e9)), 1e9 / 2400e9, 1e-15);
  p.calibration.kernels.push_back({"torch_swiglu_split_fwd_bf16", 1, {{1e6, 1100}, {1e9, 1100}}});
  p.calibration.kernels.push_back({"torch_add_fp32_bf16", 1, {{1e6, 2500}, {1e9, 2500}}});
  p.calibration.kernels.push_back({"torch_bias_grad_bf16", 1, {{1e6, 200}, {1e9, 4000}}});
  const CostModel split(p, wl::Numerics::BF16_MIXED, {});
  EXPECT_NEAR(split.kernel_seconds(wl::torch_kernel("torch:add_fp32_bf16", 1e9)), 1e9 / 2500e9, 1e-15);
  EXPECT_NEAR(split.kernel_seconds(wl::torch_kernel("torch:bias_grad_bf16", std::sqrt(1e6 * 1e9))), std::sqrt(1e15) / 2100e9, 1e-15);
  EXPECT_NEAR(split.kernel_seconds(wl::torch_kernel("torch:swiglu_split_bwd_bf16", 1e9)), 1e9 / 1100e9, 1e-15);
}

// The GPU's gap between queued kernels: one gpu_kernel_us a launch the pass counts beyond the
// launches its costed kernel entries stand for (each such entry's block-timed curve holds one gap
// already; the GEMM and flash tables, profiler durations, hold none), counted apart from the kernel
// classes; nothing where the pass counts no launches, the profile measured no gap, or the entries
// account for every launch.
TEST(CostModel, KernelsQueuedBackToBackWaitTheCalibratedGapEach) {
  const hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  ASSERT_TRUE(p.calibration.host_dispatch && p.calibration.host_dispatch->gpu_kernel_us);
  EXPECT_DOUBLE_EQ(*p.calibration.host_dispatch->gpu_kernel_us, 1.629);  // trainsim-calibrate's host_dispatch part
  const CostModel c(p, wl::Numerics::BF16_MIXED, {});
  wl::PassCost pass;
  pass.gemms.push_back({"qkv", 2048, 3072, 1024});
  for (int i = 0; i < 5; ++i) pass.kernels.push_back(wl::torch_kernel("torch:add_fp32", 1e8));
  const double without = c.pass_seconds(pass);
  EXPECT_EQ(c.launch_gap_seconds(pass), 0);
  pass.launches = 30;
  EXPECT_NEAR(c.launch_gap_seconds(pass), 25 * 1.629e-6, 1e-15);
  EXPECT_NEAR(c.pass_seconds(pass) - without, 25 * 1.629e-6, 1e-12);
  EXPECT_NEAR(c.pass_classes(pass).gaps, 25 * 1.629e-6, 1e-15);
  pass.launches = 3;
  EXPECT_EQ(c.launch_gap_seconds(pass), 0);
  pass.launches = 30;
  hw::ClusterProfile no_gap = p;
  no_gap.calibration.host_dispatch->gpu_kernel_us.reset();
  EXPECT_EQ(CostModel(no_gap, wl::Numerics::BF16_MIXED, {}).launch_gap_seconds(pass), 0);
}

// Every kernel a PyTorch stack's layer, head and embedding launch has its own curve in the calibrated
// H200 profile (or, for SwiGLU's backward, the curve it is meant to take): a misspelt name would fall
// back to another kernel's rate without a word.
TEST(CostModel, EveryPyTorchKernelOfALayerHasItsCurveInTheCalibratedProfile) {
  const hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  auto has_curve = [&](const std::string& what) {
    for (const auto& c : p.calibration.kernels) {
      if (c.what == what) return true;
    }
    return false;
  };
  const wl::ModelSpec gpt = wl::builtin_model("gpt2-1.5b");
  const wl::ModelSpec llama = wl::load_model_file(
      test::source_path("reports/validation/measured/llama-h200x2/h200x1_single_llama_L16-h4096_mb1x2.model.json"));
  int checked = 0;
  for (const wl::ModelSpec* m : {&gpt, &llama}) {
    for (wl::StackKind kind : {wl::StackKind::PYTORCH, wl::StackKind::PYTORCH_FSDP}) {
      wl::Strategy s;
      s.micro_batch = 1;
      s.global_batch = 2;
      s.seq = 2048;
      s.zero_stage = kind == wl::StackKind::PYTORCH_FSDP ? 3 : 0;
      s.stack.kind = kind;
      s.recompute = wl::Recompute::FULL;
      std::vector<wl::PassCost> passes{wl::torch_recompute_cost(*m, s)};
      for (const wl::LayerCost& c : {wl::torch_layer_cost(*m, s), wl::torch_output_cost(*m, s), wl::torch_embedding_cost(*m, s)}) {
        passes.push_back(c.forward);
        passes.push_back(c.backward);
      }
      for (const wl::PassCost& pass : passes) {
        for (const wl::MemoryKernel& k : pass.kernels) {
          const std::string name = k.name;
          ASSERT_EQ(name.rfind("torch:", 0), 0U) << name;
          const std::string curve = name == "torch:swiglu_split_bwd_bf16" ? "torch_swiglu_split_fwd_bf16" : "torch_" + name.substr(6);
          EXPECT_TRUE(has_curve(curve)) << name << " has no curve " << curve << " in h200x4-measured";
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 60);
}

// The reference's Adam (ref_kernels.cu, adam_step) moves 30 bytes per parameter with its bf16 copy
// (fp32 master, moments and gradient read; master, moments written) and 28 without (ZeRO-3 keeps
// none), at the rate of its own class; the generic replay's 28 bytes (a 16-bit gradient) at copy.
TEST(CostModel, ReferenceAdamIsItsOwnKernelAtItsOwnBytes) {
  hw::ClusterProfile p = calibrated();
  p.calibration.reference_kernels = {{"adam", 1, {{1e6, 2000}, {1e12, 2000}}}};
  const CostModel c(p, wl::Numerics::BF16_MIXED, {});
  EXPECT_NEAR(c.reference_adam_seconds(1e9, true), 30e9 / 2000e9, 1e-15);
  EXPECT_NEAR(c.reference_adam_seconds(1e9, false), 28e9 / 2000e9, 1e-15);
  EXPECT_NEAR(c.gpu_adam_seconds(1e9, wl::Numerics::BF16_MIXED), 28e9 / 3000e9, 1e-15);
  // Without the class: the copy curve, at the reference's bytes.
  const CostModel generic(calibrated(), wl::Numerics::BF16_MIXED, {});
  EXPECT_NEAR(generic.reference_adam_seconds(1e9, true), 30e9 / 3000e9, 1e-15);
}

// The stack names every launch of the classes: a reference layer on the single-GPU row costs the
// table's rates for them, all of them (a table ignored, or a launch left on a generic name, fails).
// The classes' bytes worked by hand from ref_model.cpp's launches and reference_kernels.hpp's bytes
// per launch, T = 4 x 2048 tokens, h = 1024, FFN 4h, b a s^2 = 4 x 16 x 2048^2 scores:
//   forward: two LayerNorms 2 x 6Th, the QKV split 18Th, the head merge 6Th (36Th); the causal
//     softmax (4/2 + 2) b a s^2 = 4 b a s^2;
//   backward: two fp32 column sums 2 x 4Th, bf16 ones over [T, 4h] and [T, 3h] 2 x 4Th + 2 x 3Th, two
//     LayerNorms' parameter and input passes 2 x (8 + 16)Th, the head split 6Th, the QKV gradient's
//     merge 18Th (94Th); the softmax's backward (2/2 + 4/2 + 2) b a s^2 = 5 b a s^2.
// Every other kernel and every GEMM costs the same in both profiles; the generic one prices the
// classes at its copy curve, flat at 3000 GB/s, the other at the table's 100 GB/s.
TEST(CostModel, ReferenceLayerIsPricedFromTheTableClassByClass) {
  const wl::ModelSpec m = wl::load_model_file(std::string(TRAINSIM_SOURCE_DIR) +
                                              "/reports/validation/reference/h200x2/h200x1_ref-single_L24-h1024_mb4x2.model.json");
  wl::Strategy s;
  s.micro_batch = 4;
  s.global_batch = 8;
  s.seq = 2048;
  s.stack.kind = wl::StackKind::TRAINSIM_REFERENCE;
  const wl::LayerCost c = wl::reference_layer_cost(m, s);
  hw::ClusterProfile p = calibrated();
  p.calibration.kernels = {{"copy", 1, {{1e3, 3000}, {1e12, 3000}}}};
  const CostModel generic(p, wl::Numerics::BF16_MIXED, {});
  for (std::string_view what : hw::REFERENCE_KERNEL_CLASSES) {
    p.calibration.reference_kernels.push_back({std::string(what), 1, {{1e3, 100}, {1e12, 100}}});
  }
  const CostModel own(p, wl::Numerics::BF16_MIXED, {});
  const double Th = 4 * 2048.0 * 1024, scores = 4 * 16 * 2048.0 * 2048;
  const double forward_bytes = 36 * Th + 4 * scores, backward_bytes = 94 * Th + 5 * scores;
  const double per_byte = 1 / 100e9 - 1 / 3000e9;
  EXPECT_NEAR(own.pass_seconds(c.forward) - generic.pass_seconds(c.forward), forward_bytes * per_byte, 1e-12);
  EXPECT_NEAR(own.pass_seconds(c.backward) - generic.pass_seconds(c.backward), backward_bytes * per_byte, 1e-12);
}

TEST(CostModel, MissingPrecisionIsRefused) {
  EXPECT_THROW(CostModel(hw::builtin_profile("dgx2"), wl::Numerics::BF16_MIXED, {}), std::invalid_argument);
}

TEST(CostModel, ReplayHonoursTheCalibratedBusBandwidth) {
  // A ring all-reduce over 4 NVSwitch GPUs (450 GB/s links) capped at a measured 100 GB/s bus
  // bandwidth: 2(n-1) latency steps plus 2(n-1)/n S at 100 GB/s.
  const hw::ClusterProfile p = calibrated();
  const double S = 1e9;
  const std::string out = run_isolated([&] {
    PlatformSpec spec;
    for (int g = 0; g < 4; ++g) spec.gpus.push_back({0, g, {}});
    spec.rings = {RingSpec{{{{0, 0}, {0, 1}, {0, 2}, {0, 3}}}, false}};
    Platform platform(p, spec);
    GraphBuilder b(4);
    Op op;
    op.kind = OpKind::COLLECTIVE;
    op.stream = Stream::COMM;
    op.participants = {0, 1, 2, 3};
    op.ring = 0;
    op.group_size = 4;
    op.latency_s = ring_latency_s(p, ring_steps(CollectiveKind::ALL_REDUCE, 4), 4, 1);
    op.bytes = S;
    b.add(op);
    RateCaps caps;
    caps.per_op = {CostModel(p, wl::Numerics::BF16_MIXED, {}).collective_cap(CollectiveKind::ALL_REDUCE, 4, S)};
    return fmt::format("{:.17g}", replay(b.graph(), platform, caps).makespan);
  });
  const double expected = 6 * 2e-6 + 1.5 * S / 100e9;
  EXPECT_NEAR(std::stod(out), expected, 1e-6 * expected);
}

}  // namespace
}  // namespace trainsim::sim
