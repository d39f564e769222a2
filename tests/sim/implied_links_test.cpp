// Links that other links imply (sim/engine/implied_links.hpp): which ones the rule drops, and that the
// replay answers the same with and without dropping them.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "implied_links.hpp"
#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
#include "strategy_input.hpp"

namespace trainsim::sim {
namespace {

LinkSharing sharing(std::vector<double> capacity, std::vector<std::vector<int>> routes) {
  LinkSharing s;
  s.adjustable.assign(capacity.size(), false);
  s.capacity = std::move(capacity);
  s.routes = std::move(routes);
  return s;
}

TEST(ImpliedLinks, APortWiderThanTheNicsOfItsFlowsIsDropped) {
  // Link 0 (100) is crossed by two flows, each also through its own link of 40: together they
  // can never put more than 80 on it.
  const auto dropped = implied_links(sharing({100, 40, 40}, {{0, 1}, {0, 2}}));
  EXPECT_EQ(dropped, (std::vector<bool>{true, false, false}));
}

TEST(ImpliedLinks, APortTheFlowsCanFillIsKept) {
  const auto dropped = implied_links(sharing({70, 40, 40}, {{0, 1}, {0, 2}}));
  EXPECT_FALSE(dropped[0]);
}

TEST(ImpliedLinks, ListingsCountAsUnitsOfTheFlow) {
  // The first flow lists link 0 twice and its witness once: it can put 2 x 10 on link 0.
  EXPECT_FALSE(implied_links(sharing({25, 10, 10}, {{0, 0, 1}, {0, 2}}))[0]);
  EXPECT_TRUE(implied_links(sharing({35, 10, 10}, {{0, 0, 1}, {0, 2}}))[0]);
  // Listed twice on the witness too: the ratio is one again.
  EXPECT_TRUE(implied_links(sharing({25, 10, 10}, {{0, 0, 1, 1}, {0, 2}}))[0]);
}

TEST(ImpliedLinks, FlowsSharingAWitnessCountItOnce) {
  // Both flows leave through link 1: whatever their split, at most 10 on link 0.
  EXPECT_TRUE(implied_links(sharing({15, 10}, {{0, 1}, {0, 1}}))[0]);
}

TEST(ImpliedLinks, RateCapsAreNeverDropped) {
  LinkSharing s = sharing({100, 40, 40}, {{0, 1}, {0, 2}});
  s.adjustable[0] = true;
  EXPECT_FALSE(implied_links(s)[0]);
}

TEST(ImpliedLinks, ARouteKeepsItsOnlyLink) {
  EXPECT_FALSE(implied_links(sharing({10, 1}, {{0}, {0, 1}}))[0]);
}

TEST(ImpliedLinks, TheEqualCaseIsKept) {
  // Equal capacity leaves no margin against rounding in the sharing model.
  EXPECT_FALSE(implied_links(sharing({80, 40, 40}, {{0, 1}, {0, 2}}))[0]);
}

TEST(ImpliedLinks, UnknownLinksAreRefused) {
  EXPECT_THROW(implied_links(sharing({10}, {{0, 1}})), std::logic_error);
}

// The replay with and without the drop: every figure the planner ranks by or reports.
void expect_same_replay(const std::string& model, const std::string& hw, const std::function<void(wl::StrategyInput&)>& set) {
  const hw::ClusterProfile p = hw::builtin_profile(hw);
  wl::StrategyInput in;
  set(in);
  const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model(model), {p.gpus_per_node(), p.node_count, p.name});
  const wl::MemoryEstimate mem = wl::estimate_memory(r.model, r.strategy, p.gpus_per_node());
  SimOptions all_links;
  all_links.drop_implied_links = false;
  const SimResult dropped = simulate(r.model, r.strategy, p, mem), kept = simulate(r.model, r.strategy, p, mem, all_links);
  ASSERT_TRUE(kept.simulated) << model << " on " << hw;
  auto same = [&](double x, double y, const char* field) {
    EXPECT_NEAR(x, y, 1e-12 * std::max(std::fabs(y), 1e-12)) << model << " on " << hw << ": " << field;
  };
  same(dropped.step_time_s, kept.step_time_s, "step time");
  same(dropped.peak_memory_bytes, kept.peak_memory_bytes, "peak GPU memory");
  same(dropped.bubble_fraction, kept.bubble_fraction, "bubble");
  ASSERT_EQ(dropped.per_gpu.size(), kept.per_gpu.size());
  for (std::size_t g = 0; g < kept.per_gpu.size(); ++g) {
    same(dropped.per_gpu[g].exposed_communication_s, kept.per_gpu[g].exposed_communication_s, "exposed communication");
    same(dropped.per_gpu[g].exposed_offload_io_s, kept.per_gpu[g].exposed_offload_io_s, "exposed offload I/O");
  }
}

TEST(ImpliedLinksReplay, ZeroThreeOffloadRingsSharingPcieWithCopies) {
  // One data-parallel ring over every GPU of two DGX-2, its channels entering and leaving through
  // GPU PCIe links that the offload's copies cross too (the contention the 1T plans meet).
  expect_same_replay("gpt2-1.5b", "dgx2", [](wl::StrategyInput& in) {
    in.nodes.set(2, "t");
    in.zero.set(3, "t");
    in.offload_optimizer.set(wl::OffloadTarget::CPU, "t");
    in.offload_activations.set(wl::ActivationOffload::CPU, "t");
    in.recompute.set(wl::Recompute::FULL, "t");
    in.delayed_update.set(true, "t");
    in.micro_batch.set(4, "t");
  });
}

TEST(ImpliedLinksReplay, TensorRingsBesideDataParallelRings) {
  // Tensor-parallel rings inside the node cross the same NVSwitch ports as the data-parallel
  // channels: those ports are not implied and stay.
  expect_same_replay("bert-large", "dgx-a100", [](wl::StrategyInput& in) {
    in.nodes.set(2, "t");
    in.tp.set(2, "t");
    in.zero.set(3, "t");
    in.offload_params.set(wl::OffloadTarget::NVME, "t");
    in.offload_optimizer.set(wl::OffloadTarget::NVME, "t");
    in.micro_batch.set(2, "t");
  });
}

TEST(ImpliedLinksReplay, PipelineSendsAcrossNodes) {
  expect_same_replay("bert-large", "dgx2", [](wl::StrategyInput& in) {
    in.nodes.set(2, "t");
    in.tp.set(4, "t");
    in.pp.set(4, "t");
    in.schedule.set(wl::Schedule::ONE_F_ONE_B, "t");
    in.micro_batch.set(1, "t");
    in.global_batch.set(64, "t");
  });
}

TEST(ImpliedLinksReplay, NvlinkMeshNodes) {
  expect_same_replay("bert-large", "zhores", [](wl::StrategyInput& in) {
    in.nodes.set(2, "t");
    in.tp.set(2, "t");
    in.zero.set(2, "t");
    in.offload_optimizer.set(wl::OffloadTarget::CPU, "t");
    in.micro_batch.set(4, "t");
  });
}

}  // namespace
}  // namespace trainsim::sim
