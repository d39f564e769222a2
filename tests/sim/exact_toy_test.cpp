// Exactness of the replay on toy graphs: simulated times equal hand calculation to 1e-6
// relative. Each simulation runs in its own process (sim/engine/isolation.hpp).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "engine.hpp"
#include "isolation.hpp"
#include "profile_loader.hpp"
#include "test_support.hpp"

namespace trainsim::sim {
namespace {

// A 4-GPU node with round numbers: NVSwitch 100 GB/s per GPU, PCIe 10 GB/s per GPU, two GPUs per
// switch behind a 10 GB/s uplink, 20 GB/s host path, one drive reading 2 GB/s and writing 1 GB/s.
hw::ClusterProfile toy_profile() {
  hw::ClusterProfile p = hw::builtin_profile("dgx2");
  p.gpu.count_per_node = 4;
  p.intra_node.link_GBps = 100;
  p.intra_node.latency_us = 3;
  p.pcie.link_GBps = 10;
  p.pcie.latency_us = 5;
  p.pcie.gpus_per_switch = 2;
  p.pcie.switch_uplink_GBps = 10;
  p.pcie.host_aggregate_GBps = 20;
  p.storage.count = 1;
  p.storage.read_GBps = 2;
  p.storage.write_GBps = 1;
  return p;
}

constexpr double PCIE_LATENCY = 5e-6;
constexpr double NVLINK_LATENCY = 3e-6;

// The four GPUs of node 0, each simulated on its own.
PlatformSpec one_node(std::vector<RingSpec> rings = {}) {
  PlatformSpec spec;
  for (int g = 0; g < 4; ++g) spec.gpus.push_back({0, g, {}});
  spec.rings = std::move(rings);
  return spec;
}

double simulate_on(const PlatformSpec& spec, const std::function<void(GraphBuilder&)>& build,
                const hw::ClusterProfile& profile = toy_profile()) {
  const std::string out = run_isolated([&] {
    Platform platform(profile, spec);
    GraphBuilder b(static_cast<int>(spec.gpus.size()));
    build(b);
    return fmt::format("{:.17g}", replay(b.graph(), platform).makespan);
  });
  return std::stod(out);
}

double simulate(const std::vector<RingSpec>& rings, const std::function<void(GraphBuilder&)>& build) {
  return simulate_on(one_node(rings), build);
}

RingSpec ring_of(std::initializer_list<int> gpus, bool reaches_mirrors = false) {
  std::vector<RingLocation> ring;
  for (int g : gpus) ring.push_back({0, g});
  return RingSpec{{ring}, reaches_mirrors};
}

Op copy_to(int gpu, double bytes) {
  Op op;
  op.kind = OpKind::COPY_H2D;
  op.stream = Stream::H2D;
  op.category = Category::OFFLOAD_IO;
  op.gpu = gpu;
  op.bytes = bytes;
  return op;
}

Op compute(int gpu, double seconds) {
  Op op;
  op.kind = OpKind::COMPUTE;
  op.gpu = gpu;
  op.seconds = seconds;
  return op;
}

void expect_exact(double simulated, double expected) {
  EXPECT_NEAR(simulated, expected, 1e-6 * expected) << "simulated " << simulated << ", by hand " << expected;
}

TEST(ExactToy, OneTransfer) {
  // latency + bytes / bottleneck (PCIe link and switch uplink both 10 GB/s).
  expect_exact(simulate({}, [](GraphBuilder& b) { b.add(copy_to(0, 1e9)); }), PCIE_LATENCY + 0.1);
}

TEST(ExactToy, TwoFlowsShareASwitchUplink) {
  // GPUs 0 and 1 sit behind one 10 GB/s uplink: 5 GB/s each.
  expect_exact(simulate({}, [](GraphBuilder& b) {
                 b.add(copy_to(0, 1e9));
                 b.add(copy_to(1, 1e9));
               }),
               PCIE_LATENCY + 0.2);
  // GPUs 0 and 2 use different switches and share only the 20 GB/s host path: 10 GB/s each.
  expect_exact(simulate({}, [](GraphBuilder& b) {
                 b.add(copy_to(0, 1e9));
                 b.add(copy_to(2, 1e9));
               }),
               PCIE_LATENCY + 0.1);
}

TEST(ExactToy, RingAllReduce) {
  // 2(n-1) steps of latency plus 2(n-1)/n S over the 100 GB/s NVLink ports (nccl-tests' ring).
  const double S = 4e9;
  const double t = simulate({ring_of({0, 1, 2, 3})}, [&](GraphBuilder& b) {
    Op op;
    op.kind = OpKind::COLLECTIVE;
    op.stream = Stream::COMM;
    op.category = Category::COMMUNICATION;
    op.participants = {0, 1, 2, 3};
    op.collective = CollectiveKind::ALL_REDUCE;
    op.ring = 0;
    op.group_size = 4;
    op.latency_s = ring_latency_s(toy_profile(), ring_steps(CollectiveKind::ALL_REDUCE, 4), 4, 1);
    op.bytes = S;
    b.add(op);
  });
  expect_exact(t, 6 * NVLINK_LATENCY + 2.0 * 3 / 4 * S / 100e9);
}

TEST(ExactToy, StorageReadOverlapsCompute) {
  auto read = [](double bytes) {
    Op op;
    op.kind = OpKind::STORAGE_READ;
    op.stream = Stream::NODE;
    op.category = Category::OFFLOAD_IO;
    op.gpu = 0;
    op.bytes = bytes;
    return op;
  };
  // 2 GB at 2 GB/s (1 s) beside 1.5 s of compute: the compute bounds the step.
  expect_exact(simulate({}, [&](GraphBuilder& b) {
                 b.add(read(2e9));
                 b.add(compute(0, 1.5));
               }),
               1.5);
  // Beside 0.5 s of compute, the read does.
  expect_exact(simulate({}, [&](GraphBuilder& b) {
                 b.add(read(2e9));
                 b.add(compute(0, 0.5));
               }),
               1.0);
}

// The storage's measured mixed figure (reads and writes in flight together moved 0.6 + 0.6 GB/s):
// overlapping reads and writes share 1.2 GB/s max-min fairly; either alone keeps its own rate.
TEST(ExactToy, StorageReadsAndWritesTogetherShareTheMixedRate) {
  auto io = [](OpKind kind, double bytes) {
    Op op;
    op.kind = kind;
    op.stream = Stream::NODE;
    op.category = Category::OFFLOAD_IO;
    op.gpu = 0;
    op.bytes = bytes;
    return op;
  };
  hw::ClusterProfile mixed = toy_profile();
  mixed.storage.mixed_read_GBps = 0.6;
  mixed.storage.mixed_write_GBps = 0.6;
  auto both = [&](GraphBuilder& b) {
    b.add(io(OpKind::STORAGE_READ, 1.2e9));
    b.add(io(OpKind::STORAGE_WRITE, 0.6e9));
  };
  // Separate channels: the read 0.6 s at 2 GB/s, the write 0.6 s at 1 GB/s, side by side.
  expect_exact(simulate_on(one_node(), both), 0.6);
  // Shared: 0.6 GB/s each until the write ends (1.0 s), then the read's last 0.6 GB alone at 2 GB/s.
  expect_exact(simulate_on(one_node(), both, mixed), 1.0 + 0.3);
  // Alone, each at its own rate.
  expect_exact(simulate_on(one_node(), [&](GraphBuilder& b) { b.add(io(OpKind::STORAGE_READ, 2e9)); }, mixed), 1.0);
  expect_exact(simulate_on(one_node(), [&](GraphBuilder& b) { b.add(io(OpKind::STORAGE_WRITE, 1e9)); }, mixed), 1.0);
  // One after the other: no cap in between.
  expect_exact(simulate_on(one_node(), [&](GraphBuilder& b) {
                 const OpId r = b.add(io(OpKind::STORAGE_READ, 2e9));
                 b.add(io(OpKind::STORAGE_WRITE, 1e9), {r});
               }, mixed),
               2.0);
}

TEST(ExactToy, PrefetchHiddenBehindComputeAndNot) {
  // Layer 1's parameters (1 GB, 0.1 s + latency) are prefetched while layer 0 computes.
  auto two_layers = [](double layer0_seconds) {
    return [layer0_seconds](GraphBuilder& b) {
      const OpId fetch = b.add(copy_to(0, 1e9));
      b.add(compute(0, layer0_seconds));
      b.add(compute(0, 0.2), {fetch});
    };
  };
  expect_exact(simulate({}, two_layers(0.2)), 0.2 + 0.2);                    // hidden
  expect_exact(simulate({}, two_layers(0.05)), PCIE_LATENCY + 0.1 + 0.2);   // exposed
}

// Two nodes of the toy with two 100 Gb/s NICs each (2 us) and a fat tree (1 us): GPU 0 of each
// node simulated, one transfer from the first to the second.
hw::ClusterProfile two_node_profile() {
  hw::ClusterProfile p = toy_profile();
  p.nic.count = 2;
  p.nic.link_Gbps = 100;
  p.nic.latency_us = 2;
  p.inter_node.latency_us = 1;
  p.inter_node.topology = hw::InterNodeTopology::FAT_TREE;
  p.inter_node.oversubscription = 1;
  return p;
}

PlatformSpec two_nodes() {
  PlatformSpec spec;
  spec.gpus = {{0, 0, {}}, {1, 0, {}}};
  spec.transfers = {{0, 1}};
  return spec;
}

// An op of simulated GPU 0 on its node's stream (no stream order).
Op node_op_of_gpu0(OpKind kind, Category category) {
  Op op;
  op.kind = kind;
  op.stream = Stream::NODE;
  op.category = category;
  op.gpu = 0;
  return op;
}

// GPU 0 of node 0 sends `bytes` to GPU 0 of node 1 (transfer 0 of two_nodes()).
Op send_to_next_node(double bytes) {
  Op op = node_op_of_gpu0(OpKind::TRANSFER, Category::COMMUNICATION);
  op.peer = 1;
  op.transfer = 0;
  op.bytes = bytes;
  return op;
}

TEST(ExactToy, PipelineTransferBetweenNodes) {
  // GPU 0 of node 0 to GPU 0 of node 1 through GPUDirect: PCIe 10 GB/s, NIC 100 Gb/s = 12.5 GB/s:
  // the PCIe links bound it; NIC and switch latencies before.
  const double t = simulate_on(two_nodes(), [](GraphBuilder& b) { b.add(send_to_next_node(1e9)); }, two_node_profile());
  expect_exact(t, 3e-6 + 0.1);
}

TEST(ExactToy, ACopyAndATransferShareAPcieLinkEvenly) {
  // GPU 0 of node 0 copies 2 GB to its host while it sends 1 GB to node 1; both cross its 10 GB/s
  // PCIe link, so each moves at 5 GB/s while both run. The send starts after its 3 us of network
  // latency and runs alone until the copy's 5 us of PCIe latency end: 2e4 bytes at 10 GB/s, the
  // rest at 5 GB/s, done at 0.2 s + 1 us; node 1 then computes for 1 s. When the copy's route
  // carried its latency, SimGrid's CM02 weighted its share by it and the copy took nearly the whole
  // link: the send ended after the copy, at 0.3 s (sim/engine/platform.hpp, copy_latency_s).
  const double t = simulate_on(two_nodes(), [](GraphBuilder& b) {
    Op out = copy_to(0, 2e9);
    out.kind = OpKind::COPY_D2H;
    out.stream = Stream::D2H;
    b.add(out);
    const OpId sent = b.add(send_to_next_node(1e9));
    b.add(compute(1, 1.0), {sent});
  }, two_node_profile());
  expect_exact(t, 0.2 + 1e-6 + 1.0);
}

TEST(ExactToy, AFoldedGpuCountsItsCopiesOnSharedLinks) {
  // GPU 0 standing for itself and GPU 1 (they share a switch uplink of 10 GB/s): its copy runs at
  // 5 GB/s, as the two flows of the unfolded node do (TwoFlowsShareASwitchUplink).
  PlatformSpec spec;
  spec.gpus = {{0, 0, {0, 1}}};
  expect_exact(simulate_on(spec, [](GraphBuilder& b) { b.add(copy_to(0, 1e9)); }), PCIE_LATENCY + 0.2);
  // Standing for GPUs 0 and 2 (different switches, one 20 GB/s host path): 10 GB/s.
  spec.gpus = {{0, 0, {0, 2}}};
  expect_exact(simulate_on(spec, [](GraphBuilder& b) { b.add(copy_to(0, 1e9)); }), PCIE_LATENCY + 0.1);
}

TEST(ExactToy, CpuWorkIsAFlowOverTheNodesCpu) {
  // CPU-Adam at the profile's rate, shared by the copies a GPU stands for.
  hw::ClusterProfile p = toy_profile();
  p.calibration.cpu_adam_params_per_s = 1e9;
  auto adam = [](GraphBuilder& b) {
    Op op = node_op_of_gpu0(OpKind::CPU, Category::OPTIMIZER);
    op.params = 2e9;
    b.add(op);
  };
  PlatformSpec alone;
  alone.gpus = {{0, 0, {}}};
  expect_exact(simulate_on(alone, adam, p), 2.0);
  PlatformSpec four;
  four.gpus = {{0, 0, {0, 1, 2, 3}}};
  expect_exact(simulate_on(four, adam, p), 8.0);
}

TEST(ExactToy, ARingReachingMirrorsLoopsThroughTheNic) {
  // One member here, the others on mirror nodes: the ring leaves through GPU 0's PCIe link and
  // NIC and comes back in through them: 10 GB/s (PCIe) bounds the hop bytes.
  hw::ClusterProfile p = toy_profile();
  p.nic.count = 1;
  p.nic.link_Gbps = 200;
  p.inter_node.topology = hw::InterNodeTopology::FAT_TREE;
  p.inter_node.oversubscription = 1;
  PlatformSpec spec;
  spec.gpus = {{0, 0, {}}};
  spec.rings = {ring_of({0}, true)};
  const double S = 1e9;
  const double t = simulate_on(spec, [&](GraphBuilder& b) {
    Op op;
    op.kind = OpKind::COLLECTIVE;
    op.stream = Stream::COMM;
    op.category = Category::COMMUNICATION;
    op.participants = {0};
    op.collective = CollectiveKind::ALL_GATHER;
    op.ring = 0;
    op.group_size = 4;
    op.bytes = S;
    b.add(op);
  }, p);
  expect_exact(t, 3.0 / 4 * S / 10e9);
}

}  // namespace
}  // namespace trainsim::sim
