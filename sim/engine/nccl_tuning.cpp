#include "nccl_tuning.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

namespace trainsim::sim {
namespace {

// The constants below are NCCL's, copied from NVIDIA/nccl v2.12.10-1 src/graph/tuning.cc (and
// search.cc for the channel speeds), in NCCL's order: algorithm Tree, Ring; protocol LL, LL128,
// Simple. Latencies in microseconds, bandwidths in GB/s.
constexpr int TREE = 0, RING = 1;
constexpr int LL = 0, LL128 = 1, SIMPLE = 2;
constexpr int HW_NVLINK = 0, HW_PCI = 1, HW_NET = 2;

constexpr double BASE_LAT[2][3] = {{4.4, 4.4, 0}, {3.6, 10.0, 8.4}};
// "Tree/Simple is the latency a 256kB chunk, which is ~ base lat + 256k/12GB/s (+ 256k/12GB/s for
// the network)." Ring/Simple over the network is 28 from 2.12 (9.6 in 2.8-2.11).
constexpr double HW_LAT[3][2][3] = {
    /* NVLINK */ {{.52, 1.25, 28}, {.47, 1.9, 3.4}},
    /* PCI */ {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}},
    /* NET */ {{5.0, 8.5, 28}, {2.7, 4.0, 28}},
};
constexpr double LL128_MAX_BW_PER_CH = 20.0;
// {Volta-N1/Intel-N2/Intel-N4}, {Ampere-N1/AMD-N2/AMD-N4}
constexpr double LL_MAX_BWS[2][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}};
// {Volta (N1/N2/N4)}, {Ampere (N1/N2/N4)}
constexpr double PER_CH_MAX_TREE_BWS[2][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}};
// "Trees are not perfectly sticking to the model for medium sizes": by log2(bytes / 64), 64 B
// to 256 MB.
constexpr double TREE_CORRECTION[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
// search.cc: the speeds a channel may be given, fastest first.
constexpr std::array<double, 13> SPEED_INTRA{44.0, 30.0, 22.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
constexpr std::array<double, 18> SPEED_INTER{48.0, 30.0, 24.0, 22.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                             7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr int MAX_RING_CHANNELS = 16;  // init.cc: ringGraph.maxChannels = MAXCHANNELS/2

// utils.h
long log2i(long n) {
  long l = 0;
  while (n >>= 1) ++l;
  return l;
}

int algo_index(NcclAlgo a) { return a == NcclAlgo::TREE ? TREE : RING; }
int proto_index(NcclProto p) { return p == NcclProto::LL ? LL : p == NcclProto::LL128 ? LL128 : SIMPLE; }

}  // namespace

std::string_view to_string(NcclAlgo a) { return a == NcclAlgo::TREE ? "tree" : "ring"; }
std::string_view to_string(NcclProto p) { return p == NcclProto::LL ? "LL" : p == NcclProto::LL128 ? "LL128" : "Simple"; }

NcclChoice nccl_cost(CollectiveKind kind, NcclAlgo algo, NcclProto proto, double bytes, const NcclComm& c) {
  NcclChoice out;
  out.algo = algo;
  out.proto = proto;
  out.time_us = -1.0;  // a pair NCCL does not run
  const int a = algo_index(algo), p = proto_index(proto);
  const int n_ranks = c.ranks, n_nodes = std::max(1, c.nodes);
  if (n_ranks < 2) return out;
  const bool all_reduce = kind == CollectiveKind::ALL_REDUCE;
  // Only all-reduce has a tree (tuning.cc: "if (coll != ncclFuncAllReduce && a != NCCL_ALGO_RING) continue").
  if (a == TREE && !all_reduce) return out;
  const bool comp_cap80 = c.gpu_sm == 80;
  const int index2 = n_nodes <= 2 ? n_nodes - 1 : 2;
  const int index1 = n_nodes == 1 ? (comp_cap80 ? 1 : 0) : (c.amd_cpu ? 1 : 0);
  const double ll_max_bw = LL_MAX_BWS[index1][index2];
  const double per_ch_max_tree_bw = PER_CH_MAX_TREE_BWS[comp_cap80 ? 1 : 0][index2];
  const double ppn = static_cast<double>(n_ranks) / n_nodes;
  const bool rs_or_ag = kind == CollectiveKind::REDUCE_SCATTER || kind == CollectiveKind::ALL_GATHER;
  const int nsteps = all_reduce ? 2 * (n_ranks - 1) : rs_or_ag ? n_ranks - 1 : n_ranks;
  const int n_inter_steps = all_reduce ? (n_nodes > 1 ? 2 * n_nodes : 0) : rs_or_ag ? n_nodes - 1 : n_nodes;

  double bus_bw = c.channels * c.channel_GBps;
  if (comp_cap80) bus_bw = std::min(bus_bw, 235.0);
  if (a == RING && p == LL) bus_bw = std::min(ll_max_bw, bus_bw * ((n_nodes > 1 || all_reduce) ? 1.0 / 4.0 : 1.0 / 3.0));
  if (a == RING && p == LL128) bus_bw = std::min(bus_bw * (ppn < 2 ? 0.7 : 0.92), LL128_MAX_BW_PER_CH * c.channels);
  if (a == TREE) bus_bw = std::min(bus_bw * .92, c.channels * per_ch_max_tree_bw);
  if (a == TREE && p == LL) bus_bw = std::min(bus_bw * 1.0 / 3.8, ll_max_bw);
  if (a == TREE && p == LL128) bus_bw = std::min(bus_bw * (n_nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), LL128_MAX_BW_PER_CH * c.channels);
  const double ratio = a != RING ? .5 : static_cast<double>(n_ranks) / nsteps;
  double bw = bus_bw * ratio;

  const int intra_hw = c.nvlink_intra ? HW_NVLINK : HW_PCI;
  const int hw = n_nodes == 1 ? intra_hw : HW_NET;
  double lat = BASE_LAT[a][p];
  double intra_lat = HW_LAT[intra_hw][a][p];
  const double inter_lat = HW_LAT[HW_NET][a][p];  // graph->latencyInter: 0 for InfiniBand (net_ib.cc)
  if (n_nodes > 1 && p == LL) intra_lat *= 1.8;
  if (a == RING) {
    double step = HW_LAT[hw][a][p];
    if (kind == CollectiveKind::BROADCAST) {
      // One ring order on every channel (sameChannels) holds within a node; channels through
      // different NICs have different orders.
      if (n_nodes == 1) {
        lat += step;
      } else {
        if (p == SIMPLE) step = HW_LAT[hw][TREE][p];
        lat += nsteps * step;
      }
    } else {
      lat += (nsteps - n_inter_steps) * intra_lat + n_inter_steps * inter_lat;
    }
  } else {
    lat += 2 * ((n_ranks / n_nodes - 1) * intra_lat + static_cast<double>(log2i(n_nodes)) * inter_lat);
  }

  // Protocols NCCL leaves off: LL128 only on Volta or Ampere with NVLink inside the node and the
  // NIC within a PCIe switch of the GPU (ncclTopoTuneModel's pEnable).
  const bool ll128_ok = (c.gpu_sm == 70 || c.gpu_sm == 80) && (c.nvlink_intra || ppn < 2) && (n_nodes == 1 || c.nic_beside_gpu);
  if (p == LL128 && !ll128_ok) bw = 0;

  // ncclTopoGetAlgoTime, one operation (numPipeOps 1), the communicator's channels.
  if (bw > 0) {
    const long log_size = log2i(static_cast<long>(bytes) >> 6);
    if (a == TREE && log_size < 23) bw *= TREE_CORRECTION[p][log_size];
    if (a == RING && p == SIMPLE && n_nodes > 1 && all_reduce && bytes >= n_ranks / 16.0 * 65536) lat *= 1.9;  // "Plateau effect of ring"
  }
  out.latency_us = lat;
  out.algbw_GBps = bw;
  out.time_us = bw > 0 ? lat + bytes / (1000.0 * bw) : -1.0;
  return out;
}

NcclChoice nccl_choose(CollectiveKind kind, double bytes, const NcclComm& comm) {
  NcclChoice best;
  if (comm.ranks < 2) return best;
  bool found = false;
  for (NcclAlgo a : {NcclAlgo::TREE, NcclAlgo::RING}) {
    for (NcclProto p : {NcclProto::LL, NcclProto::LL128, NcclProto::SIMPLE}) {
      const NcclChoice c = nccl_cost(kind, a, p, bytes, comm);
      if (c.time_us >= 0 && (!found || c.time_us < best.time_us)) {
        best = c;
        found = true;
      }
    }
  }
  return best;
}

void nccl_intra_channels(double link_GBps, int& channels, double& channel_GBps) {
  // The search keeps the channel count and speed that move the most (nChannels x speed), trying
  // the fastest speed first.
  channels = 1;
  channel_GBps = SPEED_INTRA.back();
  double best = 0;
  for (double s : SPEED_INTRA) {
    const int n = std::min(MAX_RING_CHANNELS, static_cast<int>(std::floor(link_GBps / s + 1e-9)));
    if (n >= 1 && n * s > best + 1e-9) {
      best = n * s;
      channels = n;
      channel_GBps = s;
    }
  }
  if (best == 0) channel_GBps = std::min(link_GBps, SPEED_INTRA.back());
  if (channel_GBps >= 25.0) {
    const int dup = std::min(channels * 2, MAX_RING_CHANNELS);
    channel_GBps /= (dup + channels - 1) / channels;
    channels = dup;
  }
}

double nccl_inter_channel_GBps(double path_GBps) {
  for (double s : SPEED_INTER) {
    if (s <= path_GBps + 1e-9) return s;
  }
  return SPEED_INTER.back();
}

}  // namespace trainsim::sim
