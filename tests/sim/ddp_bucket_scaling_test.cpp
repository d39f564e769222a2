// DDP's reducer writes each gradient, scaled by 1 / world size, into its bucket before the bucket's
// all-reduce (workloads/stacks/training_stacks.md, "DDP"): in the rows' traces one fp32 elementwise kernel
// a parameter tensor on the compute stream in the synchronizing micro-batch (340, 12.1 ms, for the
// 28-layer GPT at hidden 4096, 5.85 B parameters, of reports/validation/measured/h200x2/
// h200x2_ddp_L28-h4096_mb1x2; none in its single-GPU twin). The replay runs it as one compute kernel per bucket, reading and writing the
// bucket's bytes, that the bucket's all-reduce waits for; FSDP2 reduces in its reduce-scatter.
//
// The expected buckets follow PyTorch's rule, worked by hand here: DistributedDataParallel's
// bucket_cap_mb defaults to 25 and becomes int(bucket_cap_mb * 1024 * 1024) bytes, 26,214,400
// (torch/nn/parallel/distributed.py, "default case (bucket cap is 25 MiB)", torch 2.x), and
// compute_bucket_assignment_by_size closes a bucket once `bucket.size >= bucket_size_limit`, filling
// in gradient-ready order (torch/csrc/distributed/c10d/reducer.cpp). The reducer's scaling is
// `at::mul_out(bucket_view, grad, 1 / div_factor)` a gradient (reducer.cpp,
// mark_variable_ready_dense): every fp32 gradient byte read once and written once. The replay fills
// buckets a layer at a time, and has no 1 MiB first bucket (reducer.cpp's kDefaultFirstBucketBytes
// after the first step's rebuild_buckets).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cost_model.hpp"
#include "data_parallel_program.hpp"
#include "memory_model.hpp"
#include "model_loader.hpp"
#include "model_params.hpp"
#include "profile_loader.hpp"

