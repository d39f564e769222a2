// FSDP2 with a captured layer (workloads/stacks/training_stacks.md, "FSDP2"; captured_model.hpp): the
// capture gives the layer's kernels and saved tensors, the stack keeps its sharded states, its unit
// all-gathers and reduce-scatters. FSDP2's MixedPrecisionPolicy hands the module bf16 parameters under
// no autocast, so its layer is the pure bf16 capture. The model is the committed Llama capture's own
// config (workloads/captures/hf/llama.config.json: 4 layers of hidden 256, 8 heads, 2 key/value heads,
// FFN 704, vocabulary 1024), at the capture's own micro-batch 2 and sequence 128, 2 micro-batches a
// step on 2 GPUs under ZeRO-3.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "captured_model.hpp"
#include "config_error.hpp"
#include "data_parallel_program.hpp"
#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
#include "stack_layer.hpp"
#include "strategy_input.hpp"
#include "test_support.hpp"

namespace trainsim::sim {
namespace {

const std::string CONFIG = "workloads/captures/hf/llama.config.json";
const std::string BF16 = "workloads/captures/hf/llama.bf16.json.gz";
const std::string AUTOCAST = "workloads/captures/hf/llama.autocast-bf16.json.gz";

struct Fsdp2Run {
  wl::ModelSpec model;
  wl::Strategy strategy;
};

Fsdp2Run fsdp2_run() {
  const hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  wl::StrategyInput in;
  in.gpus.set(2, "t");
  in.dp.set(2, "t");
  in.zero.set(3, "t");
  in.micro_batch.set(2, "t");
  in.grad_accum.set(2, "t");
  in.seq.set(128, "t");
  in.precision.set(wl::Numerics::BF16_MIXED, "t");
  wl::TrainingStack stack;
  stack.kind = wl::StackKind::PYTORCH_FSDP;
  in.stack.set(stack, "t");
  const wl::ResolvedInputs r =
      wl::resolve_inputs(in, wl::resolve_model(test::source_path(CONFIG), "--model"), {p.gpus_per_node(), p.node_count, p.name});
  return {r.model, r.strategy};
}

struct Collectives {
  int gathers = 0, reduce_scatters = 0;
  double gathered_bytes = 0, scattered_bytes = 0;
};

Collectives collectives(const Fsdp2Run& run) {
  const hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  const CostModel costs(p, run.model.numerics, run.strategy.stack);
  const ProgramSet set = build_data_parallel_program(run.model, run.strategy, costs,
                                                     wl::estimate_memory(run.model, run.strategy, p.gpus_per_node()), p.gpus_per_node());
  Collectives c;
  for (const Instruction& i : set.stages.at(0).instructions) {
    if (std::string_view(i.name) == "gather_params") {
      ++c.gathers;
      c.gathered_bytes += i.bytes;
    }
    if (i.kind == InstrKind::COLLECTIVE && i.collective == CollectiveKind::REDUCE_SCATTER) {
      ++c.reduce_scatters;
      c.scattered_bytes += i.bytes;
    }
  }
  return c;
}

TEST(Fsdp2Capture, TakesTheLayersKernelsFromThePureBf16CaptureAndKeepsItsGathers) {
  const Fsdp2Run plain = fsdp2_run();
  Fsdp2Run captured = plain;
  captured.model.capture = wl::attach_capture(test::source_path(BF16), "--capture", captured.model, captured.strategy);
  ASSERT_EQ(captured.strategy.micro_batches(), 2);

  // The layer's launches a micro-batch: the capture's kernels plus FSDP2's own on the compute stream.
  // The pure bf16 Llama layer's forward launches 38 kernels: 7 GEMMs (q, k, v, o, gate, up, down),
  // flash attention, 8 for each of its 2 RMSNorms (the fp32 cast, pow, mean, the epsilon's add, rsqrt,
  // the two products, the cast back), 5 for rotary on each of the query and the key (two products,
  // the negation, the cat, the sum), the 2 residual adds, SiLU and its product with the up projection.
  // Its backward 75 (the capture's ops: 14 GEMMs, flash attention's 5 backward kernels and the
  // gradients of the rest). FSDP2 adds the copy-out of the gathered unit to the forward (39), and to
  // the backward the chunk_cat of the reduce-scatter input and, under ZeRO-3, the copy-out of the unit
  // gathered again (77). Without the capture the hand-written FSDP2 layer's counts hold
  // (workloads/stacks/stack_layer.cpp, torch_layer_launches: 22 and 36 for this Llama under ZeRO-3).
  const wl::LayerCost layer = wl::torch_layer_cost(captured.model, captured.strategy);
  EXPECT_DOUBLE_EQ(layer.forward.launches, 38 + 1);
  EXPECT_DOUBLE_EQ(layer.backward.launches, 75 + 2);
  const wl::LayerCost own = wl::torch_layer_cost(plain.model, plain.strategy);
  EXPECT_DOUBLE_EQ(own.forward.launches, 22);
  EXPECT_DOUBLE_EQ(own.backward.launches, 36);

  // The gathers and reduce-scatters are the stack's, unchanged: per micro-batch each of the 4 blocks
  // gathered for its forward and again for its backward, the root (embedding, final norm, head) twice:
  // 2 x (2 x 4 + 2) = 20 all-gathers; one reduce-scatter per unit and micro-batch, 2 x (4 + 1) = 10.
  const Collectives a = collectives(plain), b = collectives(captured);
  EXPECT_EQ(b.gathers, 20);
  EXPECT_EQ(b.reduce_scatters, 10);
  EXPECT_EQ(a.gathers, b.gathers);
  EXPECT_EQ(a.reduce_scatters, b.reduce_scatters);
  EXPECT_DOUBLE_EQ(a.gathered_bytes, b.gathered_bytes);
  EXPECT_DOUBLE_EQ(a.scattered_bytes, b.scattered_bytes);

  // And it replays.
  const hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  const SimResult r = simulate(captured.model, captured.strategy, p, wl::estimate_memory(captured.model, captured.strategy, p.gpus_per_node()));
  EXPECT_TRUE(r.simulated);
  EXPECT_GT(r.step_time_s, 0);
}

// An autocast capture's weight casts would repeat the casts FSDP2 makes as it gathers: refused,
// naming the key and the precision to capture with.
TEST(Fsdp2Capture, RefusesAnAutocastCapture) {
  const Fsdp2Run run = fsdp2_run();
  try {
    wl::attach_capture(test::source_path(AUTOCAST), "--capture", run.model, run.strategy);
    FAIL() << "an autocast capture under FSDP2 was attached";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("run.precision"), std::string::npos) << what;
    EXPECT_NE(what.find("--precision bf16"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace trainsim::sim
