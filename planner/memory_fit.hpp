#pragma once
// One truth for memory: a configuration fits when its replay fits. The replayed reserved peak of
// every GPU (the replay's allocations through the model of PyTorch's caching allocator,
// sim/engine/reserved_memory.hpp, fragmentation included) must stay within the usable memory (HBM less the
// profile's reserved_GiB) less a headroom, and the host memory and storage peaks within each node's.
//
// The memory model (workloads/memory_model.hpp) is the fast filter in front of the replay: it drops
// a configuration only where its bytes, less its tolerance, still overflow, and says "fits" only
// where its bytes, plus its tolerance, still fit; in between it says the replay decides. tests/planner/memory_consistency_test.cpp holds the model to that tolerance against the
// replay over random strategies of every family.

#include <optional>
#include <string>

#include "cluster_profile.hpp"
#include "simulator.hpp"

namespace trainsim::planner {

// The share of the usable GPU memory a configuration must leave free at its replayed reserved peak
// (--memory-headroom): what the replay does not hold (NCCL's channel buffers, cuBLAS and cuDNN
// workspaces beyond the profile's reserve, temporaries inside kernels) and the error of the
// reserved model, whose mean absolute error over the measured runs is 4.5%
// (reports/validation/report.md, peak_reserved).
inline constexpr double DEFAULT_MEMORY_HEADROOM = 0.05;

// How far the memory model's bytes may stand from the replay's peaks (tests/planner/
// memory_consistency_test.cpp holds every sampled strategy to it): the model may exceed a replayed
// peak by MEMORY_MODEL_OVER of its bytes (it charges each buffer at its largest, where the replay
// holds what its schedule leaves alive), and a replayed peak may exceed the model by
// MEMORY_MODEL_UNDER of its bytes plus MEMORY_MODEL_UNDER_BYTES (the caching allocator's
// fragmentation, which the model does not count, reaches a few GiB on its own).
inline constexpr double MEMORY_MODEL_OVER = 0.12;
inline constexpr double MEMORY_MODEL_UNDER = 0.25;
inline constexpr double MEMORY_MODEL_UNDER_BYTES = 2.0 * 1024 * 1024 * 1024;

struct MemoryLimits {
  double gpu_capacity_bytes = 0;  // HBM
  double gpu_usable_bytes = 0;    // less the profile's reserved_GiB
  double gpu_limit_bytes = 0;     // less the headroom: what a replayed reserved peak may reach
  double headroom = 0;
  double host_bytes = 0;          // per node
  double storage_bytes = 0;       // per node, all drives
};
MemoryLimits memory_limits(const hw::ClusterProfile& p, double headroom);

enum class Verdict { FITS, NEAR_LIMIT, OVERFLOWS };
std::string_view to_string(Verdict v);
// The memory model's bytes against a limit, with its tolerance (above).
Verdict model_verdict(double model_bytes, double limit_bytes);

struct MemoryMisfit {
  std::string reason;   // "gpu-memory", "host-memory", "nvme-capacity"
  std::string message;  // for people, with the figures
};
// The replay's verdict: nullopt where every peak fits, else the first tier that overflows.
std::optional<MemoryMisfit> replay_misfit(const sim::SimResult& r, const MemoryLimits& l);

// Checks a headroom flag's value (a fraction in [0, 0.5]), naming `flag`.
double checked_headroom(double value, const std::string& flag);

}  // namespace trainsim::planner
