#pragma once
// NCCL's own cost model of a collective, as NCCL 2.12 computes it to choose an algorithm and a
// protocol (NVIDIA/nccl v2.12.10-1: src/graph/tuning.cc, ncclTopoTuneModel and
// ncclTopoGetAlgoTime; src/enqueue.cc, getAlgoInfo; src/misc/argcheck.cc for the byte count). A
// collective of nBytes takes latency + nBytes / algorithm bandwidth, with the latency and the
// bandwidth of each (algorithm, protocol) worked out once per communicator from its ranks, its
// nodes, its channels and the hardware classes of its hops; NCCL runs the pair of least time.
//
// Modeled: Ring and Tree with the LL, LL128 and Simple protocols. Not modeled: CollNet (it needs
// SHARP switches, which no profile describes) and the per-call channel reduction of small
// messages (getAlgoInfo's nc-- loop: it changes threads and channels, not the time NCCL's model
// predicts for the pair it chose).

#include <string_view>

#include "task_graph.hpp"

namespace trainsim::sim {

enum class NcclAlgo { TREE, RING };
enum class NcclProto { LL, LL128, SIMPLE };
std::string_view to_string(NcclAlgo a);
std::string_view to_string(NcclProto p);

// What NCCL knows of a communicator when it tunes (ncclTopoTuneModel's inputs).
struct NcclComm {
  int ranks = 1;
  int nodes = 1;
  bool nvlink_intra = true;  // the graph's intra-node hops are NVLink (else PCI)
  int gpu_sm = 80;           // compute capability x 10 (all GPUs alike)
  bool amd_cpu = false;      // the host CPU vendor NCCL detects (multi-node LL bandwidth)
  bool nic_beside_gpu = true;  // GPU to NIC no farther than a PCIe switch (PATH_PXB): LL128 allowed
  // The ring graph as NCCL's search leaves it (src/graph/search.cc): channels and the bandwidth
  // of each, GB/s. The tree graph takes the ring's channels (init.cc: treeGraph.maxChannels =
  // ringGraph.nChannels) and, over the same hops, the same per-channel bandwidth.
  int channels = 1;
  double channel_GBps = 0;
};

struct NcclChoice {
  NcclAlgo algo = NcclAlgo::RING;
  NcclProto proto = NcclProto::SIMPLE;
  double latency_us = 0;   // including the ring plateau factor where it applies
  double algbw_GBps = 0;   // nBytes / algbw is the time the bytes take (tree correction applied)
  double time_us = -1;     // -1: NCCL does not run this pair
};

// NCCL's latency (us) and algorithm bandwidth (GB/s) of one (algorithm, protocol) for a
// collective of `bytes` (nccl-tests' size: the whole buffer; all-gather's output, reduce-scatter's
// input); a time of -1 (and a bandwidth of 0) where NCCL does not run the pair: tree runs only
// all-reduce, LL128 only where ncclTopoTuneModel enables it.
NcclChoice nccl_cost(CollectiveKind kind, NcclAlgo algo, NcclProto proto, double bytes, const NcclComm& comm);

// The pair NCCL picks: the least time over every enabled pair (getAlgoInfo), in NCCL's order
// (tree before ring, LL before LL128 before Simple; a tie keeps the first).
NcclChoice nccl_choose(CollectiveKind kind, double bytes, const NcclComm& comm);

// NCCL 2.12's search of a ring over one node: the speed of its channels among NCCL's steps
// (search.cc, speedArrayIntra) and how many of them fill `link_GBps`, at most MAXCHANNELS/2 = 16
// (init.cc), duplicated when a channel runs at 25 GB/s or more (search.cc, ncclTopoCompute's end).
void nccl_intra_channels(double link_GBps, int& channels, double& channel_GBps);

// A channel's speed over the network: the largest of NCCL's inter-node steps (search.cc,
// speedArrayInter) no faster than `path_GBps`, the slower of the NIC and the GPU's path to it.
double nccl_inter_channel_GBps(double path_GBps);

}  // namespace trainsim::sim