namespace trainsim::sim {
namespace {

struct Built {
  std::unique_ptr<hw::ClusterProfile> profile;
  std::unique_ptr<CostModel> costs;
  ProgramSet program;
};

// `m` on 2 data-parallel ranks of `p`, 2 micro-batches of one sequence of `seq` a step.
Built build(const hw::ClusterProfile& p, const wl::ModelSpec& m, wl::StackKind kind, int zero, std::int64_t seq) {
  wl::Strategy s;
  s.gpus = 2;
  s.dp = 2;
  s.zero_stage = zero;
  s.micro_batch = 1;
  s.global_batch = 4;
  s.seq = seq;
  s.stack.kind = kind;
  Built b;
  // The cost model keeps references to the profile: it lives as long as the program built here.
  b.profile = std::make_unique<hw::ClusterProfile>(p);
  b.costs = std::make_unique<CostModel>(*b.profile, m.numerics, s.stack);
  b.program = build_data_parallel_program(m, s, *b.costs, wl::estimate_memory(m, s, 4), 4);
  return b;
}

// The calibrated H200 profile with DDP's scaling kernel at a flat 2,000 GB/s, so that a bucket of
// B bytes scales in 2 B / 2e12 seconds.
hw::ClusterProfile flat_scaling_profile() {
  hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  p.calibration.kernels.push_back({"torch_mul_scalar_fp32", 1, {{1e3, 2000}, {1e12, 2000}}});
  return p;
}

struct Bucket {
  double bytes = 0;          // the all-reduce's
  double scale_seconds = 0;  // the scaling kernel it waits for
};

std::vector<Bucket> buckets(const ProgramSet& program) {
  const auto& ins = program.stages.at(0).instructions;
  std::vector<Bucket> out;
  for (const Instruction& in : ins) {
    if (std::string_view(in.name) != "reduce_grads") continue;
    if (in.after.size() != 1U) {
      ADD_FAILURE() << "reduce_grads waits for " << in.after.size() << " instructions, not its scaling alone";
      continue;
    }
    const Instruction& before = ins.at(static_cast<std::size_t>(in.after[0]));
    EXPECT_EQ(std::string_view(before.name), "scale_grads_into_bucket");
    out.push_back({in.bytes, before.seconds});
  }
  return out;
}

// GPT-2 1.5B (hidden 1600, FFN 6400, 48 layers, vocabulary 50257, 1024 positions, tied head), its
// fp32 gradients by hand: a layer holds 12 h^2 + 13 h = 30,740,800 parameters, 122,963,200 bytes
// (over the 25 MiB cap on its own); the final norm 2 h = 3,200 (12,800 bytes); the embeddings
// (50257 + 1024) x 1600 = 82,049,600 (328,198,400 bytes). In backward order the final norm and the
// last layer close the first bucket, every other layer one of its own, and the embeddings the last:
// 49 buckets, 6,230,444,800 bytes (4 x 1,557,611,200 parameters).
TEST(DdpBucketScaling, EachBucketIsScaledOnTheComputeStreamBeforeItsAllReduce) {
  const Built ddp = build(flat_scaling_profile(), wl::builtin_model("gpt2-1.5b"), wl::StackKind::PYTORCH_DDP, 0, 1024);
  int scalings = 0;
  for (const Instruction& in : ddp.program.stages.at(0).instructions) {
    if (std::string_view(in.name) != "scale_grads_into_bucket") continue;
    ++scalings;
    EXPECT_EQ(in.kind, InstrKind::COMPUTE);
    EXPECT_EQ(in.stream, Stream::COMPUTE);
    EXPECT_EQ(in.micro_batch, 1);               // the synchronizing (last) micro-batch only
    EXPECT_EQ(in.pass, ComputePass::BACKWARD);  // inside the backward call, as the reducer's hooks run
  }
  const std::vector<Bucket> got = buckets(ddp.program);
  EXPECT_EQ(scalings, static_cast<int>(got.size()));
  std::vector<double> expected(49, 122963200.0);
  expected.front() = 122963200.0 + 12800.0;
  expected.back() = 328198400.0;
  ASSERT_EQ(got.size(), expected.size());
  double total = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_DOUBLE_EQ(got[i].bytes, expected[i]) << "bucket " << i;
    EXPECT_NEAR(got[i].scale_seconds, 2 * expected[i] / 2e12, 1e-15) << "bucket " << i;
    total += got[i].bytes;
  }
  EXPECT_DOUBLE_EQ(total, 6230444800.0);
  for (const auto& [kind, zero] : {std::pair{wl::StackKind::PYTORCH_FSDP, 3}, std::pair{wl::StackKind::DEEPSPEED, 0},
                                   std::pair{wl::StackKind::IDEALIZED, 0}}) {
    const Built other = build(flat_scaling_profile(), wl::builtin_model("gpt2-1.5b"), kind, zero, 1024);
    for (const Instruction& in : other.program.stages.at(0).instructions) {
      EXPECT_NE(std::string_view(in.name), "scale_grads_into_bucket") << wl::to_string(kind);
    }
  }
}

// GPT-2 1.5B narrowed to hidden 512 (FFN 2048, 8 heads, 12 layers), where the cap decides: a layer
// holds 12 x 512^2 + 13 x 512 = 3,152,384 parameters, 12,609,536 fp32 bytes; two layers and the
// final norm (4,096 bytes) hold 25,223,168 bytes, under 26,214,400, so a 25 MiB bucket takes a
// third (37,832,704 bytes), and so do the next three of three layers (37,828,608 each); the
// embeddings, (50257 + 1024) x 512 x 4 = 105,023,488 bytes, are the last. A cap of 25 MB (25e6
// bytes) would close every bucket at two layers: seven buckets.
TEST(DdpBucketScaling, BucketsCloseAtTwentyFiveMebibytes) {
  wl::ModelSpec m = wl::builtin_model("gpt2-1.5b");
  m.layers = 12;
  m.hidden = 512;
  m.heads = 8;
  m.kv_heads = 8;
  m.ffn_hidden = 2048;
  const Built ddp = build(flat_scaling_profile(), m, wl::StackKind::PYTORCH_DDP, 0, 1024);
  const std::vector<Bucket> got = buckets(ddp.program);
  const std::vector<double> expected = {37832704.0, 37828608.0, 37828608.0, 37828608.0, 105023488.0};
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_DOUBLE_EQ(got[i].bytes, expected[i]) << "bucket " << i;
}

// The scaling of the measured row itself, on the profile `trainsim validate` costs it on: its
// trace (reports/validation/measured/h200x2/h200x2_ddp_L28-h4096_mb1x2.trace.json.gz, rank 0) holds
// 340 `AUnaryFunctor<float, float, float, MulFunctor<float>>` kernels on the compute stream, one a
// parameter tensor, 12,048.7 us in all. The replay's buckets scale the same 4 x 5,853,077,504
// bytes; it is held to 10% of the trace.
TEST(DdpBucketScaling, ScalingTimeIsTheMeasuredRowsTrace) {
  const wl::ModelSpec m = wl::load_model_file(std::string(TRAINSIM_SOURCE_DIR) +
                                              "/reports/validation/measured/h200x2/h200x2_ddp_L28-h4096_mb1x2.model.json");
  const Built ddp = build(hw::builtin_profile("h200x4-measured"), m, wl::StackKind::PYTORCH_DDP, 0, 2048);
  double bytes = 0, seconds = 0;
  for (const Bucket& b : buckets(ddp.program)) {
    bytes += b.bytes;
    seconds += b.scale_seconds;
  }
  EXPECT_DOUBLE_EQ(bytes, 4.0 * 5853077504.0);
  constexpr double TRACE_S = 12048.7e-6;
  EXPECT_NEAR(seconds, TRACE_S, 0.10 * TRACE_S);
}

}  // namespace
}  // namespace trainsim::sim
