// The replay's memory timeline against the closed-form memory model (DESIGN.md: "peak memory is
// the timeline's maximum"; issue: equal wherever both describe the same thing).
#include <gtest/gtest.h>

#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
#include "strategy_input.hpp"

namespace trainsim::sim {
namespace {

struct Case {
  wl::ModelSpec model;
  wl::Strategy strategy;
  hw::ClusterProfile profile;
  wl::MemoryEstimate memory;
  SimResult result;
};

Case run(const std::string& model, const std::function<void(wl::StrategyInput&)>& set) {
  Case c;
  c.profile = hw::builtin_profile("dgx2");
  wl::StrategyInput in;
  set(in);
  const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model(model), {16, 96, "dgx2"});
  c.model = r.model;
  c.strategy = r.strategy;
  c.memory = wl::estimate_memory(c.model, c.strategy, 16);
  c.result = simulate(c.model, c.strategy, c.profile, c.memory);
  return c;
}

// Same model, same numbers: no ZeRO-3 gathering or offloaded parameters, so every tensor the
// memory model counts is alive at one instant of the replay (the end of the forward, or the
// first recompute), and nothing else is.
TEST(MemoryConsistency, ReplayPeakEqualsTheMemoryModelWhereBothDescribeTheSameThing) {
  const std::vector<std::pair<const char*, std::function<void(wl::StrategyInput&)>>> cases = {
      {"DDP", [](wl::StrategyInput& in) { in.zero.set(0, "t"); }},
      {"ZeRO-1, 2 micro-batches", [](wl::StrategyInput& in) {
         in.zero.set(1, "t");
         in.micro_batch.set(2, "t");
         in.global_batch.set(64, "t");
       }},
      {"ZeRO-2, selective recompute", [](wl::StrategyInput& in) {
         in.zero.set(2, "t");
         in.recompute.set(wl::Recompute::SELECTIVE, "t");
         in.micro_batch.set(4, "t");
       }},
      {"ZeRO-2, full recompute", [](wl::StrategyInput& in) {
         in.zero.set(2, "t");
         in.recompute.set(wl::Recompute::FULL, "t");
         in.micro_batch.set(8, "t");
       }},
      {"ZeRO-Offload with delayed update", [](wl::StrategyInput& in) {
         in.zero.set(2, "t");
         in.offload_optimizer.set(wl::OffloadTarget::CPU, "t");
         in.delayed_update.set(true, "t");
         in.micro_batch.set(2, "t");
       }},
  };
  for (const auto& [name, set] : cases) {
    const Case c = run("gpt2-1.5b", set);
    const double model = c.memory.stages[0].gpu_bytes();
    EXPECT_NEAR(c.result.peak_memory_bytes, model, 1e-9 * model) << name;
  }
}

// With ZeRO-3, parameter offload or L2L the model charges, at the activation peak, the two
// largest consecutive gathered units and two prefetched shards (or layers); the replay holds
// whichever units are gathered or in flight at that instant. So the replay never exceeds the
// model, and falls short of it by at most those buffers (and, with checkpoints offloaded, the
// two layers of checkpoints the model keeps on the GPU as copy buffers).
TEST(MemoryConsistency, WithGatheredParametersTheReplayStaysWithinTheModelsBuffers) {
  const std::vector<std::tuple<const char*, const char*, std::function<void(wl::StrategyInput&)>>> cases = {
      {"ZeRO-3", "gpt2-1.5b", [](wl::StrategyInput& in) {
         in.zero.set(3, "t");
         in.recompute.set(wl::Recompute::FULL, "t");
         in.micro_batch.set(8, "t");
       }},
      {"ZeRO-Infinity CPU", "gpt2-1.5b", [](wl::StrategyInput& in) {
         in.zero.set(3, "t");
         in.offload_params.set(wl::OffloadTarget::CPU, "t");
         in.offload_optimizer.set(wl::OffloadTarget::CPU, "t");
         in.recompute.set(wl::Recompute::FULL, "t");
         in.offload_activations.set(wl::ActivationOffload::CPU, "t");
         in.micro_batch.set(8, "t");
       }},
      {"ZeRO-Infinity NVMe", "zinf-0.1t", [](wl::StrategyInput& in) {
         in.zero.set(3, "t");
         in.offload_params.set(wl::OffloadTarget::NVME, "t");
         in.offload_optimizer.set(wl::OffloadTarget::NVME, "t");
         in.recompute.set(wl::Recompute::FULL, "t");
         in.offload_activations.set(wl::ActivationOffload::CPU, "t");
       }},
      {"L2L", "gpt2-1.5b", [](wl::StrategyInput& in) {
         in.l2l.set(true, "t");
         in.recompute.set(wl::Recompute::FULL, "t");
         in.micro_batch.set(4, "t");
       }},
  };
  for (const auto& [name, model_name, set] : cases) {
    const Case c = run(model_name, set);
    const wl::StageMemory& st = c.memory.stages[0];
    const double model = st.gpu_bytes();
    double slack = st.buffers.gathered_params_bytes + st.buffers.staging_bytes;
    if (c.strategy.offload_activations == wl::ActivationOffload::CPU) slack += 2 * st.activations.per_layer_stored_bytes;
    EXPECT_LE(c.result.peak_memory_bytes, model * (1 + 1e-9)) << name;
    EXPECT_GE(c.result.peak_memory_bytes, model - slack) << name;
  }
}

TEST(MemoryConsistency, HostAndStorageHoldWhatTheModelPlacesThere) {
  const Case c = run("zinf-0.1t", [](wl::StrategyInput& in) {
    in.zero.set(3, "t");
    in.offload_params.set(wl::OffloadTarget::NVME, "t");
    in.offload_optimizer.set(wl::OffloadTarget::NVME, "t");
    in.recompute.set(wl::Recompute::FULL, "t");
  });
  EXPECT_NEAR(c.result.storage_peak_bytes, c.memory.peak_node.nvme_bytes, 1e-9 * c.memory.peak_node.nvme_bytes);
  EXPECT_NEAR(c.result.host_peak_bytes, c.memory.peak_node.cpu_bytes, 1e-9 * c.memory.peak_node.cpu_bytes);
}

}  // namespace
}  // namespace trainsim::sim
