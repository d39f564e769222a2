// The replay's memory timeline against the closed-form memory model (DESIGN.md: "peak memory is
// the timeline's maximum"; issue: equal wherever both describe the same thing).
#include <gtest/gtest.h>

#include "memory_model.hpp"
#include "model_params.hpp"
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

// The DDP case of the test above, worked by hand (GPT-2 XL, b = 1, s = 1024, h = 1600, a = 25, 48
// layers; sbh = 1,638,400): the model states, 16 bytes for each of its 1,557,611,200 parameters
// (ZeRO Sec. 3.1; Hugging Face gpt2-xl's count); every layer's activations at the end of the
// forward, sbh (34 + 5as/h) = 114 sbh each, and 5 sbh outside the layers (Korthikanti et al. 2022,
// Table 2 and Sec. 4.3); the fp32 logits, 4 b s V = 4 x 1024 x 50257; DDP's 25 MiB gradient bucket
// (torch DistributedDataParallel's bucket_cap_mb default).
TEST(MemoryConsistency, DdpReplayPeakIsWorkedByHand) {
  const Case c = run("gpt2-1.5b", [](wl::StrategyInput& in) { in.zero.set(0, "t"); });
  ASSERT_EQ(c.strategy.micro_batch, 1);
  ASSERT_EQ(c.strategy.seq, 1024);
  const double sbh = 1024.0 * 1600;
  const double expected = 16 * 1557611200.0 + (48 * 114 + 5) * sbh + 4 * 1024.0 * 50257 + 25 * 1024.0 * 1024;
  EXPECT_NEAR(c.result.peak_memory_bytes, expected, 1.0);  // 34,127,363,072 bytes
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

// Pipelines: each stage's replayed peak against the memory model's stage (Korthikanti et al.
// Sec. 4.3: under 1F1B stage i holds min(m, p - i) micro-batches of activations, under GPipe all
// m; PipeDream stashes p - i weight versions, 2BW two where the next step's micro-batches are in
// flight). The replay holds what its schedule leaves alive; the model counts it in closed form.
TEST(MemoryConsistency, PipelineStagesHoldWhatTheirScheduleLeavesAlive) {
  const hw::ClusterProfile a100 = hw::builtin_profile("dgx-a100");
  for (const auto& [schedule, name] : std::vector<std::pair<wl::Schedule, const char*>>{
           {wl::Schedule::ONE_F_ONE_B, "1F1B"}, {wl::Schedule::GPIPE, "GPipe"},
           {wl::Schedule::PIPEDREAM, "PipeDream"}, {wl::Schedule::TWO_BW, "2BW"}}) {
    wl::StrategyInput in;
    in.gpus.set(4, "t");
    in.pp.set(4, "t");
    in.schedule.set(schedule, "t");
    in.global_batch.set(16, "t");
    in.recompute.set(wl::Recompute::SELECTIVE, "t");
    const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model("gpt2-1.5b"), {8, 560, "dgx-a100"});
    const wl::MemoryEstimate est = wl::estimate_memory(r.model, r.strategy, 8);
    const SimResult res = simulate(r.model, r.strategy, a100, est);
    ASSERT_EQ(res.per_gpu.size(), 4u);
    for (std::size_t st = 0; st < 4; ++st) {
      const double model = est.stages[st].gpu_bytes();
      EXPECT_NEAR(res.per_gpu[st].peak_memory_bytes, model, 1e-9 * model) << name << " stage " << st;
    }
  }
  // Stage 2 of the 1F1B case worked by hand (16 micro-batches of 1, s = 1024, h = 1600, a = 25; sbh =
  // 1,638,400): the partition gives it 13 layers of 12h^2 + 13h = 30,740,800 parameters at 16 bytes;
  // 1F1B keeps p - i = 2 micro-batches of them, 34 sbh a layer under selective recompute, and the
  // first recompute adds one layer's attention core, 5as/h sbh = 80 sbh (Korthikanti et al. 2022,
  // Table 2 and Sec. 4.3); the 25 MiB gradient bucket.
  {
    wl::StrategyInput in;
    in.gpus.set(4, "t");
    in.pp.set(4, "t");
    in.schedule.set(wl::Schedule::ONE_F_ONE_B, "t");
    in.global_batch.set(16, "t");
    in.recompute.set(wl::Recompute::SELECTIVE, "t");
    const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model("gpt2-1.5b"), {8, 560, "dgx-a100"});
    const wl::MemoryEstimate est = wl::estimate_memory(r.model, r.strategy, 8);
    ASSERT_EQ(est.stages[2].params_on_rank, 13 * 30740800.0);
    const SimResult res = simulate(r.model, r.strategy, a100, est);
    const double sbh = 1024.0 * 1600;
    const double expected = 16 * 13 * 30740800.0 + 25 * 1024.0 * 1024 + (2 * 13 * 34 + 80) * sbh;
    EXPECT_NEAR(res.per_gpu[2].peak_memory_bytes, expected, 1.0);  // 7,999,718,400 bytes
  }
  // The interleaved schedule: the model counts the average chunk of the stage (Korthikanti et al.
  // Sec. 4.3); the replay holds the actual chunks of a partition balanced by cost, whose first and
  // last virtual stages hold fewer layers. They differ by a few percent, not more.
  wl::StrategyInput in;
  in.gpus.set(4, "t");
  in.pp.set(4, "t");
  in.vpp.set(2, "t");
  in.global_batch.set(16, "t");
  const wl::ResolvedInputs r = wl::resolve_inputs(in, wl::builtin_model("gpt2-1.5b"), {8, 560, "dgx-a100"});
  const wl::MemoryEstimate est = wl::estimate_memory(r.model, r.strategy, 8);
  const SimResult res = simulate(r.model, r.strategy, a100, est);
  for (std::size_t st = 0; st < 4; ++st) {
    const double model = est.stages[st].gpu_bytes();
    EXPECT_NEAR(res.per_gpu[st].peak_memory_bytes, model, 0.05 * model) << "interleaved stage " << st;
  }
}

