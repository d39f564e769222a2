#include "feasibility.hpp"

#include <fmt/format.h>

#include "config_error.hpp"

namespace trainsim::planner {

MemoryFit check_memory_fit(const wl::MemoryEstimate& est, const hw::ClusterProfile& profile, double headroom) {
  MemoryFit fit;
  fit.limits = memory_limits(profile, headroom);
  fit.gpu = model_verdict(est.stages[static_cast<std::size_t>(est.peak_stage)].gpu_bytes(), fit.limits.gpu_limit_bytes);
  fit.cpu = model_verdict(est.peak_node.cpu_bytes, fit.limits.host_bytes);
  fit.nvme = model_verdict(est.peak_node.nvme_bytes, fit.limits.storage_bytes);
  if (fit.gpu == Verdict::OVERFLOWS) fit.overflow.push_back("gpu");
  if (fit.cpu == Verdict::OVERFLOWS) fit.overflow.push_back("cpu");
  if (fit.nvme == Verdict::OVERFLOWS) fit.overflow.push_back("nvme");
  return fit;
}

std::optional<std::string> cluster_infeasibility(const wl::Strategy& s, const hw::ClusterProfile& profile) {
  const bool wants_storage =
      s.offload_params == wl::OffloadTarget::NVME || s.offload_optimizer == wl::OffloadTarget::NVME;
  if (wants_storage && profile.storage.kind == hw::StorageKind::NONE) {
    return fmt::format("NVMe offload asked for, but the cluster {} has no storage devices", printable(profile.name));
  }
  return std::nullopt;
}

}  // namespace trainsim::planner
