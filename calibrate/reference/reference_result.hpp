#pragma once
// What one measured reference run produced, per rank, free of CUDA types, and its measured-run
// JSON (kind trainsim.measured_run, schema 1, as reports/validation/README.md and
// planner/validate/measured_run.cpp read it) plus the trainsim model JSON beside it.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference_options.hpp"
#include "storage_probe.hpp"

namespace trainsim::calibrate::ref {

// Busy seconds per stream in one step, from CUDA events around every piece of work issued to it
// (their union per stream, so overlapping work on one stream is not counted twice).
struct StreamBusy {
  double compute_s = 0;      // GEMMs and kernels, forward, backward and the GPU optimizer
  double collective_s = 0;   // NCCL all-gathers and reduce-scatters (own stream)
  double host_transfer_s = 0;
  double storage_s = 0;
  double cpu_optimizer_s = 0;
  double optimizer_s = 0;    // the part of compute_s spent in the Adam kernel
  double exposed_collective_s = 0;  // compute stream waiting on the collective stream
  double bubble_fraction = 0;       // pipeline: idle share of this stage's schedule (CUDA events)
  double checkpoint_out_s = 0;      // --checkpoints host: the device-to-host copy stream's busy time
  double checkpoint_in_s = 0;       // and the host-to-device one's
};

struct RankMeasurement {
  std::vector<double> warmup_step_times_s;
  std::vector<double> step_times_s;
  std::vector<StreamBusy> busy;  // per timed step
  double peak_allocated_bytes = 0;  // the reference's own arena: its high-water mark
  double peak_reserved_bytes = 0;   // the arena's size plus cuBLASLt workspace
  std::int64_t params = 0;          // parameters this rank owns (its shard under ZeRO-3)
  double bytes_h2d = 0, bytes_d2h = 0, bytes_storage_read = 0, bytes_storage_written = 0;  // per step
  double collective_bytes = 0;  // per step, sent by this rank
  double checkpoint_bytes_to_host = 0, checkpoint_bytes_from_host = 0;  // --checkpoints host: per step
  std::vector<StorageProbe> storage_probes;  // --storage-probe-chunks: one per timed step, taken before it
};

struct ReferenceRun {
  ReferenceOptions options;
  std::vector<RankMeasurement> ranks;
  std::vector<double> losses;  // rank 0's mean loss of every step, warm-up included
  std::string gpu_name;
  std::uint64_t gpu_memory_bytes = 0;
  std::string driver, cuda_runtime, cublas, nccl;
  std::string date, host;
};

// The measured-run JSON; `model_file` is the name of the model JSON beside it.
nlohmann::ordered_json measured_run_json(const ReferenceRun& run, const std::string& model_file);
nlohmann::ordered_json model_json(const ReferenceOptions& o);
// Model FLOPs of one step over all ranks, Narayanan et al. 2021 eq. 3 without recomputation:
// 72 B s L h^2 (1 + s / 6h + V / 12 L h) for B sequences (attention's full s x s square counted,
// as our kernels compute it; a recomputed forward is not counted).
double step_flops(const ReferenceOptions& o);

}  // namespace trainsim::calibrate::ref
