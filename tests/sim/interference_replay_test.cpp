// The replay applies the measured interference table (sim/engine/engine.cpp): a collective that starts
// while one of its GPUs computes waits the table's (beside - alone) for its kind, size and the
// run's GEMM, and compute beside it runs the table's slowdown longer while it lasts. Exact to
// 1e-9 relative on a 2-GPU toy ring; each replay in its own process (sim/engine/isolation.hpp).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "engine.hpp"
#include "isolation.hpp"
#include "profile_loader.hpp"

namespace trainsim::sim {
namespace {

constexpr double LINK_BYTES_PER_S = 100e9;
constexpr double GEMM_FLOPS = 1e11;  // the run's GEMM, between the table's two GEMMs below

hw::ClusterProfile toy_profile() {
  hw::ClusterProfile p = hw::builtin_profile("dgx2");
  p.gpu.count_per_node = 2;
  p.intra_node.link_GBps = LINK_BYTES_PER_S / 1e9;
  p.intra_node.latency_us = 0;
  p.calibration = {};
  return p;
}

hw::InterferencePoint point(const char* kind, double bytes, double gemm_flops, double extra_us, double slowdown) {
  hw::InterferencePoint e;
  e.collective = kind;
  e.bytes = bytes;
  e.gemm_m = 1000;
  e.gemm_n = 1000;
  e.gemm_k = gemm_flops / 2e6;
  e.gemm_alone_us = 100;
  e.collective_alone_us = 50;
  e.collective_beside_us = 50 + extra_us;
  e.compute_slowdown = slowdown;
  return e;
}

// All-gather: 200 us extra and no slowdown beside the 1e10-FLOP GEMM, 600 us and 1.5x beside the
// 1e12 one; all-reduce: 1000 us. Read at 1e11 FLOPs (halfway in log): all-gather 400 us, 1.25x.
hw::Interference table() {
  hw::Interference t;
  for (double b : {1e6, 1e10}) {
    t.points.push_back(point("all_gather", b, 1e10, 200, 1.0));
    t.points.push_back(point("all_gather", b, 1e12, 600, 1.5));
    t.points.push_back(point("all_reduce", b, 1e10, 1000, 1.0));
    t.points.push_back(point("all_reduce", b, 1e12, 1000, 1.0));
  }
  return t;
}

Op compute(int gpu, double seconds) {
  Op op;
  op.kind = OpKind::COMPUTE;
  op.gpu = gpu;
  op.seconds = seconds;
  return op;
}

Op collective(CollectiveKind kind, double bytes) {
  Op op;
  op.kind = OpKind::COLLECTIVE;
  op.stream = Stream::COMM;
  op.category = Category::COMMUNICATION;
  op.participants = {0, 1};
  op.collective = kind;
  op.ring = 0;
  op.group_size = 2;
  op.bytes = bytes;
  return op;
}

struct Times {
  double collective_end = 0;
  double compute_end = 0;  // GPU 0's compute, when there is one
};

// Replays, on GPUs 0 and 1 of one node joined by a ring, `compute_s` of compute on GPU 0 (none
// if 0) started first and a collective of `bytes` beside it.
Times replay_toy(CollectiveKind kind, double bytes, double compute_s, bool with_table) {
  const std::string out = run_isolated([&] {
    PlatformSpec spec;
    for (int g = 0; g < 2; ++g) spec.gpus.push_back({0, g, {}});
    spec.rings = {RingSpec{{{{0, 0}, {0, 1}}}, false}};
    const hw::ClusterProfile profile = toy_profile();
    Platform platform(profile, spec);
    GraphBuilder b(2);
    OpId work = GraphBuilder::NONE;
    if (compute_s > 0) work = b.add(compute(0, compute_s));  // added first: starts first
    const OpId coll = b.add(collective(kind, bytes));
    RateCaps caps;
    if (with_table) caps.interference = table();
    caps.gemm_flops = GEMM_FLOPS;
    const ReplayResult r = replay(b.graph(), platform, caps);
    return fmt::format("{:.17g} {:.17g}", r.timing[coll].end, work == GraphBuilder::NONE ? 0.0 : r.timing[work].end);
  });
  Times t;
  const auto space = out.find(' ');
  t.collective_end = std::stod(out.substr(0, space));
  t.compute_end = std::stod(out.substr(space + 1));
  return t;
}

void expect_exact(double simulated, double expected) {
  EXPECT_NEAR(simulated, expected, 1e-9 * expected) << "simulated " << simulated << ", by hand " << expected;
}

TEST(InterferenceReplay, AnAllGatherBesideComputeWaitsAndSlowsItByTheTable) {
  const double S = 1e9;
  const double alone = S / 2 / LINK_BYTES_PER_S;  // (n-1)/n S over the ring's 100 GB/s hop: 5 ms
  expect_exact(replay_toy(CollectiveKind::ALL_GATHER, S, 0, true).collective_end, alone);  // nothing computes: no wait
  expect_exact(replay_toy(CollectiveKind::ALL_GATHER, S, 1.0, false).collective_end, alone);  // no table: no wait
  const Times t = replay_toy(CollectiveKind::ALL_GATHER, S, 1.0, true);
  const double extra = 400e-6;  // the table at 1e9 bytes and 1e11 FLOPs
  expect_exact(t.collective_end, alone + extra);
  // For the collective's whole time the compute runs at 1/1.25 of its speed: it loses 1/5 of it.
  expect_exact(t.compute_end, 1.0 + (alone + extra) * (1 - 1 / 1.25));
}

TEST(InterferenceReplay, TheTableIsReadByCollectiveKind) {
  const Times t = replay_toy(CollectiveKind::ALL_REDUCE, 1e9, 1.0, true);
  expect_exact(t.collective_end, 1e9 / LINK_BYTES_PER_S + 1000e-6);  // 2(n-1)/n S at 100 GB/s, then 1 ms
  expect_exact(t.compute_end, 1.0);                                  // the table's slowdown is 1
  // Reduce-scatter has no points in this table: no effect.
  expect_exact(replay_toy(CollectiveKind::REDUCE_SCATTER, 1e9, 1.0, true).collective_end, 1e9 / 2 / LINK_BYTES_PER_S);
}

}  // namespace
}  // namespace trainsim::sim
