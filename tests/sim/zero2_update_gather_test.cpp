// Which ZeRO-2 stacks all-gather the updated parameters after the optimizer step. ZeRO stage 2
// (ZeRO Sec. 5.2) keeps every parameter on every rank, so each rank gathers the shards the others
// updated; DeepSpeed does that. FSDP2 keeps the parameters sharded between steps at either
// reshard_after_forward (workloads/stacks/training_stacks.md, "FSDP2"): the next forward all-gathers each
// unit (a rank's profiled FSDP2 ZeRO-2 step, the trace of reports/validation/measured/h200x4/
// h200x4_fsdp2-zero2_L52-h5120_mb1x2, kept in the history that reports/HISTORY.md names, holds 106
// all-gather kernels, one per unit and micro-batch, 106 reduce-scatters, one all-reduce and no other
// collective). Its units are the blocks and the root module: the measured script applies fully_shard
// to each block, then to the model (reports/validation/scripts/run_step_stacks.py, build_dp), whose
// state gathers what no block holds (the embeddings, the final norm and the tied head) as one unit.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "data_parallel_program.hpp"
#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "strategy_input.hpp"
#include "test_support.hpp"

namespace trainsim::sim {
namespace {

struct Gathers {
  int before_step = 0;  // "gather_params": a unit's parameters for a forward or a backward
  int after_step = 0;   // "gather_updated_params"
  int reduce_scatters = 0;
  int micro_batches = 0;
};

wl::ModelSpec measured_model(std::string_view run) {
  return wl::load_model_file(test::source_path("reports/validation/measured/h200x4/" + std::string(run) + ".model.json"));
}

// The traced ZeRO-2 run's model.
wl::ModelSpec traced_model() { return measured_model("h200x4_fsdp2-zero2_L52-h5120_mb1x2"); }

Gathers count_gathers(wl::StackKind kind, const wl::ModelSpec& model = traced_model(), int zero = 2) {
  const hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  wl::StrategyInput in;
  in.gpus.set(4, "t");
  in.dp.set(4, "t");
  in.zero.set(zero, "t");
  in.micro_batch.set(1, "t");
  in.grad_accum.set(2, "t");
  in.precision.set(wl::Numerics::BF16_MIXED, "t");
  wl::TrainingStack stack;
  stack.kind = kind;
  in.stack.set(stack, "t");
  const wl::ResolvedInputs r = wl::resolve_inputs(in, model, {p.gpus_per_node(), p.node_count, p.name});
  const CostModel costs(p, r.model.numerics, r.strategy.stack);
  const ProgramSet set = build_data_parallel_program(r.model, r.strategy, costs, wl::estimate_memory(r.model, r.strategy, p.gpus_per_node()),
                                                     p.gpus_per_node());
  Gathers g;
  g.micro_batches = static_cast<int>(r.strategy.micro_batches());
  for (const Instruction& i : set.stages.at(0).instructions) {
    if (std::string_view(i.name) == "gather_params") ++g.before_step;
    if (std::string_view(i.name) == "gather_updated_params") ++g.after_step;
    if (i.kind == InstrKind::COLLECTIVE && i.collective == CollectiveKind::REDUCE_SCATTER) ++g.reduce_scatters;
  }
  return g;
}

// The traced run's own configuration: 52 blocks, 2 micro-batches. The trace holds 106 all-gathers
// and 106 reduce-scatters: per micro-batch one of each for each block (52) and for the root (1).
TEST(Zero2UpdateGather, Fsdp2GathersEachUnitPerForwardAndNothingAfterTheStep) {
  const Gathers g = count_gathers(wl::StackKind::PYTORCH_FSDP);
  ASSERT_EQ(g.micro_batches, 2);
  EXPECT_EQ(g.after_step, 0);
  EXPECT_EQ(g.before_step, 106) << "one gather per unit (52 blocks and the root) and micro-batch";
  EXPECT_EQ(g.reduce_scatters, 106) << "one reduce-scatter per unit and micro-batch";
}

// Under ZeRO-3 (reshard_after_forward=True, passed to the root too) each block is gathered for its
// forward and again for its backward, and so is the root: resharded after the model's forward, its
// pre-backward gathers it once more (training_stacks.md, "FSDP2"). The profiled L48-h6144 ZeRO-3
// step (reports/validation/measured/h200x4/h200x4_fsdp2-zero3_L48-h6144_mb1x2; the count is in
// training_stacks.md, "FSDP2") holds 196 all-gather copy-outs, one per gather: 2 x (2 x 48 + 2).
TEST(Zero2UpdateGather, Fsdp2ZeroThreeGathersTheRootOncePerPass) {
  const Gathers g = count_gathers(wl::StackKind::PYTORCH_FSDP, measured_model("h200x4_fsdp2-zero3_L48-h6144_mb1x2"), 3);
  ASSERT_EQ(g.micro_batches, 2);
  EXPECT_EQ(g.after_step, 0);
  EXPECT_EQ(g.before_step, 196);
  EXPECT_EQ(g.reduce_scatters, 2 * (48 + 1));
}

TEST(Zero2UpdateGather, DeepSpeedGathersTheUpdatedShardsAndNothingBeforeTheForward) {
  const Gathers g = count_gathers(wl::StackKind::DEEPSPEED);
  EXPECT_GT(g.after_step, 0);
  EXPECT_EQ(g.before_step, 0);
}

}  // namespace
}  // namespace trainsim::sim