// Host memory and storage as the replay's allocations leave them, against ZeRO-Infinity's own
// accounting worked by hand (not the memory model's numbers): on one DGX-2 with parameters and
// optimizer states on NVMe, the node's storage holds every parameter's 2 + 2 + 12 bytes (ZeRO
// Sec. 5; the 16 ranks hold 1/16 each); host memory holds DeepSpeed's pinned staging buffers
// (offload_param: 5 buffers of 1e8 fp16 elements; offload_optimizer: 4 fp32 sub-groups); and
// checkpoints offloaded to the host add, at their peak (the end of the forward), every layer's
// input (2 s b h bytes, Korthikanti et al. Sec. 4.2.1) of every rank.
TEST(MemoryConsistency, HostAndStorageHoldWhatZeroInfinityPlacesThere) {
  auto nvme = [](bool offload_checkpoints) {
    return [offload_checkpoints](wl::StrategyInput& in) {
      in.zero.set(3, "t");
      in.offload_params.set(wl::OffloadTarget::NVME, "t");
      in.offload_optimizer.set(wl::OffloadTarget::NVME, "t");
      in.recompute.set(wl::Recompute::FULL, "t");
      if (offload_checkpoints) in.offload_activations.set(wl::ActivationOffload::CPU, "t");
    };
  };
  const Case c = run("zinf-0.1t", nvme(false));
  const double P = wl::total_params(c.model);
  const double ranks = 16;
  // Each rank's shard of each gather unit is padded to whole elements: at most one element of
  // 16 bytes per unit and rank.
  const double padding = 16.0 * ranks * (4.0 * static_cast<double>(c.model.layers) + 2);
  EXPECT_NEAR(c.result.storage_peak_bytes, 16.0 * P, padding) << "16 bytes per parameter on the node's storage";
  const double shard = P / ranks;
  const double pinned = ranks * (5 * 1e8 * 2 + 4 * std::min(1e9, shard) * 4);
  EXPECT_NEAR(c.result.host_peak_bytes, pinned, 1e-9 * pinned);

  const Case k = run("zinf-0.1t", nvme(true));
  const double s = static_cast<double>(k.strategy.seq), b = static_cast<double>(k.strategy.micro_batch),
               h = static_cast<double>(k.model.hidden), L = static_cast<double>(k.model.layers);
  const double checkpoints = ranks * L * 2 * s * b * h;
  EXPECT_NEAR(k.result.host_peak_bytes - c.result.host_peak_bytes, checkpoints, 1e-9 * checkpoints);
}

}  // namespace
}  // namespace trainsim::sim
