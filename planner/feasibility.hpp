#pragma once
// Does an estimate fit a cluster? Compares the memory model's bytes with each tier of the
// profile (GPU memory less its reserve, host memory, NVMe capacity) and names what overflows.

#include <optional>
#include <string>
#include <vector>

#include "cluster_profile.hpp"
#include "memory_model.hpp"
#include "strategy.hpp"

namespace trainsim::planner {

struct MemoryFit {
  double gpu_capacity_bytes = 0;  // HBM
  double gpu_usable_bytes = 0;    // HBM less the profile's reserve (context, workspaces, fragmentation)
  double cpu_capacity_bytes = 0;  // per node
  double nvme_capacity_bytes = 0; // per node
  bool fits_gpu = true, fits_cpu = true, fits_nvme = true;
  std::vector<std::string> overflow;  // "gpu", "cpu", "nvme"
  bool fits() const { return fits_gpu && fits_cpu && fits_nvme; }
};

MemoryFit check_memory_fit(const wl::MemoryEstimate& est, const hw::ClusterProfile& profile);

// A valid strategy this cluster cannot host at all (no storage to offload to, ...).
std::optional<std::string> cluster_infeasibility(const wl::Strategy& s, const hw::ClusterProfile& profile);

}  // namespace trainsim::planner
