// The pipeline bubble, replayed: with uniform stage costs and negligible communication, the idle
// fraction of a step equals the published formulas (Narayanan et al. SC'21, Sec. 2.2):
// (p - 1) / (m + p - 1) for GPipe and 1F1B, and ((p - 1) / v) / (m + (p - 1) / v) for the
// interleaved schedule with v chunks, within 0.005 absolute, for p in {2, 4, 8, 16} and m in
// {p, 2p, 4p, 8p}.
#include <gtest/gtest.h>

#include "memory_model.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
#include "strategy_input.hpp"

namespace trainsim::sim {
namespace {

// DGX A100 nodes whose links are so fast and so quick that moving activations costs nothing.
hw::ClusterProfile negligible_communication() {
  hw::ClusterProfile p = hw::builtin_profile("dgx-a100");
  p.intra_node.link_GBps = 1e5;
  p.intra_node.latency_us = 0;
  p.pcie.link_GBps = 1e4;
  p.pcie.switch_uplink_GBps = 1e4;
  p.pcie.latency_us = 0;
  p.nic.link_Gbps = 1e5;
  p.nic.latency_us = 0;
  p.inter_node.latency_us = 0;
  return p;
}

// Uniform stages: 64 identical layers, an embedding and a head that cost next to nothing (a
// vocabulary of 128), 16 sequences per micro-batch so that the optimizer step (Adam streams 28
// bytes per parameter through HBM, not in the formula) is under 1% of the passes.
wl::ModelSpec uniform_model() {
  wl::ModelSpec m;
  m.name = "uniform";
  m.layers = 64;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 32;
  m.ffn_hidden = 4 * 4096;
  m.vocab = 128;
  m.seq_len = 2048;
  m.dropout = false;
  m.numerics = wl::Numerics::BF16_MIXED;
  m.attention = wl::AttentionImpl::FLASH;
  return m;
}

double bubble(wl::Schedule schedule, int p, int m, int v) {
  const hw::ClusterProfile profile = negligible_communication();
  wl::StrategyInput in;
  in.gpus.set(p, "t");
  in.pp.set(p, "t");
  in.vpp.set(v, "t");
  in.schedule.set(schedule, "t");
  in.micro_batch.set(16, "t");
  in.global_batch.set(16 * m, "t");
  const wl::ResolvedInputs r = wl::resolve_inputs(in, uniform_model(), {8, 560, "dgx-a100"});
  const SimResult res = simulate(r.model, r.strategy, profile, wl::estimate_memory(r.model, r.strategy, 8));
  return res.bubble_fraction;
}

TEST(PipelineBubble, GpipeAnd1f1bMatchTheFormula) {
  for (int p : {2, 4, 8, 16}) {
    for (int k : {1, 2, 4, 8}) {
      const int m = k * p;
      const double expected = static_cast<double>(p - 1) / (m + p - 1);
      EXPECT_NEAR(bubble(wl::Schedule::GPIPE, p, m, 1), expected, 0.005) << "GPipe p " << p << " m " << m;
      EXPECT_NEAR(bubble(wl::Schedule::ONE_F_ONE_B, p, m, 1), expected, 0.005) << "1F1B p " << p << " m " << m;
    }
  }
}

TEST(PipelineBubble, InterleavedMatchesTheFormula) {
  for (int p : {2, 4, 8, 16}) {
    for (int k : {1, 2, 4, 8}) {
      const int m = k * p;
      const int v = 2;
      const double b = static_cast<double>(p - 1) / v;
      EXPECT_NEAR(bubble(wl::Schedule::INTERLEAVED, p, m, v), b / (m + b), 0.005) << "p " << p << " m " << m;
    }
  }
}

}  // namespace
}  // namespace trainsim::sim
