#pragma once
// The estimator interface the planner and the CLI see: simulate one training step of a model
// with a strategy on a cluster. No SimGrid types here (DESIGN.md: SimGrid stays inside sim/).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cluster_profile.hpp"
#include "memory_model.hpp"
#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::sim {

struct SimOptions {
  bool trace = false;  // produce a Chrome trace (SimResult::trace); the caller writes it
  // Simulate one rank per pipeline stage for the identical tensor- and data-parallel ranks
  // (placement.hpp), and fold identical micro-batches (simulator.cpp). Off: replay everything.
  bool fold_ranks = true;
  bool fold_micro_batches = true;
  // Leave the links that other links imply out of the platform's routes (implied_links.hpp): the
  // same answer from a smaller sharing model. Off: every link, to check that claim.
  bool drop_implied_links = true;
};

struct GpuResult {
  int stage = 0;   // pipeline stage of this simulated GPU
  int copies = 1;  // identical ranks of its node it stands for (itself included)
  double peak_memory_bytes = 0;
  // What PyTorch's caching allocator would reserve for the same events (reserved_memory.hpp).
  double peak_reserved_bytes = 0;
  double baseline_bytes = 0;                  // model states and buckets at the peak
  std::vector<std::pair<std::string, double>> at_peak;  // the rest of the peak, by class
  double compute_s = 0, exposed_communication_s = 0, exposed_offload_io_s = 0, optimizer_s = 0, idle_s = 0;
  double hardware_flops = 0;
  // Busy as CUDA events around the stack's calls count it (metrics.hpp, GpuBusy::call_span_*):
  // what `trainsim validate` compares with a measured run whose busy.definition is "call_spans".
  // Carried from the simulating child; not in planner results (planner/result_json.cpp).
  double call_span_compute_s = 0, call_span_optimizer_s = 0;
  // GPU kernel time by class (metrics.hpp, GpuBusy::*_kernel_s), for validate's comparison with a trace.
  double gemm_kernel_s = 0, attention_kernel_s = 0, other_kernel_s = 0, optimizer_kernel_s = 0;
};

struct SimResult {
  bool fits = true;
  std::optional<std::string> infeasible_reason;
  bool simulated = false;
  double step_time_s = 0;
  double model_flops_per_step = 0;  // all GPUs, without recompute (Narayanan et al.'s numerator)
  double tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;  // with recompute
  double tokens_per_s = 0;
  double samples_per_s = 0;
  double bubble_fraction = 0;
  double peak_memory_bytes = 0;
  // The largest GpuResult::peak_reserved_bytes: what PyTorch's caching allocator would reserve at
  // the busiest GPU, the figure the planner fits against the usable memory (planner/memory_fit.hpp).
  double peak_reserved_bytes = 0;
  double host_peak_bytes = 0;
  double storage_peak_bytes = 0;
  std::vector<GpuResult> per_gpu;  // the simulated GPUs (one per stage when ranks are folded)
  int simulated_gpus = 0;
  int simulated_nodes = 0;
  std::vector<std::string> folding;  // what was folded (ranks, micro-batches) and how
  std::vector<std::string> notes;    // e.g. the stage partition
  std::size_t ops = 0;
  std::size_t activities = 0;
  int steps_simulated = 1;
  std::vector<std::string> assumptions;
  // The Chrome trace JSON when SimOptions::trace asked for one, else empty. Not part of to_json:
  // it travels from the simulating child to the caller beside the result, and the caller writes
  // it with its other outputs (the simulator writes no files).
  std::string trace;
};

SimResult simulate(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                   const wl::MemoryEstimate& memory, const SimOptions& options = {});

// The most ops one replay may hold: about 2 million ops take some 8 GiB and a minute. A step whose
// one replay would pass it is extrapolated from three smaller replays (micro_batch_fold.hpp,
// extrapolation_tries); only one whose smallest such replay would pass it too is refused, naming
// the limit, before anything is built.
inline constexpr double MAX_REPLAY_OPS = 2e6;
// An upper estimate of the ops one replay of a micro-batch holds (all simulated GPUs, all steps).
double replay_ops_per_micro_batch(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                                  const SimOptions& options = {});
// An upper estimate of the ops the largest single replay of this step holds, from its shape alone
// (with the folding `options` ask for).
double estimated_replay_ops(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                            const SimOptions& options = {});

nlohmann::ordered_json to_json(const SimResult& r);
SimResult sim_result_from_json(const nlohmann::json& j);

}  // namespace trainsim::sim
