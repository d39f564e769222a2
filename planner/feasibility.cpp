#include "feasibility.hpp"

#include <fmt/format.h>

namespace trainsim::planner {

MemoryFit check_memory_fit(const wl::MemoryEstimate& est, const hw::ClusterProfile& profile) {
  MemoryFit fit;
  fit.gpu_capacity_bytes = profile.gpu_memory_bytes();
  fit.gpu_usable_bytes = profile.gpu_usable_bytes();
  fit.cpu_capacity_bytes = profile.host_memory_bytes();
  fit.nvme_capacity_bytes = profile.storage_capacity_bytes();
  fit.fits_gpu = est.stages[static_cast<std::size_t>(est.peak_stage)].gpu_bytes() <= fit.gpu_usable_bytes;
  fit.fits_cpu = est.peak_node.cpu_bytes <= fit.cpu_capacity_bytes;
  fit.fits_nvme = est.peak_node.nvme_bytes <= fit.nvme_capacity_bytes;
  if (!fit.fits_gpu) fit.overflow.push_back("gpu");
  if (!fit.fits_cpu) fit.overflow.push_back("cpu");
  if (!fit.fits_nvme) fit.overflow.push_back("nvme");
  return fit;
}

std::optional<std::string> cluster_infeasibility(const wl::Strategy& s, const hw::ClusterProfile& profile) {
  const bool wants_storage =
      s.offload_params == wl::OffloadTarget::NVME || s.offload_optimizer == wl::OffloadTarget::NVME;
  if (wants_storage && profile.storage.kind == hw::StorageKind::NONE) {
    return fmt::format("NVMe offload asked for, but the cluster {} has no storage devices", profile.name);
  }
  return std::nullopt;
}

}  // namespace trainsim::planner
