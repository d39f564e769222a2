// FSDP2 CPU offload as the stack runs it (workloads/stacks/training_stacks.md, "FSDP2"): the program
// copies each reduced gradient shard parameter by parameter, the step's first micro-batch into
// pinned memory asynchronously, every later one into pageable memory with the host blocked until
// the CPU has added it (sim/program/data_parallel_program.cpp); the replay costs those copies at
// calibration.torch_offload's rates for the node's ranks copying at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "data_parallel_program.hpp"
#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
#include "strategy_input.hpp"

namespace trainsim::sim {
namespace {

constexpr int RANKS = 4;

struct OffloadRun {
  wl::ModelSpec model;
  wl::Strategy strategy;
  wl::MemoryEstimate memory;
};

OffloadRun fsdp_offload(const hw::ClusterProfile& p, int grad_accum) {
  wl::StrategyInput in;
  in.gpus.set(RANKS, "t");
  in.dp.set(RANKS, "t");
  in.zero.set(3, "t");
  in.offload_params.set(wl::OffloadTarget::CPU, "t");
  in.offload_optimizer.set(wl::OffloadTarget::CPU, "t");
  in.micro_batch.set(1, "t");
  in.precision.set(wl::Numerics::BF16_MIXED, "t");
  in.grad_accum.set(grad_accum, "t");
  wl::TrainingStack stack;
  stack.kind = wl::StackKind::PYTORCH_FSDP;
  in.stack.set(stack, "t");
  const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model("gpt2-1.5b"), {p.gpus_per_node(), p.node_count, p.name});
  return {r.model, r.strategy, wl::estimate_memory(r.model, r.strategy, p.gpus_per_node())};
}

// GPT-2 1.5B's parameter tensors by hand (hidden 1600, FFN 6400, 48 layers, vocabulary 50257,
// 1024 positions, tied head): a layer's 12 are two norms' weight and bias (1,600 each), QKV
// (7,680,000 and 4,800), the output projection (2,560,000 and 1,600), the MLP's first (10,240,000 and
// 6,400) and second (10,240,000 and 1,600), 30,740,800 in all; then the token embedding (80,411,200),
// the positions (1,638,400) and the final norm (1,600 and 1,600): 580 tensors, 1,557,611,200
// parameters. Every tensor divides by 4 ranks, so one rank's fp32 shards hold 4 x 1,557,611,200 / 4
// bytes.
constexpr double SHARD_BYTES = 1557611200.0;
constexpr double TENSORS = 12 * 48 + 4;
constexpr double SHARD_PARAMS = SHARD_BYTES / 4;

// h200x4-measured with its curve `what` for 4 ranks replaced by a flat rate.
hw::ClusterProfile with_flat_rate(const char* what, double GBps) {
  hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  int replaced = 0;
  for (hw::BandwidthCurve& c : p.calibration.torch_offload->curves) {
    if (c.what != what || c.group_size != RANKS) continue;
    c.points = {{1e3, GBps}, {1e12, GBps}};
    ++replaced;
  }
  EXPECT_EQ(replaced, 1) << what;
  return p;
}

hw::ClusterProfile with_pageable_rate(double GBps) { return with_flat_rate("d2h_pageable", GBps); }

// The CPU adds each accumulating micro-batch's copied shards into the fp32 gradient at
// calibration.torch_offload's cpu_grad_add rate, here a flat 4 GB/s: 1,557,611,200 bytes in
// 0.3894028 s a micro-batch.
TEST(TorchOffloadProgram, AccumulatingMicroBatchesCopyPageableAndBlockTheHost) {
  const hw::ClusterProfile p = with_flat_rate("cpu_grad_add", 4);
  const OffloadRun s = fsdp_offload(p, 3);
  const CostModel costs(p, s.model.numerics, s.strategy.stack);
  const ProgramSet set = build_data_parallel_program(s.model, s.strategy, costs, s.memory, p.gpus_per_node());
  const Program& prog = set.stages.at(0);
  std::map<int, double> pinned, pageable, add_s;
  for (const Instruction& in : prog.instructions) {
    if (in.kind == InstrKind::COPY && std::string_view(in.name) == "d2h_grads") {
      EXPECT_EQ(in.copiers, RANKS);
      EXPECT_GT(in.piece_bytes, 0);
      EXPECT_EQ(std::fmod(in.bytes, in.piece_bytes), 0);  // whole tensors of one size
      (in.pageable ? pageable : pinned)[in.micro_batch] += in.bytes;
    }
    if (in.kind == InstrKind::HOST_COMPUTE && std::string_view(in.name) == "cpu_grad_add") {
      EXPECT_EQ(in.stream, Stream::HOST);  // the host waits for it
      add_s[in.micro_batch] += in.seconds;
    }
  }
  ASSERT_EQ(pinned.size(), 1u);
  EXPECT_NEAR(pinned[0], SHARD_BYTES, 1e-9 * SHARD_BYTES);
  ASSERT_EQ(pageable.size(), 2u);
  for (int mb : {1, 2}) {
    EXPECT_NEAR(pageable[mb], SHARD_BYTES, 1e-9 * SHARD_BYTES) << mb;
    EXPECT_NEAR(add_s[mb], 0.3894028, 1e-9) << mb;
  }
}

TEST(TorchOffloadProgram, OtherStacksKeepOneAsynchronousCopyPerBucket) {
  const hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  OffloadRun s = fsdp_offload(p, 2);
  s.strategy.stack = {};  // idealized: ZeRO-Offload's copies
  const CostModel costs(p, s.model.numerics, s.strategy.stack);
  const ProgramSet set = build_data_parallel_program(s.model, s.strategy, costs, s.memory, p.gpus_per_node());
  for (const Instruction& in : set.stages.at(0).instructions) {
    EXPECT_FALSE(in.kind == InstrKind::COPY && in.pageable) << in.name;
    EXPECT_NE(std::string_view(in.name), "cpu_grad_add");
  }
}

// FSDP2 copies a unit's fp32 shard to the GPU inside that unit's unshard and frees it, cast to
// bf16, before the all-gather runs (training_stacks.md, "FSDP2"; reports/validation/memory_peak/):
// each copy is issued with its all-gather, not one unit ahead as ZeRO-Infinity reads, and its
// staging is gone when the all-gather starts.
TEST(TorchOffloadProgram, ShardCopyBelongsToItsAllGather) {
  const hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  const OffloadRun s = fsdp_offload(p, 2);
  const CostModel costs(p, s.model.numerics, s.strategy.stack);
  const ProgramSet set = build_data_parallel_program(s.model, s.strategy, costs, s.memory, p.gpus_per_node());
  const std::vector<Instruction>& ins = set.stages.at(0).instructions;
  int gathers = 0;
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const Instruction& g = ins[i];
    if (std::string_view(g.name) != "gather_params") continue;
    for (int a : g.after) {
      const Instruction& f = ins[static_cast<std::size_t>(a)];
      if (std::string_view(f.name) != "h2d_params") continue;
      ++gathers;
      for (int b : f.after) {
        if (ins[static_cast<std::size_t>(b)].kind != InstrKind::COMPUTE) continue;  // the step's start
        EXPECT_NE(std::find(g.after.begin(), g.after.end(), b), g.after.end())
            << "the shard copy before instruction " << i << " waits for " << b << ", its all-gather does not";
      }
      bool released = false;
      for (const MemEffect& e : g.memory) {
        if (e.cls != MemClass::STAGING) continue;
        released = true;
        EXPECT_LT(e.bytes, 0);
        EXPECT_FALSE(e.at_end) << "instruction " << i << " frees the staged shard at its end";
      }
      EXPECT_TRUE(released);
    }
  }
  EXPECT_GT(gathers, 0);
}

