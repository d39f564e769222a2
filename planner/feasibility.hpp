#pragma once
// What the memory model says of a configuration against a cluster (memory_fit.hpp: the replay
// decides; the model is the filter in front of it): each tier's verdict with the model's tolerance,
// and what overflows.

#include <optional>
#include <string>
#include <vector>

#include "cluster_profile.hpp"
#include "memory_fit.hpp"
#include "memory_model.hpp"
#include "strategy.hpp"

namespace trainsim::planner {

struct MemoryFit {
  MemoryLimits limits;
  Verdict gpu = Verdict::FITS, cpu = Verdict::FITS, nvme = Verdict::FITS;
  std::vector<std::string> overflow;  // "gpu", "cpu", "nvme": tiers the model shows overflowing
  // Every tier fits by the model, with its tolerance to spare.
  bool fits() const { return gpu == Verdict::FITS && cpu == Verdict::FITS && nvme == Verdict::FITS; }
  // No tier overflows beyond the model's tolerance: the replay decides.
  bool may_fit() const { return overflow.empty(); }
};

MemoryFit check_memory_fit(const wl::MemoryEstimate& est, const hw::ClusterProfile& profile, double headroom);

// A valid strategy this cluster cannot host at all (no storage to offload to, ...).
std::optional<std::string> cluster_infeasibility(const wl::Strategy& s, const hw::ClusterProfile& profile);

}  // namespace trainsim::planner
