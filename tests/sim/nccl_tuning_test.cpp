// NCCL's tuning model (sim/engine/nccl_tuning.hpp) against numbers worked by hand from NCCL's
// tables (NVIDIA/nccl v2.12.10-1 src/graph/tuning.cc: baseLat, hwLat, llMaxBws, perChMaxTreeBws,
// ll128MaxBwPerCh; search.cc: the channel speeds), and the replay of one collective on the
// ndm-a100-v4 profile against nccl-tests figures published for its machine.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "engine.hpp"
#include "isolation.hpp"
#include "nccl_collective.hpp"
#include "nccl_tuning.hpp"
#include "pcie_topology.hpp"
#include "placement.hpp"
#include "profile_loader.hpp"

namespace trainsim::sim {
namespace {

// The communicator of a data-parallel group over every GPU of 128 NDm A100 v4 nodes: 8 channels
// (one per 200 Gb/s NIC) of 24 GB/s, A100 (sm80), AMD hosts.
NcclComm ndm_1024() {
  NcclComm c;
  c.ranks = 1024;
  c.nodes = 128;
  c.gpu_sm = 80;
  c.amd_cpu = true;
  c.channels = 8;
  c.channel_GBps = 24;
  return c;
}

// Ring latencies grow with the ring's steps: an all-gather over 1024 ranks on 128 nodes has
// 1023 steps, 127 of them across the network (nodes - 1). Simple: 8.4 + 896 x 3.4 + 127 x 28;
// LL: 3.6 + 896 x (0.47 x 1.8) + 127 x 2.7 (an intra-node LL step costs 1.8 times more on
// several nodes); LL128: 10 + 896 x 1.9 + 127 x 4.0.
TEST(NcclTuning, RingLatencyGrowsWithTheSteps) {
  const NcclComm c = ndm_1024();
  const double bytes = 1e6;
  EXPECT_NEAR(nccl_cost(CollectiveKind::ALL_GATHER, NcclAlgo::RING, NcclProto::SIMPLE, bytes, c).latency_us, 6610.8, 1e-6);
  EXPECT_NEAR(nccl_cost(CollectiveKind::ALL_GATHER, NcclAlgo::RING, NcclProto::LL, bytes, c).latency_us, 1104.516, 1e-6);
  EXPECT_NEAR(nccl_cost(CollectiveKind::ALL_GATHER, NcclAlgo::RING, NcclProto::LL128, bytes, c).latency_us, 2220.4, 1e-6);
  // Sixteen nodes (128 ranks): 8.4 + 112 x 3.4 + 15 x 28.
  NcclComm small = c;
  small.ranks = 128;
  small.nodes = 16;
  EXPECT_NEAR(nccl_cost(CollectiveKind::REDUCE_SCATTER, NcclAlgo::RING, NcclProto::SIMPLE, bytes, small).latency_us, 809.2, 1e-6);
}

// Bandwidth per protocol: busBw = 8 x 24 = 192 GB/s (under A100's 235 cap); LL a quarter of it,
// at most llMaxBws[AMD][4+ nodes] = 19.0; LL128 0.92 of it, at most 20 per channel (160); the
// ring's algorithm bandwidth is busBw x n / (n - 1) for an all-gather.
TEST(NcclTuning, RingBandwidthPerProtocol) {
  const NcclComm c = ndm_1024();
  const double ratio = 1024.0 / 1023.0;
  EXPECT_NEAR(nccl_cost(CollectiveKind::ALL_GATHER, NcclAlgo::RING, NcclProto::SIMPLE, 1e9, c).algbw_GBps, 192 * ratio, 1e-4);
  EXPECT_NEAR(nccl_cost(CollectiveKind::ALL_GATHER, NcclAlgo::RING, NcclProto::LL, 1e9, c).algbw_GBps, 19.0 * ratio, 1e-4);
  EXPECT_NEAR(nccl_cost(CollectiveKind::ALL_GATHER, NcclAlgo::RING, NcclProto::LL128, 1e9, c).algbw_GBps, 160 * ratio, 1e-4);
  // All-gather has no tree.
  EXPECT_LT(nccl_cost(CollectiveKind::ALL_GATHER, NcclAlgo::TREE, NcclProto::SIMPLE, 1e9, c).time_us, 0);
  // A100 caps the bus bandwidth at 235: 16 channels of 24 give 384, capped.
  NcclComm wide = c;
  wide.channels = 16;
  EXPECT_NEAR(nccl_cost(CollectiveKind::ALL_GATHER, NcclAlgo::RING, NcclProto::SIMPLE, 1e9, wide).algbw_GBps, 235 * ratio, 1e-4);
  // LL128 runs only on Volta or Ampere: on sm90 2.12 leaves it off.
  NcclComm hopper = c;
  hopper.gpu_sm = 90;
  EXPECT_LT(nccl_cost(CollectiveKind::ALL_GATHER, NcclAlgo::RING, NcclProto::LL128, 1e9, hopper).time_us, 0);
}

// The protocol by size at 1024 ranks (time = latency + S / (1000 x algbw), us): LL (1104.516 +
// S / 19018.6) against LL128 (2220.4 + S / 160156) cross at S = 1115.884 / (1/19018.6 - 1/160156),
// 24.1 MB; LL128 against Simple (6610.8 + S / 192188) at S = 4390.4 / (1/160156 - 1/192188),
// 4.22 GB. A 906 MB all-gather (a GPT-3 175B layer's fc1 weight, fp16) runs LL128.
TEST(NcclTuning, ProtocolByMessageSize) {
  const NcclComm c = ndm_1024();
  const double ll_ll128 = 1115.884 / (1.0 / (19.0 * 1024 / 1023 * 1000) - 1.0 / (160.0 * 1024 / 1023 * 1000));
  EXPECT_EQ(nccl_choose(CollectiveKind::ALL_GATHER, ll_ll128 * 0.9, c).proto, NcclProto::LL);
  EXPECT_EQ(nccl_choose(CollectiveKind::ALL_GATHER, ll_ll128 * 1.1, c).proto, NcclProto::LL128);
  const double ll128_simple = 4390.4 / (1.0 / (160.0 * 1024 / 1023 * 1000) - 1.0 / (192.0 * 1024 / 1023 * 1000));
  EXPECT_NEAR(ll_ll128, 24.08e6, 0.01e6);
  EXPECT_NEAR(ll128_simple, 4.22e9, 0.01e9);
  EXPECT_EQ(nccl_choose(CollectiveKind::ALL_GATHER, 906092544, c).proto, NcclProto::LL128);
  EXPECT_EQ(nccl_choose(CollectiveKind::ALL_GATHER, ll128_simple * 0.95, c).proto, NcclProto::LL128);
  EXPECT_EQ(nccl_choose(CollectiveKind::ALL_GATHER, ll128_simple * 1.05, c).proto, NcclProto::SIMPLE);
  const NcclChoice big = nccl_choose(CollectiveKind::ALL_GATHER, 906092544, c);
  EXPECT_NEAR(big.time_us, 2220.4 + 906092544 / (160.0 * 1024 / 1023 * 1000), 1e-3);
}

// All-reduce at 1024 ranks: the tree's depth is log2(nodes), its latency 2 x ((ppn - 1) x intra +
// log2(128) x inter): Simple 2 x (7 x 28 + 7 x 28) = 784, LL 4.4 + 2 x (7 x 0.52 x 1.8 + 7 x 5.0)
// = 87.504, LL128 4.4 + 2 x (7 x 1.25 + 7 x 8.5) = 140.9; the ring's 2046 steps, 256 of them
// (2 x nodes) across the network: 8.4 + 1790 x 3.4 + 256 x 28 = 13262.4, times 1.9 from 4 MiB up
// ("plateau effect of ring"). Tree bandwidth: min(192 x 0.92, 8 x 17.8) = 142.4, half of it as
// algorithm bandwidth. For 1 GiB (no tree correction from 256 MB up) the tree's Simple wins:
// 784 + 2^30 / 71200.
TEST(NcclTuning, AllReduceTakesTheTreeAtScale) {
  const NcclComm c = ndm_1024();
  EXPECT_NEAR(nccl_cost(CollectiveKind::ALL_REDUCE, NcclAlgo::TREE, NcclProto::SIMPLE, 1e9, c).latency_us, 784, 1e-6);
  EXPECT_NEAR(nccl_cost(CollectiveKind::ALL_REDUCE, NcclAlgo::TREE, NcclProto::LL, 1e9, c).latency_us, 87.504, 1e-6);
  EXPECT_NEAR(nccl_cost(CollectiveKind::ALL_REDUCE, NcclAlgo::TREE, NcclProto::LL128, 1e9, c).latency_us, 140.9, 1e-6);
  EXPECT_NEAR(nccl_cost(CollectiveKind::ALL_REDUCE, NcclAlgo::RING, NcclProto::SIMPLE, 1e3, c).latency_us, 13262.4, 1e-6);
  EXPECT_NEAR(nccl_cost(CollectiveKind::ALL_REDUCE, NcclAlgo::RING, NcclProto::SIMPLE, 4194304, c).latency_us, 13262.4 * 1.9, 1e-6);
  const double gib = 1073741824.0;
  const NcclChoice best = nccl_choose(CollectiveKind::ALL_REDUCE, gib, c);
  EXPECT_EQ(best.algo, NcclAlgo::TREE);
  EXPECT_EQ(best.proto, NcclProto::SIMPLE);
  EXPECT_NEAR(best.algbw_GBps, 71.2, 1e-9);
  EXPECT_NEAR(best.time_us, 784 + gib / 71200, 1e-6);
  // 1 MiB: log2(2^20 / 64) = 14, tree correction 0.5 for Simple, 0.6 for LL128, 0.4 for LL.
  EXPECT_NEAR(nccl_cost(CollectiveKind::ALL_REDUCE, NcclAlgo::TREE, NcclProto::SIMPLE, 1048576, c).algbw_GBps, 71.2 * 0.5, 1e-9);
}

// NCCL's search over one node: 300 GB/s of NVLink gives 10 channels of 30 (the most bandwidth;
// 44 x 6 = 264), duplicated to 16 (MAXCHANNELS / 2) at 30 / ceil(16 / 10) = 15: 240 GB/s. On
// DGX-2's 150: 5 x 30, duplicated to 10 x 15.
TEST(NcclTuning, IntraNodeChannelSearch) {
  int channels = 0;
  double speed = 0;
  nccl_intra_channels(300, channels, speed);
  EXPECT_EQ(channels, 16);
  EXPECT_DOUBLE_EQ(speed, 15);
  nccl_intra_channels(150, channels, speed);
  EXPECT_EQ(channels, 10);
  EXPECT_DOUBLE_EQ(speed, 15);
  EXPECT_DOUBLE_EQ(nccl_inter_channel_GBps(24.0), 24.0);
  EXPECT_DOUBLE_EQ(nccl_inter_channel_GBps(12.5), 12.0);
}

// One all-reduce replayed on ndm-a100-v4 (its platform, NCCL's latency and bandwidth cap, the
// engine), as nccl-tests reports it: busbw = 2 (n - 1) / n x S / t.
double replayed_busbw(int nodes, double bytes) {
  const hw::ClusterProfile p = hw::builtin_profile("ndm-a100-v4");
  const int ranks = nodes * p.gpus_per_node();
  const Placement placement(1, ranks, 1, p.gpus_per_node());
  const std::vector<int> members = placement.group(0, GroupKind::DATA);
  const std::optional<NcclComm> comm = nccl_comm(p, PcieTopology(p), placement, members);
  EXPECT_TRUE(comm.has_value());
  const CollectiveTiming timing = collective_timing(p, CollectiveKind::ALL_REDUCE, bytes, ranks, nodes, comm);
  const std::string out = run_isolated([&] {
    PlatformSpec spec;
    RingSpec ring;
    ring.rings.emplace_back();
    for (int m : members) {
      const GpuLocation at = placement.location(m);
      spec.gpus.push_back({at.node, at.gpu, {}});
      ring.rings.front().push_back({at.node, at.gpu});
    }
    spec.rings.push_back(ring);
    Platform platform(p, spec);
    GraphBuilder b(static_cast<int>(spec.gpus.size()));
    Op op;
    op.kind = OpKind::COLLECTIVE;
    op.stream = Stream::COMM;
    op.category = Category::COMMUNICATION;
    for (int g = 0; g < ranks; ++g) op.participants.push_back(g);
    op.collective = CollectiveKind::ALL_REDUCE;
    op.ring = 0;
    op.group_size = ranks;
    op.latency_s = timing.latency_s;
    op.bytes = bytes;
    b.add(op);
    RateCaps caps;
    caps.per_op = {timing.hop_cap_Bps};
    return fmt::format("{:.17g}", replay(b.graph(), platform, caps).makespan);
  });
  return 2.0 * (ranks - 1) / ranks * bytes / std::stod(out) / 1e9;
}

// One NDm A100 v4 VM: nccl-tests' all-reduce bus bandwidth at 8 GiB, 231.58 GB/s (Azure,
// AI-benchmarking-guide, Azure_Results/ND_A100_v4_results.md, "NCCL Bandwidth", NCCL 2.18.5).
// NCCL's A100 cap of 235 GB/s holds the ring below the 300 GB/s NVLink ports: within 3%.
TEST(NcclReplay, OneNdmNodeAllReduceMatchesPublishedBusBandwidth) {
  const double busbw = replayed_busbw(1, 8589934592.0);
  EXPECT_NEAR(busbw, 231.58, 0.03 * 231.58) << busbw;
}

// Across nodes of 8 x 200 Gb/s HDR NICs (DGX A100, the NDm A100 v4's NIC complement), NCCL's
// maintainers measure 192 GB/s all-reduce bus bandwidth (NVIDIA/nccl issue 812, 2023-03-31). Two
// nodes, 1 GiB: NCCL's model takes the ring (Simple), eight channels of 24 GB/s, one per NIC,
// each GPU's PCIe link carrying one channel each way: within 5%.
TEST(NcclReplay, TwoNdmNodesAllReduceMatchesPublishedBusBandwidth) {
  const double busbw = replayed_busbw(2, 1073741824.0);
  EXPECT_NEAR(busbw, 192.0, 0.05 * 192.0) << busbw;
}

}  // namespace
}  // namespace trainsim::sim