// FSDP2 keeps no gradient buckets: a unit's unsharded bf16 gradients exist from its backward to
// its reduce-scatter, which copies them into a fresh fp32 input that the next unit's reduce-scatter
// (or the end of the backward) frees (training_stacks.md, "FSDP2"; at the measured peaks none of
// them is alive, reports/validation/memory_peak/). Nothing of the kind is resident, and what the
// backward allocates it frees within the micro-batch.
TEST(TorchOffloadProgram, Fsdp2ReduceScatterBuffersAreTransient) {
  const hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  for (const bool offload : {true, false}) {
    OffloadRun s = fsdp_offload(p, 2);
    if (!offload) {
      s.strategy.offload_params = s.strategy.offload_optimizer = wl::OffloadTarget::NONE;
      s.memory = wl::estimate_memory(s.model, s.strategy, p.gpus_per_node());
    }
    const CostModel costs(p, s.model.numerics, s.strategy.stack);
    const ProgramSet set = build_data_parallel_program(s.model, s.strategy, costs, s.memory, p.gpus_per_node());
    std::map<int, double> per_micro_batch;
    int reduces = 0;
    for (const Instruction& in : set.stages.at(0).instructions) {
      for (const MemEffect& e : in.memory) {
        if (e.cls != MemClass::BUCKETS) continue;
        EXPECT_NE(std::string_view(in.name), "model_states") << "offload " << offload;
        per_micro_batch[in.micro_batch] += e.bytes;
      }
      if (std::string_view(in.name) == "reduce_grads") ++reduces;
    }
    EXPECT_GT(reduces, 0);
    EXPECT_EQ(per_micro_batch.size(), 2u) << "offload " << offload;
    for (const auto& [mb, bytes] : per_micro_batch) EXPECT_NEAR(bytes, 0, 1) << "micro-batch " << mb << " offload " << offload;
  }
}

