#include "memory_fit.hpp"

#include <fmt/format.h>

#include <cmath>

#include "config_error.hpp"

namespace trainsim::planner {
namespace {
constexpr double GiB = 1073741824.0;
}

MemoryLimits memory_limits(const hw::ClusterProfile& p, double headroom) {
  MemoryLimits l;
  l.gpu_capacity_bytes = p.gpu_memory_bytes();
  l.gpu_usable_bytes = p.gpu_usable_bytes();
  l.headroom = headroom;
  l.gpu_limit_bytes = l.gpu_usable_bytes * (1 - headroom);
  l.host_bytes = p.host_memory_bytes();
  l.storage_bytes = p.storage_capacity_bytes();
  return l;
}

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::FITS: return "fits";
    case Verdict::NEAR_LIMIT: return "near the limit";
    case Verdict::OVERFLOWS: return "overflows";
  }
  return "?";
}

Verdict model_verdict(double model_bytes, double limit_bytes) {
  if (model_bytes * (1 - MEMORY_MODEL_OVER) > limit_bytes) return Verdict::OVERFLOWS;
  if (model_bytes * (1 + MEMORY_MODEL_UNDER) + MEMORY_MODEL_UNDER_BYTES <= limit_bytes) return Verdict::FITS;
  return Verdict::NEAR_LIMIT;
}

std::optional<MemoryMisfit> replay_misfit(const sim::SimResult& r, const MemoryLimits& l) {
  if (r.peak_reserved_bytes > l.gpu_limit_bytes) {
    return MemoryMisfit{"gpu-memory",
                        fmt::format("GPU memory: the replay reserves {:.2f} GiB at its peak ({:.2f} GiB allocated), over "
                                    "the {:.2f} GiB usable less {:g}% headroom ({:.2f} GiB)",
                                    r.peak_reserved_bytes / GiB, r.peak_memory_bytes / GiB, l.gpu_usable_bytes / GiB,
                                    100 * l.headroom, l.gpu_limit_bytes / GiB)};
  }
  if (r.host_peak_bytes > l.host_bytes) {
    return MemoryMisfit{"host-memory", fmt::format("host memory: the replay holds {:.1f} GiB per node at its peak, {:.1f} GiB available",
                                                   r.host_peak_bytes / GiB, l.host_bytes / GiB)};
  }
  if (r.storage_peak_bytes > l.storage_bytes) {
    return MemoryMisfit{"nvme-capacity", fmt::format("storage: the replay holds {:.1f} TB per node at its peak, {:.1f} TB available",
                                                     r.storage_peak_bytes / 1e12, l.storage_bytes / 1e12)};
  }
  return std::nullopt;
}

double checked_headroom(double value, const std::string& flag) {
  if (!(std::isfinite(value) && value >= 0 && value <= 0.5)) {
    throw ConfigError(flag, flag, "a fraction of the usable GPU memory in [0, 0.5]", fmt::format("{}", value));
  }
  return value;
}

}  // namespace trainsim::planner
