// Folding, proved against the replay of everything (placement.hpp, simulator.cpp): one simulated
// rank per stage standing for its identical tensor- and data-parallel copies (shared links counted
// once per copy), mirrors for the other data-parallel nodes, and identical micro-batches
// extrapolated from three replays. Where the fold is exact the two answers agree within 1e-6.
#include <gtest/gtest.h>

#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
#include "strategy_input.hpp"

namespace trainsim::sim {
namespace {

struct Answer {
  SimResult folded, full;
};

Answer both(const std::string& model, const std::string& hw, const std::function<void(wl::StrategyInput&)>& set,
            SimOptions fold_what) {
  const hw::ClusterProfile p = hw::builtin_profile(hw);
  wl::StrategyInput in;
  set(in);
  const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model(model), {p.gpus_per_node(), p.node_count, p.name});
  const wl::MemoryEstimate mem = wl::estimate_memory(r.model, r.strategy, p.gpus_per_node());
  SimOptions none;
  none.fold_ranks = false;
  none.fold_micro_batches = false;
  return {simulate(r.model, r.strategy, p, mem, fold_what), simulate(r.model, r.strategy, p, mem, none)};
}

void expect_same(const Answer& a, const char* what) {
  auto near = [&](double x, double y, const char* field) {
    EXPECT_NEAR(x, y, 1e-6 * std::max(std::fabs(y), 1e-12)) << what << ": " << field;
  };
  near(a.folded.step_time_s, a.full.step_time_s, "step time");
  near(a.folded.bubble_fraction, a.full.bubble_fraction, "bubble");
  near(a.folded.peak_memory_bytes, a.full.peak_memory_bytes, "peak GPU memory");
  near(a.folded.host_peak_bytes, a.full.host_peak_bytes, "peak host memory");
  near(a.folded.storage_peak_bytes, a.full.storage_peak_bytes, "storage");
  near(a.folded.hardware_tflops_per_gpu, a.full.hardware_tflops_per_gpu, "hardware TFLOP/s");
  EXPECT_LT(a.folded.ops, a.full.ops) << what << ": folding must replay less";
}

SimOptions ranks_only() {
  SimOptions o;
  o.fold_micro_batches = false;
  return o;
}

SimOptions micro_batches_only() {
  SimOptions o;
  o.fold_ranks = false;
  return o;
}

TEST(FoldRanks, ZeroOffloadOnOneNodeCountsEveryCopyOnTheHostPathAndCpu) {
  // 16 ranks copying gradients out and parameters in over a shared host path, each running
  // CPU-Adam on its shard of the node's CPU.
  expect_same(both("gpt2-1.5b", "dgx2",
                   [](wl::StrategyInput& in) {
                     in.zero.set(2, "t");
                     in.offload_optimizer.set(wl::OffloadTarget::CPU, "t");
                     in.recompute.set(wl::Recompute::FULL, "t");
                     in.micro_batch.set(2, "t");
                   },
                   ranks_only()),
              "ZeRO-Offload, 16 GPUs");
}

TEST(FoldRanks, DataParallelNodesMirrorEachOther) {
  // ZeRO-3 over 2 DGX-2 nodes: the simulated node's rings leave and re-enter through its NICs.
  expect_same(both("gpt2-1.5b", "dgx2",
                   [](wl::StrategyInput& in) {
                     in.nodes.set(2, "t");
                     in.zero.set(3, "t");
                     in.recompute.set(wl::Recompute::FULL, "t");
                     in.micro_batch.set(2, "t");
                   },
                   ranks_only()),
              "ZeRO-3, 2 nodes");
}

TEST(FoldRanks, ThreeDimensionalParallelismFoldsToOneRankPerStage) {
  // Megatron 3D on two DGX A100 nodes: tp 4 x dp 2 per stage, 2 stages, 1F1B.
  expect_same(both("megatron-8.3b", "dgx-a100",
                   [](wl::StrategyInput& in) {
                     in.gpus.set(16, "t");
                     in.tp.set(4, "t");
                     in.pp.set(2, "t");
                     in.recompute.set(wl::Recompute::SELECTIVE, "t");
                     in.global_batch.set(16, "t");
                   },
                   ranks_only()),
              "tp 4 x dp 2 x pp 2");
}

TEST(FoldMicroBatches, DataParallelStepsGrowByOneMicroBatchAtATime) {
  expect_same(both("gpt2-1.5b", "dgx2",
                   [](wl::StrategyInput& in) {
                     in.gpus.set(4, "t");
                     in.zero.set(3, "t");
                     in.recompute.set(wl::Recompute::FULL, "t");
                     in.global_batch.set(64, "t");
                   },
                   micro_batches_only()),
              "ZeRO-3, 16 micro-batches");
}

TEST(FoldMicroBatches, PipelineSchedulesReachTheirPeriodicRegime) {
  struct Case {
    wl::Schedule schedule;
    int vpp;
    int global_batch;
    const char* name;
  };
  for (const Case& c : {Case{wl::Schedule::ONE_F_ONE_B, 1, 128, "1F1B, p 4, m 128"},
                        Case{wl::Schedule::GPIPE, 1, 128, "GPipe, p 4, m 128 (memory grows with m)"},
                        Case{wl::Schedule::INTERLEAVED, 2, 128, "interleaved, p 4, v 2, m 128"},
                        Case{wl::Schedule::TWO_BW, 1, 128, "2BW, p 4, m 128"},
                        Case{wl::Schedule::PIPEDREAM, 1, 128, "PipeDream, p 4, m 128"}}) {
    expect_same(both("gpt2-1.5b", "dgx-a100",
                     [&](wl::StrategyInput& in) {
                       in.gpus.set(4, "t");
                       in.pp.set(4, "t");
                       in.vpp.set(c.vpp, "t");
                       in.schedule.set(c.schedule, "t");
                       in.global_batch.set(c.global_batch, "t");
                     },
                     micro_batches_only()),
                c.name);
  }
}

TEST(FoldMicroBatches, UnequalStagesRepeatOverTheirHeavyStages) {
  // megatron-8.3b's 72 layers over 5 stages of 14, 15, 15, 15 and 13 layers (tp 8, one DGX A100
  // node per stage, 1F1B): the step grows by one increment per micro-batch except every third,
  // once per heavy stage (micro_batch_fold.hpp). Three counts one apart cannot fold it; three
  // counts three apart do, exactly.
  const hw::ClusterProfile p = hw::builtin_profile("dgx-a100");
  auto run = [&](int micro_batches, bool fold) {
    wl::StrategyInput in;
    in.gpus.set(40, "t");
    in.tp.set(8, "t");
    in.pp.set(5, "t");
    in.recompute.set(wl::Recompute::SELECTIVE, "t");
    in.global_batch.set(micro_batches, "t");
    const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model("megatron-8.3b"), {p.gpus_per_node(), p.node_count, p.name});
    SimOptions o;
    o.fold_micro_batches = fold;
    return simulate(r.model, r.strategy, p, wl::estimate_memory(r.model, r.strategy, p.gpus_per_node()), o);
  };
  std::vector<double> step;
  for (int m = 6; m <= 13; ++m) step.push_back(run(m, false).step_time_s);
  int uneven = 0;
  for (std::size_t i = 2; i < step.size(); ++i) {
    uneven += std::fabs((step[i] - step[i - 1]) - (step[i - 1] - step[i - 2])) > 1e-9 * step[i] ? 1 : 0;
  }
  EXPECT_GE(uneven, 2) << "the increments per micro-batch should alternate here; without it this case tests nothing";
  Answer a{run(60, true), run(60, false)};
  expect_same(a, "5 unequal stages, 60 micro-batches");
}

}  // namespace
}  // namespace trainsim::sim