// The CPU optimizer's seconds in the program (one "cpu_adam" instruction a step).
double cpu_adam_seconds(const hw::ClusterProfile& p) {
  const OffloadRun s = fsdp_offload(p, 1);
  const CostModel costs(p, s.model.numerics, s.strategy.stack);
  double seconds = 0;
  int found = 0;
  const ProgramSet set = build_data_parallel_program(s.model, s.strategy, costs, s.memory, p.gpus_per_node());
  for (const Instruction& in : set.stages.at(0).instructions) {
    if (std::string_view(in.name) != "cpu_adam") continue;
    seconds += in.seconds;
    ++found;
  }
  EXPECT_EQ(found, 1);
  return seconds;
}

// The fused CPU AdamW steps its list one tensor at a time (calibrate/scripts/torch_offload_bench.py,
// `adam`): with seconds per tensor calibrated, each of the rank's tensors costs its time once. A
// flat 1 ms a tensor makes the step 1 ms per tensor of GPT-2 1.5B: 12 per layer (two norms of two,
// fused QKV and output projection with biases, two MLP matrices with biases), the token and
// position embeddings and the final norm's two (the tied head adds none).
TEST(TorchOffloadProgram, CpuAdamwIsCostedTensorByTensorWhereCalibratedSo) {
  hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  hw::CpuOptimizerRate* four = nullptr;
  for (hw::CpuOptimizerRate& r : p.calibration.torch_offload->adamw) {
    if (r.processes == RANKS) four = &r;
  }
  ASSERT_NE(four, nullptr);
  four->seconds_per_tensor = {{1, 1e-3}, {1e12, 1e-3}};
  EXPECT_NEAR(cpu_adam_seconds(p), TENSORS * 1e-3, 1e-12);

  // Two points on the line 1 ms + 1 ns per element, every tensor between them: each tensor costs
  // its point on that line, so the step is 1 ms a tensor plus 1 ns a parameter of the shard.
  four->seconds_per_tensor = {{1, 1e-3 + 1e-9}, {1e9, 1e-3 + 1.0}};
  EXPECT_NEAR(cpu_adam_seconds(p), TENSORS * 1e-3 + 1e-9 * SHARD_PARAMS, 1e-9);

  // One point: a tensor up to its size costs its time, a larger one its time per element. A layer's
  // shards: QKV 1,920,000 elements (3.84 ms), the MLP's two 2,560,000 (5.12 ms each), the 9 others
  // under 1e6 (2 ms each): 32.08 ms; the token embedding's 20,102,800 (40.2056 ms), the positions'
  // 409,600 and the final norm's two (2 ms each): 48 x 32.08 + 46.2056 = 1,586.0456 ms.
  four->seconds_per_tensor = {{1e6, 2e-3}};
  EXPECT_NEAR(cpu_adam_seconds(p), 1.5860456, 1e-9);

  // Without it, the shard's parameters at the calibrated rate.
  four->seconds_per_tensor.clear();
  EXPECT_NEAR(cpu_adam_seconds(p), SHARD_PARAMS / four->params_per_s_per_process, 1e-6);
}

