// DeepSpeed ZeRO-3's gradient path in the lowered program (training_stacks.md, "DeepSpeed"): each
// bucket divided on the collective stream before its reduce-scatter (reduce_scatter_coalesced), and,
// with the optimizer on the CPU, the compute after the backward that reduced a bucket waiting for the
// blocking copy of its partition to host memory (stage3.py, __partition_grads).
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

struct Counts {
  int reduce_scatters = 0;
  int prescaled = 0;         // reduce-scatters that wait for a prescale_grads kernel on the collective stream
  int grad_copies = 0;       // d2h_grads
  int computes_after_copy = 0;  // forward, recompute or backward computes that wait for a d2h_grads
};

Counts count(wl::StackKind kind, wl::OffloadTarget optimizer) {
  const hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  // 20 layers: the embedding, 4 units a layer and the head, 82 units.
  const wl::ModelSpec model =
      wl::load_model_file(test::source_path("reports/validation/measured/h200x4/h200x4_ddp_L20-h4096_mb1x2.model.json"));
  wl::StrategyInput in;
  in.gpus.set(4, "t");
  in.dp.set(4, "t");
  in.zero.set(3, "t");
  in.micro_batch.set(1, "t");
  in.grad_accum.set(1, "t");
  in.precision.set(wl::Numerics::FP16_MIXED, "t");
  in.offload_optimizer.set(optimizer, "t");
  wl::TrainingStack stack;
  stack.kind = kind;
  in.stack.set(stack, "t");
  // A bucket a unit.
  in.buffers.reduce_bucket_elems = 1;
  in.buffers_set = true;
  const wl::ResolvedInputs r = wl::resolve_inputs(in, model, {p.gpus_per_node(), p.node_count, p.name});
  const CostModel costs(p, r.model.numerics, r.strategy.stack);
  const ProgramSet set = build_data_parallel_program(r.model, r.strategy, costs, wl::estimate_memory(r.model, r.strategy, p.gpus_per_node()),
                                                     p.gpus_per_node());
  const auto& ins = set.stages.at(0).instructions;
  Counts c;
  for (const Instruction& i : ins) {
    const std::string_view name = i.name;
    if (name == "d2h_grads") ++c.grad_copies;
    if (i.kind == InstrKind::COLLECTIVE && i.collective == CollectiveKind::REDUCE_SCATTER) {
      ++c.reduce_scatters;
      for (int a : i.after) {
        const Instruction& k = ins.at(static_cast<std::size_t>(a));
        if (std::string_view(k.name) == "prescale_grads" && k.stream == Stream::COMM) ++c.prescaled;
      }
    }
    if (i.kind == InstrKind::COMPUTE && i.stream == Stream::COMPUTE) {
      for (int a : i.after) {
        if (std::string_view(ins.at(static_cast<std::size_t>(a)).name) == "d2h_grads") ++c.computes_after_copy;
      }
    }
  }
  return c;
}

TEST(DeepSpeedZero3Program, EveryBucketPrescaledAndEachCopyBlocksTheNextCompute) {
  const Counts c = count(wl::StackKind::DEEPSPEED, wl::OffloadTarget::CPU);
  // 82 buckets, one micro-batch: 82 reduce-scatters, each after its own division.
  EXPECT_EQ(c.reduce_scatters, 82);
  EXPECT_EQ(c.prescaled, 82);
  EXPECT_EQ(c.grad_copies, 82);
  // Unit k's bucket is reduced and copied within unit k - 1's backward, and the backward of unit
  // k - 2 waits for the copy: k = 81 (the head) down to 2, 80 copies. Unit 1's bucket is reduced
  // within the embedding's backward, the step's last compute, and the embedding's own at the
  // backward's end: no compute of this single-step program follows those two.
  EXPECT_EQ(c.computes_after_copy, 80);
}

TEST(DeepSpeedZero3Program, NoBlockingCopyWithTheOptimizerOnTheGpu) {
  const Counts c = count(wl::StackKind::DEEPSPEED, wl::OffloadTarget::NONE);
  EXPECT_EQ(c.reduce_scatters, 82);
  EXPECT_EQ(c.prescaled, 82);
  EXPECT_EQ(c.grad_copies, 0);
  EXPECT_EQ(c.computes_after_copy, 0);
}

TEST(DeepSpeedZero3Program, OtherStacksNeitherPrescaleNorBlock) {
  // FSDP2 offloading its optimizer copies its gradients its own way (training_stacks.md, "FSDP2").
  const Counts c = count(wl::StackKind::IDEALIZED, wl::OffloadTarget::CPU);
  EXPECT_EQ(c.prescaled, 0);
  EXPECT_EQ(c.computes_after_copy, 0);
}

}  // namespace
}  // namespace trainsim::sim
