#pragma once
// The estimator interface the planner calls (not the CLI): for one configuration (model, strategy,
// cluster) three questions of rising cost.
//
//   validate(config)  pure, microseconds: every rule it breaks, as data (workloads/strategy_rules
//                     plus what this cluster cannot host), so a search can count reasons;
//   bound(config)     closed forms, tens of microseconds: the memory model's bytes against each
//                     tier, and a lower bound on the step time (sim/step_bound.hpp) to prune with;
//   replay(config)    the simulator (sim/simulator.hpp), 0.05 to a few seconds, in a forked child.
//
// Each answer says why a configuration is out with a stable reason id ("gpu-memory",
// "tp-divides-heads", ...): the planner counts configurations by it.

#include <optional>
#include <string>
#include <vector>

#include "cluster_profile.hpp"
#include "feasibility.hpp"
#include "memory_fit.hpp"
#include "memory_model.hpp"
#include "model.hpp"
#include "simulator.hpp"
#include "step_bound.hpp"
#include "strategy.hpp"

namespace trainsim::planner {

struct Config {
  const wl::ModelSpec* model = nullptr;
  const hw::ClusterProfile* profile = nullptr;
  wl::Strategy strategy;
  // The share of usable GPU memory left free at the peak (memory_fit.hpp); not part of a replay's
  // answer (nor of its cache key), only of whether it fits.
  double memory_headroom = DEFAULT_MEMORY_HEADROOM;
};

struct Issue {
  std::string reason;   // stable id: a rule id or a cluster reason
  std::string message;  // for people
};

// Rules (both scopes: the planner only proposes what it can replay) and the cluster's limits:
// "cluster-nodes" (more nodes than the profile has), "no-storage" (NVMe offload without
// drives), "no-precision-peak" (the GPU lacks the model's compute precision).
std::vector<Issue> validate(const Config& c);

struct Bound {
  wl::MemoryEstimate memory;
  MemoryFit fit;
  // "gpu-memory", "host-memory" or "nvme-capacity": the first tier the memory model shows
  // overflowing beyond its tolerance (memory_fit.hpp); the replay decides the rest.
  std::optional<Issue> misfit;
  sim::StepBound step;          // only computed when it may fit
};
// For a configuration validate() accepted. Misfits found by a floor under the model states
// come back without a memory estimate (Bound::memory empty).
Bound bound(const Config& c);

// The largest replay the simulator takes (sim::MAX_REPLAY_OPS): "replay-too-large" beyond it.
std::optional<Issue> replay_size_issue(const Config& c);

// The replay, as the simulator answers it (whether it fits is fitted_to's).
sim::SimResult replay(const Config& c, const wl::MemoryEstimate& memory, const sim::SimOptions& options = {});

// The replay's result with its verdict: fits = false and the reason where a peak overflows
// (memory_fit.hpp, replay_misfit), for the configuration's cluster and headroom.
sim::SimResult fitted_to(sim::SimResult r, const Config& c);

}  // namespace trainsim::planner
