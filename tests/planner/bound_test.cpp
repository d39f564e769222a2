// The step-time lower bound (sim/step_bound.hpp) against the replay: for a configuration of
// every family, on one node and across nodes, the bound never exceeds the replayed step. The
// planner prunes with it, so a bound above a replay could drop the true best configuration.
#include <gtest/gtest.h>

#include "critical_path.hpp"
#include "program.hpp"
#include "estimator.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "strategy_identity.hpp"

namespace trainsim::planner {
namespace {

struct Case {
  const char* what;
  int gpus;
  std::function<void(wl::Strategy&)> set;
};

wl::Strategy shaped(int gpus, int gpn) {
  wl::Strategy s;
  s.gpus = gpus;
  s.nodes = (gpus + gpn - 1) / gpn;
  s.dp = gpus;
  s.global_batch = 2L * gpus;
  s.seq = 1024;
  return s;
}

void set_parallel(wl::Strategy& s, int tp, int pp) {
  s.tp = tp;
  s.pp = pp;
  s.dp = s.gpus / (tp * pp);
}

TEST(StepBound, NeverAboveTheReplay) {
  const wl::ModelSpec m = wl::builtin_model("megatron-8.3b");  // 72 layers, 32 heads: tp and pp both divide
  const hw::ClusterProfile p = hw::builtin_profile("dgx2");
  using wl::OffloadTarget;
  const std::vector<Case> cases = {
      {"dp", 8, [](wl::Strategy& s) { s.recompute = wl::Recompute::FULL; s.tp = 8; s.dp = 1; }},
      {"zero1", 16, [](wl::Strategy& s) { s.zero_stage = 1; set_parallel(s, 2, 1); s.sp = true; s.recompute = wl::Recompute::SELECTIVE; }},
      {"zero2 on two nodes", 32, [](wl::Strategy& s) { s.zero_stage = 2; set_parallel(s, 4, 1); s.recompute = wl::Recompute::FULL; }},
      {"zero3 on two nodes", 32, [](wl::Strategy& s) { s.zero_stage = 3; s.recompute = wl::Recompute::FULL; s.micro_batch = 2; }},
      {"zero-offload", 4, [](wl::Strategy& s) { s.zero_stage = 2; s.offload_optimizer = OffloadTarget::CPU; s.recompute = wl::Recompute::FULL; }},
      {"zero-offload delayed update", 4,
       [](wl::Strategy& s) { s.zero_stage = 2; s.offload_optimizer = OffloadTarget::CPU; s.delayed_update = true; s.recompute = wl::Recompute::FULL; }},
      {"zero-infinity cpu", 8,
       [](wl::Strategy& s) { s.zero_stage = 3; s.offload_params = OffloadTarget::CPU; s.offload_optimizer = OffloadTarget::CPU; s.recompute = wl::Recompute::FULL; }},
      {"zero-infinity nvme", 16,
       [](wl::Strategy& s) {
         s.zero_stage = 3; s.offload_params = OffloadTarget::NVME; s.offload_optimizer = OffloadTarget::NVME;
         s.recompute = wl::Recompute::FULL; s.offload_activations = wl::ActivationOffload::CPU;
       }},
      {"l2l", 4, [](wl::Strategy& s) { s.l2l = true; s.recompute = wl::Recompute::FULL; }},
      {"hydra", 4, [](wl::Strategy& s) { s.schedule = wl::Schedule::HYDRA; s.shards = 72; s.recompute = wl::Recompute::FULL; }},
      {"gpipe", 16, [](wl::Strategy& s) { set_parallel(s, 4, 4); s.schedule = wl::Schedule::GPIPE; s.global_batch = 16; s.recompute = wl::Recompute::FULL; }},
      {"1f1b across nodes", 32, [](wl::Strategy& s) { set_parallel(s, 8, 4); s.zero_stage = 1; s.sp = true; s.global_batch = 32; s.recompute = wl::Recompute::SELECTIVE; }},
      {"interleaved", 16, [](wl::Strategy& s) { set_parallel(s, 4, 4); s.vpp = 2; s.schedule = wl::Schedule::INTERLEAVED; s.global_batch = 16; s.recompute = wl::Recompute::FULL; }},
      {"pipedream", 8, [](wl::Strategy& s) { set_parallel(s, 2, 4); s.schedule = wl::Schedule::PIPEDREAM; s.global_batch = 8; s.recompute = wl::Recompute::FULL; }},
      {"2bw", 8, [](wl::Strategy& s) { set_parallel(s, 2, 4); s.schedule = wl::Schedule::TWO_BW; s.global_batch = 16; s.recompute = wl::Recompute::FULL; }},
  };
  for (const Case& c : cases) {
    wl::Strategy s = shaped(c.gpus, p.gpus_per_node());
    c.set(s);
    const Config config{&m, &p, s};
    const std::vector<Issue> issues = validate(config);
    ASSERT_TRUE(issues.empty()) << c.what << ": " << issues.front().message;
    const Bound b = bound(config);
    ASSERT_FALSE(b.misfit) << c.what << ": " << b.misfit->message;
    const sim::SimResult r = replay(config, b.memory);
    ASSERT_TRUE(r.simulated) << c.what;
    // An asynchronous step claims no bound (step_bound.hpp); every other one a positive one.
    if (wl::asynchronous(s)) EXPECT_EQ(b.step.seconds, 0) << c.what;
    else EXPECT_GT(b.step.seconds, 0) << c.what;
    EXPECT_LE(b.step.seconds, r.step_time_s * (1 + 1e-9)) << c.what << ": bound " << b.step.seconds << " s above the replay's "
                                                         << r.step_time_s << " s (" << wl::canonical_text(s) << ")";
    // The contention-free walk of the program (sim/critical_path.hpp), where it applies.
    const std::optional<sim::StepWalk> walk = sim::contention_free_step(m, s, p, b.memory);
    EXPECT_EQ(walk.has_value(), s.schedule != wl::Schedule::HYDRA) << c.what;
    if (walk) {
      EXPECT_GT(walk->step_s, 0) << c.what;
      // The replay runs the walk's steps and, where several, a trailing one (sim/ir/program.hpp).
      EXPECT_EQ(sim::program_steps(walk->steps > 1, sim::TrailingStep::SIMULATE), r.steps_simulated) << c.what;
      EXPECT_LE(sim::walk_bound_s(*walk), r.step_time_s * (1 + 1e-9)) << c.what << ": walk " << walk->step_s << " s above the replay's "
                                                                     << r.step_time_s << " s (" << wl::canonical_text(s) << ")";
    }
  }
}

// A valid, fitting configuration's closed-form bound, walk bound and replayed step; nullopt (with
// a test failure) where it is invalid, does not fit or cannot be walked.
struct WalkAndReplay {
  double closed_form_s = 0, walk_bound_s = 0, replay_s = 0;
};
std::optional<WalkAndReplay> walk_and_replay(const wl::ModelSpec& m, const hw::ClusterProfile& p, const wl::Strategy& s) {
  const Config config{&m, &p, s};
  const std::vector<Issue> issues = validate(config);
  EXPECT_TRUE(issues.empty()) << wl::canonical_text(s) << ": " << (issues.empty() ? "" : issues.front().message);
  if (!issues.empty()) return std::nullopt;
  const Bound b = bound(config);
  EXPECT_FALSE(b.misfit) << (b.misfit ? b.misfit->message : "");
  if (b.misfit) return std::nullopt;
  const std::optional<sim::StepWalk> walk = sim::contention_free_step(m, s, p, b.memory);
  EXPECT_TRUE(walk.has_value()) << "no walk";
  if (!walk) return std::nullopt;
  return WalkAndReplay{b.step.seconds, sim::walk_bound_s(*walk), replay(config, b.memory).step_time_s};
}

// Where ZeRO-3's gathers, issued one compute ahead, outlast the computes they hide behind (one
// sample per micro-batch: short computes; many GPUs: slow rings), the closed forms see only that
// the sums of computes and of gathers each fit the step. The walk follows the program's
// dependencies and comes within a few percent of the replay: the planner then replays only the
// configurations that could rank. Delayed update and offload included (the 1T searches' winners).
TEST(WalkBound, TightWhereGathersAreExposed) {
  const wl::ModelSpec m = wl::builtin_model("megatron-8.3b");
  const hw::ClusterProfile p = hw::builtin_profile("dgx2");
  using wl::OffloadTarget;
  for (const bool delayed : {false, true}) {
    for (const int micro_batch : {1, 4}) {
      wl::Strategy s = shaped(64, p.gpus_per_node());
      set_parallel(s, 2, 1);
      s.sp = true;
      s.zero_stage = 3;
      s.recompute = wl::Recompute::FULL;
      s.micro_batch = micro_batch;
      s.global_batch = 4L * s.dp;
      s.offload_optimizer = OffloadTarget::CPU;
      s.offload_params = OffloadTarget::CPU;
      s.delayed_update = delayed;
      const std::optional<WalkAndReplay> wr = walk_and_replay(m, p, s);
      ASSERT_TRUE(wr.has_value()) << wl::canonical_text(s);
      const double w = wr->walk_bound_s;
      const std::string what = wl::canonical_text(s);
      EXPECT_LE(w, wr->replay_s * (1 + 1e-9)) << what;
      EXPECT_GE(w, 0.97 * wr->replay_s) << what << ": walk " << w << " s, replay " << wr->replay_s << " s";
      EXPECT_GE(w, wr->closed_form_s) << what << ": the walk is looser than the closed forms";
    }
  }
}

// Host copies share a GPU's PCIe link evenly with the collectives that cross it to the NICs.
// SimGrid's CM02 model weights a flow's share by its route's latency;
// were the PCIe latency on a copy's route alone, the copy would take nearly all of a shared link
// and this 1T configuration (activation checkpoints and parameters on the CPU beside the
// data-parallel rings, found by the 1T plan at 48 DGX-2) would replay 0.04% faster than its
// contention-free walk, so the walk would be no bound. So the replay delays a copy by the latency
// and moves its bytes as an evenly shared flow (sim/engine/platform.hpp, copy_latency_s); the walk counts
// the same latency.
TEST(WalkBound, HostCopiesBesideCollectivesShareLinksEvenly) {
  const wl::ModelSpec m = wl::builtin_model("megatron-1t");
  const hw::ClusterProfile p = hw::builtin_profile("dgx2");
  wl::Strategy s = shaped(768, p.gpus_per_node());
  set_parallel(s, 4, 1);
  s.zero_stage = 3;
  s.offload_params = wl::OffloadTarget::CPU;
  s.offload_activations = wl::ActivationOffload::CPU;
  s.recompute = wl::Recompute::FULL;
  s.micro_batch = 4;
  s.global_batch = 768;
  s.seq = 2048;
  const std::optional<WalkAndReplay> wr = walk_and_replay(m, p, s);
  ASSERT_TRUE(wr.has_value());
  EXPECT_LE(wr->walk_bound_s, wr->replay_s * (1 + 1e-9)) << "walk bound " << wr->walk_bound_s << " s, replay " << wr->replay_s << " s";
  // No flow shares a link here in a way that slows the critical path: the walk is the replay.
  EXPECT_GE(wr->walk_bound_s, wr->replay_s * (1 - 1e-5)) << "walk bound " << wr->walk_bound_s << " s, replay " << wr->replay_s << " s";
}

// A ring crossing nodes moves its bytes over channels, each leaving and entering a node through a
// GPU's PCIe link and a NIC (sim/engine/platform_links.cpp): on a DGX-2 eight channels at the PCIe
// link's 12 GB/s, not the NICs' 100 GB/s. Walked at the NICs' rate, the 1T plan's data-parallel
// rings without tensor parallelism (20 nodes, parameters and optimizer offloaded, delayed update)
// come out 0.87% below their replays (206.64 s against 208.46 s), under that count's best (tp 2,
// 207.13 s), so each of the 347 such candidates of the 1..128 node search is replayed for
// nothing. On DGX-A100 two NICs and two GPUs share each PCIe switch: a switch's two channels
// enter by different GPUs (sim/engine/pcie_topology.hpp, channel_ends), eight channels of the
// PCIe link's 24 GB/s under the NICs' 25. On ndm-a100-v4, the same node, the profile names its
// NCCL: the walk takes the replay's NCCL latency and protocol bandwidth (nccl_collective.hpp).
TEST(WalkBound, CrossingRingsNoFasterThanTheirChannels) {
  const wl::ModelSpec m = wl::builtin_model("megatron-1t");
  struct Cluster {
    const char* profile;
    int nodes;
    double tight;  // the walk bound at least this share of the replay
  };
  for (const Cluster& c : {Cluster{"dgx2", 20, 0.995}, Cluster{"dgx-a100", 40, 0.99}, Cluster{"ndm-a100-v4", 40, 0.99}}) {
    const hw::ClusterProfile p = hw::builtin_profile(c.profile);
    wl::Strategy s = shaped(c.nodes * p.gpus_per_node(), p.gpus_per_node());
    set_parallel(s, 1, 1);
    s.zero_stage = 3;
    s.offload_params = wl::OffloadTarget::CPU;
    s.offload_optimizer = wl::OffloadTarget::CPU;
    s.recompute = wl::Recompute::FULL;
    s.delayed_update = true;
    s.micro_batch = 1;
    s.global_batch = s.dp;
    s.seq = 2048;
    const std::optional<WalkAndReplay> wr = walk_and_replay(m, p, s);
    ASSERT_TRUE(wr.has_value()) << c.profile;
    EXPECT_LE(wr->walk_bound_s, wr->replay_s * (1 + 1e-9)) << c.profile << ": walk bound " << wr->walk_bound_s << " s, replay " << wr->replay_s << " s";
    EXPECT_GE(wr->walk_bound_s, c.tight * wr->replay_s) << c.profile << ": walk bound " << wr->walk_bound_s << " s, replay " << wr->replay_s << " s";
  }
}

// A pipeline of unequal stages repeats only over as many micro-batches as it has heavy stages
// (sim/micro_batch_fold.hpp): megatron-1t on 72 DGX-2 nodes, 36 stages of 3 and 4 layers, 576
// micro-batches. Its walk extended a line through three counts one apart, 192.301 s, above the
// replay's 192.281 s: the planner could have pruned the best configuration of that count.
TEST(WalkBound, UnequalStagesFoldOverTheirPeriod) {
  const wl::ModelSpec m = wl::builtin_model("megatron-1t");
  const hw::ClusterProfile p = hw::builtin_profile("dgx2");
  wl::Strategy s = shaped(1152, p.gpus_per_node());
  set_parallel(s, 16, 36);
  s.sp = true;
  s.zero_stage = 1;
  s.recompute = wl::Recompute::SELECTIVE;
  s.global_batch = 1152;
  s.seq = 2048;
  const std::optional<WalkAndReplay> wr = walk_and_replay(m, p, s);
  ASSERT_TRUE(wr.has_value()) << wl::canonical_text(s);
  EXPECT_LE(wr->walk_bound_s, wr->replay_s * (1 + 1e-9)) << "walk bound " << wr->walk_bound_s << " s, replay " << wr->replay_s << " s";
}

// The floor under the model states (estimator.cpp) never refuses what the full memory model
// accepts.
TEST(StepBound, MemoryFloorAgreesWithTheMemoryModel) {
  const wl::ModelSpec m = wl::builtin_model("gpt3-175b");
  const hw::ClusterProfile p = hw::builtin_profile("dgx-a100");
  int checked = 0;
  for (int tp : {1, 8}) {
    for (int pp : {1, 4, 16}) {
      for (int zero : {0, 1, 3}) {
        wl::Strategy s = shaped(256, 8);
        set_parallel(s, tp, pp);
        s.zero_stage = pp > 1 ? std::min(zero, 1) : zero;
        const Config c{&m, &p, s};
        if (!validate(c).empty()) continue;
        const Bound b = bound(c);
        const wl::MemoryEstimate full = wl::estimate_memory(m, s, 8);
        const bool fits_full = full.stages[static_cast<std::size_t>(full.peak_stage)].gpu_bytes() <= p.gpu_usable_bytes();
        const bool floor_refuses = b.misfit && b.misfit->reason == "gpu-memory";
        EXPECT_FALSE(fits_full && floor_refuses) << wl::canonical_text(s);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 8);
}

}  // namespace
}  // namespace trainsim::planner
