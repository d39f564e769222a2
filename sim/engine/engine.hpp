#pragma once
// Replays a task graph on a platform. Activities are created lazily: an op starts when its last
// dependency ends (building SimGrid's own activity DAG up front is quadratic in 3.32, see
// sim/README.md). Collectives run as their latency (a delay) and then one flow per ring channel,
// or in closed form on a ring no other route shares; transfers likewise; copies and collectives
// may carry a calibrated rate cap.

#include <optional>
#include <vector>

#include "platform.hpp"
#include "task_graph.hpp"

namespace trainsim::sim {

struct OpTiming {
  double start = 0;
  double end = 0;
};

struct ReplayResult {
  std::vector<OpTiming> timing;  // by OpId
  double makespan = 0;
  std::size_t activities = 0;    // SimGrid activities created
};

// Rate caps (bytes/s) by op, 0 = none: applied to each flow of the op, explicitly.
struct RateCaps {
  std::vector<double> per_op;
  // Interference measured by calibration (hwprofiles calibration.interference, a table by
  // collective, size and GEMM), read at `gemm_flops`, the FLOPs of the GEMMs the run's
  // collectives overlap (simulator.cpp: a layer's MLP product per micro-batch). None: no
  // interference.
  std::optional<hw::Interference> interference;
  double gemm_flops = 0;
};

// Configures the process's SimGrid engine for exact arithmetic. Call once, before Platform.
void configure_simgrid(int* argc, char** argv);

ReplayResult replay(const TaskGraph& graph, const Platform& platform, const RateCaps& caps = {});

// Bytes each hop of a ring carries for a collective of `bytes` over `n` ranks, and the number of
// latency steps: ring all-reduce 2(n-1)/n S in 2(n-1) steps, all-gather and reduce-scatter
// (n-1)/n S in n-1 steps, broadcast S pipelined over n-1 steps (nccl-tests PERFORMANCE.md).
double ring_hop_bytes(CollectiveKind kind, double bytes, int n);
int ring_steps(CollectiveKind kind, int n);

}  // namespace trainsim::sim
