// DDP's reducer writes each gradient, scaled by 1 / world size, into its bucket before the bucket's
// all-reduce (workloads/training_stacks.md, "DDP"): in the rows' traces one fp32 elementwise kernel
// a parameter tensor on the compute stream in the synchronizing micro-batch (340, 12.1 ms, for the
// 28-layer GPT at hidden 4096, 5.85 B parameters, of reports/validation/measured/h200x2/
// h200x2_ddp_L28-h4096_mb1x2; none in its single-GPU twin). The replay runs it as one compute kernel per bucket, reading and writing the
// bucket's bytes, that the bucket's all-reduce waits for; FSDP2 reduces in its reduce-scatter.
#include <gtest/gtest.h>

#include <memory>
#include <string_view>
#include <utility>

#include "cost_model.hpp"
#include "data_parallel_program.hpp"
#include "memory_model.hpp"
#include "model_loader.hpp"
#include "model_params.hpp"
#include "profile_loader.hpp"

namespace trainsim::sim {
namespace {

struct Built {
  std::unique_ptr<CostModel> costs;
  ProgramSet program;
};

// gpt2-1.5b on 2 data-parallel ranks of the calibrated H200 profile, 2 micro-batches a step.
Built build(wl::StackKind kind, int zero) {
  // The cost model keeps references to the profile: it outlives every program built here.
  static const hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  static const wl::ModelSpec m = wl::builtin_model("gpt2-1.5b");
  wl::Strategy s;
  s.gpus = 2;
  s.dp = 2;
  s.zero_stage = zero;
  s.micro_batch = 1;
  s.global_batch = 4;
  s.seq = 1024;
  s.stack.kind = kind;
  Built b;
  b.costs = std::make_unique<CostModel>(p, m.numerics, s.stack);
  b.program = build_data_parallel_program(m, s, *b.costs, wl::estimate_memory(m, s, 4), 4);
  return b;
}

TEST(DdpBucketScaling, EachBucketIsScaledOnTheComputeStreamBeforeItsAllReduce) {
  const Built ddp = build(wl::StackKind::PYTORCH_DDP, 0);
  const auto& ins = ddp.program.stages.at(0).instructions;
  int reduces = 0, scalings = 0;
  double reduced_bytes = 0;
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const Instruction& in = ins[i];
    if (std::string_view(in.name) == "scale_grads_into_bucket") {
      ++scalings;
      EXPECT_EQ(in.kind, InstrKind::COMPUTE);
      EXPECT_EQ(in.stream, Stream::COMPUTE);
      EXPECT_EQ(in.micro_batch, 1);  // the synchronizing (last) micro-batch only
      EXPECT_EQ(in.pass, ComputePass::BACKWARD);  // inside the backward call, as the reducer's hooks run
    }
    if (std::string_view(in.name) != "reduce_grads") continue;
    ++reduces;
    reduced_bytes += in.bytes;
    ASSERT_EQ(in.after.size(), 1U);
    const Instruction& before = ins.at(static_cast<std::size_t>(in.after[0]));
    EXPECT_EQ(std::string_view(before.name), "scale_grads_into_bucket");
    // Read and written once: twice the bucket's fp32 bytes at an elementwise kernel's rate.
    EXPECT_DOUBLE_EQ(before.seconds, ddp.costs->kernel_seconds({"torch:mul_scalar_fp32", 2 * in.bytes}));
  }
  EXPECT_GT(reduces, 1);
  EXPECT_EQ(scalings, reduces);
  // The buckets hold every gradient once, in fp32 (autocast's gradients).
  EXPECT_NEAR(reduced_bytes, 4.0 * wl::total_params(wl::builtin_model("gpt2-1.5b")), 0.01 * reduced_bytes);
  for (const auto& [kind, zero] : {std::pair{wl::StackKind::PYTORCH_FSDP, 3}, std::pair{wl::StackKind::DEEPSPEED, 0},
                                   std::pair{wl::StackKind::IDEALIZED, 0}}) {
    const Built other = build(kind, zero);
    for (const Instruction& in : other.program.stages.at(0).instructions) {
      EXPECT_NE(std::string_view(in.name), "scale_grads_into_bucket") << wl::to_string(kind);
    }
  }
}

}  // namespace
}  // namespace trainsim::sim
