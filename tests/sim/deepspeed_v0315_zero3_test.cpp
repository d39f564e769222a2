// DeepSpeed 0.3.15's ZeRO-3 in the data-parallel schedule (training_stacks.md, "DeepSpeed 0.3",
// ZeRO-3; workloads/stacks/deepspeed_v03_zero3.cpp cites stage3.py, partition_parameters.py,
// partitioned_param_swapper.py and checkpointing.py at v0.3.15): the fetch that waits for every
// gather in flight but not for its own prefetch, the prefetch that waits on the host for the next
// submodule's NVMe reads, and the CPU checkpoint copies that block the host.
#include "data_parallel_schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
#include "strategy_input.hpp"
#include "training_stack.hpp"

namespace trainsim::sim {
namespace {

// One layer of four submodules, one micro-batch: computes F0 F1 F2 F3 B3 B2 B1 B0.
DataParallelPlan one_layer() {
  DataParallelPlan p;
  p.unit_layer = {0, 0, 0, 0};
  p.unit_params.assign(4, 10.0);
  p.gather_params = true;
  return p;
}

int find(const std::vector<ScheduleItem>& s, Instr kind, int unit, Pass pass = Pass::NONE) {
  for (int i = 0; i < static_cast<int>(s.size()); ++i) {
    const ScheduleItem& it = s[static_cast<std::size_t>(i)];
    if (it.kind == kind && it.unit == unit && (pass == Pass::NONE || it.pass == pass)) return i;
  }
  return -1;
}

bool waits(const ScheduleItem& it, int on) { return std::find(it.after.begin(), it.after.end(), on) != it.after.end(); }

// Waited for without holding it: the compute does not free what `on` gathered or fetched.
bool ordered(const ScheduleItem& it, int on) {
  return std::find(it.ordered_after.begin(), it.ordered_after.end(), on) != it.ordered_after.end() && !waits(it, on);
}

// Two gathers ahead. F0's prefetches gather units 0, 1 and 2; F1's prefetch gathers unit 3 (once
// F0 has ended). v0.3.15's fetch of F1 waits for what is in flight when it begins, units 1 and 2
// (stage3.py:436-439 with :521-532), not for unit 3, which its own prefetch issues after the wait.
TEST(DeepSpeedV0315Zero3, FetchWaitsForGathersInFlightNotItsOwnPrefetch) {
  DataParallelPlan p = one_layer();
  p.gather_ahead = 2;
  p.fetch_waits_in_flight = true;
  const auto s = data_parallel_schedule(p);
  const int f1 = find(s, Instr::FORWARD, 1);
  const int g1 = find(s, Instr::GATHER_PARAMS, 1, Pass::FORWARD);
  const int g2 = find(s, Instr::GATHER_PARAMS, 2, Pass::FORWARD);
  const int g3 = find(s, Instr::GATHER_PARAMS, 3, Pass::FORWARD);
  ASSERT_GE(std::min({f1, g1, g2, g3}), 0);
  EXPECT_TRUE(waits(s[static_cast<std::size_t>(f1)], g1));
  EXPECT_TRUE(ordered(s[static_cast<std::size_t>(f1)], g2));
  EXPECT_FALSE(waits(s[static_cast<std::size_t>(f1)], g3) || ordered(s[static_cast<std::size_t>(f1)], g3));
  // F0, the micro-batch's first, finds nothing in flight; F2 finds units 2 and 3.
  EXPECT_TRUE(s[static_cast<std::size_t>(find(s, Instr::FORWARD, 0))].ordered_after.empty());
  EXPECT_TRUE(ordered(s[static_cast<std::size_t>(find(s, Instr::FORWARD, 2))], g3));
  // Without it F1 waits for its own gather only.
  p.fetch_waits_in_flight = false;
  const auto plain = data_parallel_schedule(p);
  EXPECT_TRUE(plain[static_cast<std::size_t>(find(plain, Instr::FORWARD, 1))].ordered_after.empty());
}

// Parameters on NVMe, one gather and two fetches ahead: F1's hook prefetches unit 2, whose
// all-gather waits on the host for unit 2's reads (partition_parameters.py:553-573) before F1 is
// launched. So F1 waits for unit 2's fetch; the last compute of the micro-batch waits for no
// later one.
TEST(DeepSpeedV0315Zero3, PrefetchWaitsForTheNextSubmodulesNvmeReads) {
  DataParallelPlan p = one_layer();
  p.fetch_params = true;
  p.gather_ahead = 1;
  p.fetch_ahead = 2;
  p.fetch_blocks_previous_compute = true;
  const auto s = data_parallel_schedule(p);
  const int f1 = find(s, Instr::FORWARD, 1);
  const int fetch2 = find(s, Instr::FETCH_PARAMS, 2, Pass::FORWARD);
  const int fetch_b3 = find(s, Instr::FETCH_PARAMS, 3, Pass::BACKWARD);
  const int f3 = find(s, Instr::FORWARD, 3);
  ASSERT_GE(std::min({f1, fetch2, fetch_b3, f3}), 0);
  EXPECT_TRUE(ordered(s[static_cast<std::size_t>(f1)], fetch2));
  EXPECT_TRUE(ordered(s[static_cast<std::size_t>(f3)], fetch_b3));  // B3 follows F3 in the same micro-batch
  EXPECT_TRUE(s[static_cast<std::size_t>(find(s, Instr::BACKWARD, 0))].ordered_after.empty());  // B0 is last
  p.fetch_blocks_previous_compute = false;
  const auto plain = data_parallel_schedule(p);
  EXPECT_TRUE(plain[static_cast<std::size_t>(find(plain, Instr::FORWARD, 1))].ordered_after.empty());
}

// Two checkpointed layers of one unit, full recompute, checkpoints on the CPU: computes F0 F1 R1 B1
// R0 B0. With blocking copies (checkpointing.py:470 and :276) each save is waited for by the host,
// and layer 0's load is issued only after B1 has ended (not two computes ahead, after F1), right
// before R0, which waits for it.
TEST(DeepSpeedV0315Zero3, CheckpointCopiesBlockTheHost) {
  DataParallelPlan p;
  p.unit_layer = {0, 1};
  p.checkpointed_layers = 2;
  p.recompute_full = true;
  p.offload_checkpoints = true;
  p.checkpoint_copies_block_host = true;
  const auto s = data_parallel_schedule(p);
  const int b1 = find(s, Instr::BACKWARD, 1), f1 = find(s, Instr::FORWARD, 1), r0 = find(s, Instr::RECOMPUTE, 0);
  int load0 = -1, saves = 0, blocking_saves = 0;
  for (int i = 0; i < static_cast<int>(s.size()); ++i) {
    const ScheduleItem& it = s[static_cast<std::size_t>(i)];
    if (it.kind == Instr::LOAD_CHECKPOINT && it.layer == 0) load0 = i;
    if (it.kind == Instr::SAVE_CHECKPOINT) {
      ++saves;
      blocking_saves += it.host_waits ? 1 : 0;
    }
  }
  ASSERT_GE(std::min({b1, f1, r0, load0}), 0);
  EXPECT_EQ(saves, 2);
  EXPECT_EQ(blocking_saves, 2);
  EXPECT_TRUE(s[static_cast<std::size_t>(load0)].host_waits);
  EXPECT_TRUE(waits(s[static_cast<std::size_t>(load0)], b1));
  EXPECT_GT(load0, b1);
  EXPECT_LT(load0, r0);
  EXPECT_TRUE(waits(s[static_cast<std::size_t>(r0)], load0));
  // Asynchronous: issued after F1, before R1.
  p.checkpoint_copies_block_host = false;
  const auto plain = data_parallel_schedule(p);
  int plain_load0 = -1;
  for (int i = 0; i < static_cast<int>(plain.size()); ++i) {
    if (plain[static_cast<std::size_t>(i)].kind == Instr::LOAD_CHECKPOINT && plain[static_cast<std::size_t>(i)].layer == 0) plain_load0 = i;
  }
  ASSERT_GE(plain_load0, 0);
  EXPECT_TRUE(waits(plain[static_cast<std::size_t>(plain_load0)], find(plain, Instr::FORWARD, 1)));
  EXPECT_LT(plain_load0, find(plain, Instr::BACKWARD, 1));
  EXPECT_FALSE(plain[static_cast<std::size_t>(plain_load0)].host_waits);
}

// The stack states them at stage 3 only, except the checkpoint copies (every 0.3 release).
TEST(DeepSpeedV0315Zero3, StackStatesTheV0315Coordinator) {
  wl::TrainingStack stack;
  stack.kind = wl::StackKind::DEEPSPEED_0_3;
  const wl::StackStates z3 = wl::stack_states(stack, wl::Numerics::FP16_MIXED, 3, 1);
  EXPECT_TRUE(z3.param_coordinator && z3.fetch_synchronizes_device && z3.nvme_reads_block_prefetch && z3.checkpoint_copies_block_host);
  EXPECT_FALSE(z3.grad_offload_blocks_host);
  const wl::StackStates z2 = wl::stack_states(stack, wl::Numerics::FP16_MIXED, 2, 1);
  EXPECT_FALSE(z2.param_coordinator || z2.fetch_synchronizes_device || z2.nvme_reads_block_prefetch);
  EXPECT_TRUE(z2.checkpoint_copies_block_host);
  stack.kind = wl::StackKind::DEEPSPEED;
  const wl::StackStates now = wl::stack_states(stack, wl::Numerics::FP16_MIXED, 3, 1);
  EXPECT_FALSE(now.fetch_synchronizes_device || now.nvme_reads_block_prefetch || now.checkpoint_copies_block_host);
}

// GPT-2 1.5B (48 layers, hidden 1600, sequence 1024) on one dgx2 GPU at micro-batch 1, full
// recompute, checkpoints on the CPU: 48 checkpoints of 1024 x 1600 x 2 = 3,276,800 bytes go out and
// come back. Blocking, all 96 copies are on the step's path: halving the PCIe rate (12 to 6 GB/s)
// adds 96 x 3,276,800 x (1/6e9 - 1/12e9) = 26.2 ms. Asynchronous (the deepspeed stack), they hide
// behind the layers' computes and the rate changes the step by far less.
double step_with_pcie(wl::StackKind kind, double GBps) {
  hw::ClusterProfile p = hw::builtin_profile("dgx2");
  p.pcie.link_GBps = GBps;
  p.pcie.switch_uplink_GBps = GBps;
  p.pcie.host_aggregate_GBps = 4 * GBps;
  wl::StrategyInput in;
  in.gpus.set(1, "t");
  in.dp.set(1, "t");
  in.zero.set(0, "t");
  in.micro_batch.set(1, "t");
  in.precision.set(wl::Numerics::FP16_MIXED, "t");
  in.recompute.set(wl::Recompute::FULL, "t");
  in.offload_activations.set(wl::ActivationOffload::CPU, "t");
  wl::TrainingStack stack;
  stack.kind = kind;
  in.stack.set(stack, "t");
  const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model("gpt2-1.5b"), {p.gpus_per_node(), p.node_count, p.name});
  return simulate(r.model, r.strategy, p, wl::estimate_memory(r.model, r.strategy, p.gpus_per_node())).step_time_s;
}

TEST(DeepSpeedV0315Zero3, BlockingCheckpointCopiesAreOnTheStepsPath) {
  const double expected = 96 * 3276800.0 * (1 / 6e9 - 1 / 12e9);
  const double v03 = step_with_pcie(wl::StackKind::DEEPSPEED_0_3, 6) - step_with_pcie(wl::StackKind::DEEPSPEED_0_3, 12);
  EXPECT_NEAR(v03, expected, 0.02 * expected);
  const double now = step_with_pcie(wl::StackKind::DEEPSPEED, 6) - step_with_pcie(wl::StackKind::DEEPSPEED, 12);
  EXPECT_LT(now, 0.25 * expected);
}

}  // namespace
}  // namespace trainsim::sim
