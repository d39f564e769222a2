#pragma once
// A cheap lower bound on the step time the replay (simulator.hpp) would answer, for the planner
// to prune with: it never replays a configuration whose bound already exceeds the step time of
// the K-th best one it has replayed. No SimGrid here; microseconds per configuration.
//
// The bound is built from the same unit costs the replay's programs run (program/unit_costs.hpp)
// and from the platform's capacities, never from a guess of overlap:
// - each GPU's compute stream runs its passes one after another, tensor-parallel collectives
//   included (synchronous in Megatron-LM), at no more than the GPU's port bandwidth;
// - a pipeline's first micro-batch reaches stage s only after the forwards of the stages before
//   it, and its last backward leaves stage s only after the backwards of the stages after it
//   (the fill and drain of GPipe and 1F1B, Huang et al. 2019, Narayanan et al. 2021);
// - every resource a step uses (storage reads and writes, the host memory path, a GPU's PCIe
//   link, the node's NICs, CPU-Adam) works no faster than its capacity in the profile;
// - the optimizer step starts after the last backward.
// Each term is work some resource or chain of the replay must do after a point it cannot start
// before, at no more than that resource's capacity: a proof, not an estimate. tests/planner/
// replay every configuration a search prunes and fail on any replay below its bound.
// Asynchronous steps (wl::asynchronous: the delayed update, PipeDream, 2BW) are measured as the
// difference of two step ends over several replayed steps; no such argument bounds a difference
// from below, so they get no bound (0) and the planner replays them.

#include <string>
#include <vector>

#include "cluster_profile.hpp"
#include "memory_model.hpp"
#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::sim {

struct StepBound {
  double seconds = 0;  // the bound: the largest of the terms below, or their sum where sequential
  // Terms, for explanations and tests (each alone is a lower bound of its phase).
  double compute_s = 0;        // the busiest GPU's compute stream (with tensor-parallel collectives)
  double pipeline_fill_s = 0;  // what the fill and drain add to the busiest stage (pp > 1)
  double communication_s = 0;  // data-parallel collectives through the GPU port and the node's NICs
  double offload_io_s = 0;     // storage and host<->device traffic during the passes
  double optimizer_s = 0;      // the optimizer step after the passes (CPU, NVMe or GPU)
  std::string dominant;        // "compute", "communication", "offload I/O", "optimizer"
};

StepBound step_time_lower_bound(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                                const wl::MemoryEstimate& memory);

}  // namespace trainsim::sim
