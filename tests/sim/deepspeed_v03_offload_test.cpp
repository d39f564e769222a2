// DeepSpeed 0.3.0's ZeRO-Offload path as the data-parallel builder writes it (training_stacks.md,
// "DeepSpeed 0.3"; workloads/stacks/deepspeed_v03_stack.cpp cites stage2.py and cpu_adam.cpp at
// v0.3.0): GPT-2 1.5B on one DGX-2 GPU, ZeRO-2 with the optimizer on the CPU, three micro-batches.
// With one rank the partition is the whole model, so every byte count is a multiple of the
// parameters CPU-Adam updates (P), by the dtype the code copies in.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "data_parallel_program.hpp"
#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "strategy_input.hpp"

namespace trainsim::sim {
namespace {

ProgramSet offload_program(wl::StackKind kind, int dp = 1, bool* ranks_differ = nullptr) {
  const hw::ClusterProfile p = hw::builtin_profile("dgx2");
  wl::StrategyInput in;
  in.gpus.set(dp, "t");
  in.dp.set(dp, "t");
  in.zero.set(2, "t");
  in.offload_optimizer.set(wl::OffloadTarget::CPU, "t");
  in.micro_batch.set(1, "t");
  in.grad_accum.set(3, "t");
  in.precision.set(wl::Numerics::FP16_MIXED, "t");
  wl::TrainingStack stack;
  stack.kind = kind;
  in.stack.set(stack, "t");
  const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model("gpt2-1.5b"), {p.gpus_per_node(), p.node_count, p.name});
  const CostModel costs(p, r.model.numerics, r.strategy.stack);
  if (ranks_differ != nullptr) *ranks_differ = data_parallel_ranks_differ(r.model, r.strategy);
  return build_data_parallel_program(r.model, r.strategy, costs, wl::estimate_memory(r.model, r.strategy, p.gpus_per_node()),
                                     p.gpus_per_node());
}

struct Seen {
  std::map<std::string, double> bytes;     // by instruction name
  std::map<std::string, int> count;
  std::vector<double> adam_tiles;          // cpu_adam's parameters, in order
  double check_seconds = 0;                // grad_norm_overflow_cast kernels
  double adam_params = 0;
  int offloads = 0, computes_after_offload = 0;
};

Seen look(const ProgramSet& set) {
  Seen s;
  const auto& ins = set.stages.at(0).instructions;
  std::vector<char> offload(ins.size(), 0);
  for (std::size_t k = 0; k < ins.size(); ++k) {
    const Instruction& i = ins[k];
    const std::string name(i.name);
    s.bytes[name] += i.bytes;
    ++s.count[name];
    if (name == "grad_norm_overflow_cast") s.check_seconds += i.seconds;
    if (name == "cpu_adam") {
      s.adam_tiles.push_back(i.params);
      s.adam_params += i.params;
    }
    // The last copy of a bucket's chain: what the hook waits for.
    if (name == "d2h_grads" || name == "d2h_accumulated_grads") {
      offload[k] = 1;
      ++s.offloads;
    }
    if (i.kind == InstrKind::COMPUTE && i.category == Category::COMPUTE) {
      for (int a : i.after) s.computes_after_offload += offload[static_cast<std::size_t>(a)];
    }
  }
  return s;
}

// stage2.py:869-881 (.float(), then the copy into the fp32 partition): 4 bytes an element at the
// boundary, the last micro-batch. Without the mechanism a rank copies its 16-bit shard: 2 P.
TEST(DeepSpeedV03Offload, BoundaryCopiesTheGradientPartitionInFp32) {
  Seen s = look(offload_program(wl::StackKind::DEEPSPEED_0_3));
  ASSERT_GT(s.adam_params, 1e9);
  EXPECT_DOUBLE_EQ(s.bytes["d2h_grads"], 4 * s.adam_params);
}

// Before the copy, on the reduction stream: the norm in double (2 + 8 + 8 bytes an element), the
// overflow test (2 + 4 + 4) and the fp32 cast (2 + 4), at dgx2's uncalibrated 80% of HBM.
TEST(DeepSpeedV03Offload, BoundaryChecksAndCastsTheGradientOnTheGpu) {
  Seen s = look(offload_program(wl::StackKind::DEEPSPEED_0_3));
  const double hbm_Bps = hw::builtin_profile("dgx2").gpu.hbm_GBps * 1e9;
  EXPECT_NEAR(s.check_seconds, 34 * s.adam_params / (0.8 * hbm_Bps), 1e-9);
  EXPECT_EQ(look(offload_program(wl::StackKind::DEEPSPEED)).check_seconds, 0.0);
}

// stage2.py:801-824 (async_accumulate_grad_in_cpu_via_gpu): micro-batches 0 and 1 copy the fp16
// gradient out (2 x 2 P), micro-batches 1 and 2 bring the accumulator back (2 x 2 P).
TEST(DeepSpeedV03Offload, AccumulatesThroughAPinnedFp16BufferEveryMicroBatch) {
  Seen s = look(offload_program(wl::StackKind::DEEPSPEED_0_3));
  EXPECT_DOUBLE_EQ(s.bytes["d2h_accumulated_grads"], 2 * 2 * s.adam_params);
  EXPECT_DOUBLE_EQ(s.bytes["h2d_accumulated_grads"], 2 * 2 * s.adam_params);
  EXPECT_EQ(s.count["h2d_accumulated_grads"], 2 * s.count["d2h_grads"]) << "micro-batches 1 and 2, per bucket";
}

// stage2.py:683-686 and :1556-1563: the hook holds the host until the bucket's copies are through,
// so the compute after each bucket's chain waits for it (every chain but the step's last, which
// the optimizer step waits for).
TEST(DeepSpeedV03Offload, TheNextComputeWaitsForTheBucketsCopies) {
  Seen s = look(offload_program(wl::StackKind::DEEPSPEED_0_3));
  ASSERT_GT(s.offloads, 3);
  EXPECT_EQ(s.computes_after_offload, s.offloads - 1);
  Seen v16 = look(offload_program(wl::StackKind::DEEPSPEED));
  EXPECT_EQ(v16.computes_after_offload, 0) << "v0.16.5's copies overlap the backward";
}

// cpu_adam.cpp:336-557 with cpu_adam.h:23 (TILE = 2^30): 1.5B parameters are two tiles, 2^30 and
// the rest, each followed by its kernel reading 4 bytes a parameter from pinned memory.
TEST(DeepSpeedV03Offload, CpuAdamStreamsFp32ParametersBackTileByTile) {
  Seen s = look(offload_program(wl::StackKind::DEEPSPEED_0_3));
  ASSERT_EQ(s.adam_tiles.size(), 2u);
  EXPECT_DOUBLE_EQ(s.adam_tiles[0], 1073741824.0);
  EXPECT_DOUBLE_EQ(s.adam_tiles[1], s.adam_params - 1073741824.0);
  EXPECT_EQ(s.count["h2d_updated_params"], 2);
  EXPECT_DOUBLE_EQ(s.bytes["h2d_updated_params"], 4 * s.adam_params);
  Seen v16 = look(offload_program(wl::StackKind::DEEPSPEED));
  EXPECT_EQ(v16.adam_tiles.size(), 1u);
  EXPECT_DOUBLE_EQ(v16.bytes["h2d_updated_params"], 2 * v16.adam_params);
}

// stage2.py:1139-1157 and :950-983: on 4 ranks each holds a contiguous quarter of the flattened
// parameters, and a bucket's fp32 copies are made by the ranks whose quarter it overlaps, each its
// overlap: over the step each rank copies 4 bytes x P / 4, every element once, and a bucket of
// reduce_bucket_size (5e8, under a quarter of 1.5B) touches at most two ranks. Without the
// mechanism every rank copies 1/4 of every bucket and the ranks are folded.
TEST(DeepSpeedV03Offload, BucketCopiesFallToThePartitionOwners) {
  bool differ = false;
  const ProgramSet set = offload_program(wl::StackKind::DEEPSPEED_0_3, 4, &differ);
  EXPECT_TRUE(differ) << "a program whose copies differ by rank is replayed unfolded";
  const Program& prog = set.stages.at(0);
  double params = 0;
  for (const Instruction& i : prog.instructions) params += std::string_view(i.name) == "cpu_adam" ? i.params : 0.0;
  std::vector<double> per_rank(4, 0.0);
  int buckets = 0;
  for (const Instruction& i : prog.instructions) {
    if (std::string_view(i.name) != "d2h_grads" || i.step != 0) continue;
    ASSERT_GE(i.by_dp_rank, 0);
    const std::vector<double>& b = prog.by_dp_rank.at(static_cast<std::size_t>(i.by_dp_rank));
    ASSERT_EQ(b.size(), 4u);
    int owners = 0;
    for (std::size_t r = 0; r < 4; ++r) {
      per_rank[r] += b[r];
      owners += b[r] > 0 ? 1 : 0;
    }
    EXPECT_LE(owners, 2);
    ++buckets;
  }
  ASSERT_GT(buckets, 2);
  for (double bytes : per_rank) EXPECT_NEAR(bytes, 4 * params, 4 * 4.0) << "4 bytes x the rank's quarter (params is one quarter)";
  bool v16_differ = true;
  offload_program(wl::StackKind::DEEPSPEED, 4, &v16_differ);
  EXPECT_FALSE(v16_differ);
}

}  // namespace
}  // namespace trainsim::sim
