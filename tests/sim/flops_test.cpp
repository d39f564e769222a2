// FLOPs against Narayanan et al. 2021 (Megatron-LM), Sec. 5.1: a step of a GPT model is
// 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) FLOPs without recompute and
// 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full recompute.
#include <gtest/gtest.h>

#include "layer_costs.hpp"
#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
#include "strategy_input.hpp"

namespace trainsim::sim {
namespace {

TEST(Flops, ModelFlopsPerStepMatchNarayanan) {
  for (const char* name : {"gpt3-175b", "megatron-1t", "gpt2-1.5b"}) {
    const wl::ModelSpec m = wl::builtin_model(name);
    wl::Strategy s;
    s.dp = 4;
    s.gpus = 4;
    s.micro_batch = 2;
    s.global_batch = 16;
    s.seq = m.seq_len;
    const double B = 16, sq = static_cast<double>(s.seq), l = static_cast<double>(m.layers),
                 h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab);
    const double expected = 72 * B * sq * l * h * h * (1 + sq / (6 * h) + V / (12 * l * h));
    EXPECT_NEAR(wl::model_flops_per_step(m, s), expected, 1e-12 * expected) << name;
  }
}

// The replay's hardware FLOPs per step (each simulated GPU standing for its copies) against
// Narayanan's formula with full recompute, gpt2-1.5b on one DGX-2 with ZeRO-2.
void expect_replayed_flops_match_narayanan(bool delayed_update) {
  const hw::ClusterProfile p = hw::builtin_profile("dgx2");
  wl::StrategyInput in;
  in.zero.set(2, "t");
  in.recompute.set(wl::Recompute::FULL, "t");
  in.micro_batch.set(2, "t");
  if (delayed_update) {
    in.offload_optimizer.set(wl::OffloadTarget::CPU, "t");
    in.delayed_update.set(true, "t");
  }
  const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model("gpt2-1.5b"), {16, 96, "dgx2"});
  const SimResult res = simulate(r.model, r.strategy, p, wl::estimate_memory(r.model, r.strategy, 16));
  const double B = static_cast<double>(r.strategy.global_batch), sq = 1024, l = 48, h = 1600, V = 50257;
  const double expected = 96 * B * sq * l * h * h * (1 + sq / (6 * h) + V / (16 * l * h));
  double replayed = 0;
  for (const auto& g : res.per_gpu) replayed += g.hardware_flops * g.copies;  // each stands for its copies
  EXPECT_NEAR(replayed, expected, 1e-9 * expected);
}

TEST(Flops, ReplayedHardwareFlopsWithFullRecomputeMatchNarayanan) { expect_replayed_flops_match_narayanan(false); }

// Over several simulated steps the FLOPs of one step are those of the measured steps after the
// first, per step: neither the first's nor the trailing step's (program/program.hpp).
TEST(Flops, DelayedUpdateCountsTheMeasuredStepsOnly) {
  expect_replayed_flops_match_narayanan(true);
}

}  // namespace
}  // namespace trainsim::sim
