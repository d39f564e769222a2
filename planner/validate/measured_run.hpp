#pragma once
// A measured training step, as reports/validation/README.md documents the schema (kind
// "trainsim.measured_run", schema_version 1): the model and strategy it ran, the stack with its
// exact policies, its step times and its peak memory per rank (allocated and reserved), and
// optionally per-stream busy times and the profiler trace beside it. Read strictly: an unknown or
// malformed key is a ConfigError naming the file and the key.

#include <optional>
#include <string>
#include <vector>

#include "strategy_input.hpp"
#include "strict_json.hpp"

namespace trainsim::planner {

// machine_storage (optional): the storage of the machine the run ran on, measured by
// trainsim-calibrate's storage bench in the same device call. Validate then costs this run's
// storage tier with these figures instead of the profile's (reports/validation/README.md).
struct MachineStorage {
  double read_GBps = 0;
  double write_GBps = 0;
  double mixed_read_GBps = 0;   // reads and writes in flight together (storage_mixed); 0: not measured
  double mixed_write_GBps = 0;
  std::string source;  // where the figures come from: the bench's output, its command
};

// What measured.busy counts as busy (optional key "definition"; absent: kernels).
//  KERNELS: the GPU running work (kernels, copies): a trace's union, or events around kernels.
//  CALL_SPANS: the union of CUDA-event pairs around a stack's calls (run_step.py BusyTimer:
//   forward_one_chunk, backward_one_chunk, ..., optimizer.step), each from the call's start
//   event passing the stream to its end event: a GPU waiting inside a call for its host counts
//   as busy. The replay reports the same quantity (sim::GpuResult::call_span_*).
enum class BusyDefinition { KERNELS, CALL_SPANS };

struct MeasuredRun {
  std::string path;            // the file read
  std::string name;
  std::string model_path;      // the trainsim model JSON, resolved beside the file
  std::optional<std::string> profile_path;  // "profile": the run's own host's profile JSON, beside the file
  // "capture" (optional): the capture of the run's layer (trainsim_capture's JSON, workloads/capture/),
  // beside the file: validate predicts this run from it, as `--capture FILE` predicts every run.
  std::optional<std::string> capture_path;
  std::string gpu;             // provenance.gpu
  int gpus = 1;
  // provenance.cpu_steal_fraction (optional): the hypervisor's share of the CPU time the machine
  // used or had taken over the timed steps (steal / (user + nice + system + irq + softirq + steal)
  // in /proc/stat, run_step.py; idle time not counted). A host-bound step measures its host as much
  // as its stack; the report shows it beside the launches (reports/validation/README.md).
  std::optional<double> cpu_steal_fraction;
  wl::StrategyInput strategy;  // the strategy object, with the stack and its policies
  std::string stack;           // stack.name as the file says it
  // What ran, as one string: the model file's JSON, the strategy and the stack's name and pipeline
  // split. Runs of one configuration (on several hosts, say) share it; empty for a profiler trace.
  std::string configuration;
  std::vector<int> layers_per_stage;  // pipelines: the stages' layers as the run split them
  double step_time_s = 0;      // median of the timed steps
  double step_time_spread = 0;
  // measured.launches (optional): every launch's step time, in launch order; the row is the median one.
  std::vector<double> launch_step_times_s;
  // Each launch's cpu_steal_fraction (optional per launch, as the row's): the steal over that
  // launch's timed steps, beside launch_step_times_s; empty without launches.
  std::vector<std::optional<double>> launch_cpu_steal_fractions;
  // measured.oom (optional): true where the run ran out of GPU memory (then measured holds only oom and
  // oom_message: no step time and no peaks), false where it is said explicitly that it ran; absent
  // for the rows that predate the key. Validate compares a "fits" row where it is given.
  std::optional<bool> oom;
  std::string oom_message;   // measured.oom_message: the allocator's message (oom true only)
  std::vector<double> peak_allocated_bytes;  // per rank
  std::vector<double> peak_reserved_bytes;   // per rank
  // measured.busy (optional; the reference step reports them): per-stream busy seconds of rank 0's
  // step, the communication no compute hid, and the pipeline bubble.
  std::optional<double> compute_busy_s, communication_busy_s, exposed_communication_s, offload_io_busy_s,
      optimizer_busy_s, host_busy_s;
  std::optional<double> bubble_fraction;
  BusyDefinition busy_definition = BusyDefinition::KERNELS;
  // measured.bytes (optional): bytes rank 0 moved per step, by path.
  std::vector<std::pair<std::string, double>> bytes_moved;
  std::optional<MachineStorage> machine_storage;
  std::optional<std::string> trace_path;     // resolved beside the file, when the run has one
  // measured.trace_summary, instead of measured.trace: that trace's summary (profiler_trace.hpp,
  // kind "trainsim.trace_summary"), beside the file; the validation reads the same from either.
  std::optional<std::string> trace_summary_path;
  bool from_trace = false;                   // the step time is the profiled step's (no timed steps)
};

// Whether the run ran out of GPU memory (measured.oom true).
inline bool ran_out_of_memory(const MeasuredRun& r) { return r.oom.value_or(false); }

// `path`: a measured-run JSON. Throws ConfigError for anything malformed.
MeasuredRun load_measured_run(const std::string& path);
MeasuredRun measured_run_from_json(const JsonDocument& doc, const std::string& directory);

// A torch.profiler trace and what ran in it: `sidecar` (kind "trainsim.trace_sidecar": name, model,
// strategy, stack, optional gpu, gpus and peaks per rank) or, without one, the model and strategy
// flags alone (`model_flag` must then be given). The step time is the trace's step.
MeasuredRun measured_run_from_trace(const std::string& trace_path, const std::string& sidecar, const std::string& model_flag);

// Whether a JSON file is a measured run (its "kind"), for picking them out of a directory.
bool is_measured_run_file(const std::string& path);

}  // namespace trainsim::planner