// The replay runs every accumulating micro-batch's pageable copies on the step's critical path at
// the calibrated rate: halving the rate adds exactly their bytes once more; without accumulation
// (one micro-batch) the rate changes nothing.
TEST(TorchOffloadReplay, PageableCopiesRunAtTheCalibratedRate) {
  const OffloadRun two = fsdp_offload(with_pageable_rate(2), 2);
  const double slow = simulate(two.model, two.strategy, with_pageable_rate(1), two.memory).step_time_s;
  const double fast = simulate(two.model, two.strategy, with_pageable_rate(2), two.memory).step_time_s;
  const double expected = SHARD_BYTES / 1e9 - SHARD_BYTES / 2e9;
  EXPECT_NEAR(slow - fast, expected, 0.01 * expected) << "slow " << slow << " fast " << fast;

  const OffloadRun one = fsdp_offload(with_pageable_rate(2), 1);
  EXPECT_NEAR(simulate(one.model, one.strategy, with_pageable_rate(1), one.memory).step_time_s,
              simulate(one.model, one.strategy, with_pageable_rate(2), one.memory).step_time_s, 1e-9);
}

// The accumulating copies are replayed into resident pages; what it would cost were every page
// below glibc's 32 MiB mmap threshold fresh (workloads/stacks/training_stacks.md, "FSDP2") is said in a
// note, from the pageable curve itself. Here resident copies run at 10 GB/s and fresh ones
// (from 32 MiB up) at 1 GB/s, so a fresh page costs 0.9 ns a byte more; GPT-2 1.5B's token
// embedding shard (50257 x 1600 / 4 fp32, 80,411,200 bytes) faults anyway and is left out, every
// other shard is under 32 MiB (the largest, an MLP matrix's, 10,240,000 bytes), and each of the
// two accumulating micro-batches (of three) counts: 2 x 1,477,200,000 bytes x 0.9 ns = 2,658.96 ms.
TEST(TorchOffloadProgram, SaysWhatFreshPagesWouldCostTheAccumulatingCopies) {
  hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  const double mib32 = 32.0 * 1024 * 1024;
  for (hw::BandwidthCurve& c : p.calibration.torch_offload->curves) {
    if (c.what == "d2h_pageable" && c.group_size == RANKS) c.points = {{1e3, 10}, {mib32 - 1, 10}, {mib32, 1}, {1e12, 1}};
  }
  const OffloadRun s = fsdp_offload(p, 3);
  const double expected_ms = 2658.96;
  const CostModel costs(p, s.model.numerics, s.strategy.stack);
  const ProgramSet set = build_data_parallel_program(s.model, s.strategy, costs, s.memory, p.gpus_per_node());
  const auto note = std::find_if(set.notes.begin(), set.notes.end(), [](const std::string& n) { return n.find("up to ") != n.npos; });
  ASSERT_NE(note, set.notes.end());
  const double said_ms = std::stod(note->substr(note->find("up to ") + 6));
  EXPECT_NEAR(said_ms, expected_ms, 0.05 + 1e-3 * expected_ms) << *note;
  EXPECT_NE(note->find("MALLOC_ARENA_MAX=1"), note->npos);

  // Nothing accumulates with one micro-batch: no note.
  const OffloadRun one = fsdp_offload(p, 1);
  EXPECT_TRUE(build_data_parallel_program(one.model, one.strategy, costs, one.memory, p.gpus_per_node()).notes.empty());
}

}  // namespace
}  // namespace trainsim::sim
