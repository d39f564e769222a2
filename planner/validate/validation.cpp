#include "validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "accuracy.hpp"
#include "captured_model.hpp"
#include "config_error.hpp"
#include "cost_model.hpp"
#include "host_dispatch.hpp"
#include "input_file.hpp"
#include "measured_json.hpp"
#include "memory_answer.hpp"
#include "profile_loader.hpp"
#include "request.hpp"
#include "simulator.hpp"
#include "stack_model.hpp"

namespace trainsim::planner {
namespace {

ValidationRow row(const MeasuredRun& run, std::string metric, std::string unit, double predicted, double measured,
                  bool toleranced, double tolerance_pct, std::string note = {}) {
  ValidationRow r;
  r.name = run.name;
  r.metric = std::move(metric);
  r.unit = std::move(unit);
  r.predicted = predicted;
  r.measured = measured;
  r.error_abs = predicted - measured;
  r.error_pct = measured != 0 ? 100.0 * (predicted - measured) / measured : 0.0;
  r.toleranced = toleranced;
  r.within = !toleranced || std::abs(r.error_pct) <= tolerance_pct;
  r.note = std::move(note);
  return r;
}

double max_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

// The profile with every host dispatch figure the replay reads (each stack's per-layer,
// per-micro-batch and per-step host times, sim/program/host_dispatch.cpp) multiplied by `factor`;
// the GPU side (the kernels, collectives and copies) as it was.
hw::ClusterProfile with_host_dispatch_scaled(hw::ClusterProfile p, double factor) {
  if (!p.calibration.host_dispatch) return p;
  for (hw::StackDispatch& s : p.calibration.host_dispatch->stacks) {
    for (double* x : {&s.layer_forward_us, &s.layer_backward_us, &s.micro_batch_forward_us, &s.micro_batch_backward_us,
                      &s.sync_layer_us, &s.optimizer_step_us, &s.optimizer_layer_us}) {
      *x *= factor;
    }
  }
  return p;
}

// The profile with every pageable device-to-host copy below glibc's largest mmap threshold costed
// as faulting in its destination pages, at the cost per byte the same curve shows from the threshold
// up (sim::fresh_page_seconds_per_byte).
hw::ClusterProfile with_fresh_pageable_pages(hw::ClusterProfile p) {
  if (!p.calibration.torch_offload) return p;
  for (hw::BandwidthCurve& c : p.calibration.torch_offload->curves) {
    if (c.what != "d2h_pageable") continue;
    const double fault = sim::fresh_page_seconds_per_byte(c.points);
    for (hw::CurvePoint& x : c.points) {
      if (x.bytes < sim::GLIBC_MMAP_THRESHOLD_MAX_BYTES) x.value = 1.0 / (1.0 / x.value + fault * 1e9);
    }
  }
  return p;
}

// Whether the step copies accumulated gradients into fresh pageable memory (the data-parallel
// builder's FSDP2 offload path, sim/program/data_parallel_optimizer.cpp).
bool copies_into_fresh_pageable(const wl::Strategy& s, wl::Numerics n) {
  return s.pp == 1 && !s.l2l && s.offload_optimizer == wl::OffloadTarget::CPU && s.micro_batches() > 1 &&
         wl::stack_states(s.stack, n, s.zero_stage, s.micro_batches()).blocking_pageable_grad_offload;
}

constexpr double GiB = 1073741824.0;

// "the 133.95 GiB a GPU may hold (141.0 GiB of HBM less 1.00 GiB reserved, less 5% headroom)"
std::string gpu_limit_text(const MemoryLimits& l) {
  return fmt::format("the {:.2f} GiB a GPU may hold ({:.1f} GiB of HBM less {:.2f} GiB reserved, less {:g}% headroom)",
                     l.gpu_limit_bytes / GiB, l.gpu_capacity_bytes / GiB, (l.gpu_capacity_bytes - l.gpu_usable_bytes) / GiB,
                     100 * l.headroom);
}

// Whether the configuration fits its GPU, by the planner's rule (planner/memory_fit.hpp, as `trainsim
// simulate` and `plan` decide it): where the memory model's peak GPU overflows the usable memory less
// the headroom by more than its tolerance, it does not (the planner does not replay it); otherwise the
// replay's reserved peak decides, against the same limit. Host memory and storage are not the GPU's:
// a measured OOM is the GPU allocator's. Measured: 0 where the run ran out of memory, 1 where it ran.
ValidationRow fits_row(const MeasuredRun& run, const MemoryAnswer& memory, const sim::SimResult* replay) {
  const MemoryLimits& l = memory.fit.limits;
  const wl::StageMemory& st = memory.estimate.stages[static_cast<std::size_t>(memory.estimate.peak_stage)];
  bool fits = false;
  std::string how;
  if (memory.fit.gpu == Verdict::OVERFLOWS) {
    how = fmt::format("the memory model puts {:.2f} GiB on its largest GPU, over {} by more than the model's tolerance, so "
                      "nothing is replayed",
                      st.gpu_bytes() / GiB, gpu_limit_text(l));
  } else {
    const std::optional<MemoryMisfit> misfit = replay_misfit(*replay, l);
    fits = !misfit || misfit->reason != "gpu-memory";
    how = fmt::format("the replay reserves {:.2f} GiB at its peak ({:.2f} GiB allocated), {} {}", replay->peak_reserved_bytes / GiB,
                      replay->peak_memory_bytes / GiB, fits ? "within" : "over", gpu_limit_text(l));
  }
  const double measured = ran_out_of_memory(run) ? 0 : 1;
  ValidationRow r = row(run, "fits", "boolean", fits ? 1 : 0, measured, true, 0,
                        fmt::format("predicted {} by the planner's rule (planner/memory_fit.hpp): {}; measured: {}",
                                    fits ? "to fit" : "not to fit", how, ran_out_of_memory(run) ? "ran out of memory" : "ran"));
  r.error_pct = 0;  // a percentage of a yes or no says nothing: error_abs is the row's error (+1: predicted to fit, ran out)
  r.within = r.predicted == r.measured;
  return r;
}

}  // namespace

// A row's own capture, or --capture for every row; a row that names one while --capture names
// another would leave which to use unsaid, so both are refused.
void check_capture_source(const MeasuredRun& run, const InputFlags& flags) {
  if (run.capture_path && !flags.capture_file.empty()) {
    throw ConfigError(run.path, "capture",
                      "either the run's own capture or --capture, not both (drop --capture to predict each run from its own)",
                      "capture \"" + *run.capture_path + "\" and --capture \"" + flags.capture_file + "\"");
  }
}

// A profile calibrated for PyTorch's stacks: their host dispatch and their own kernels (flash attention
// and the torch_* curves of calibrate/scripts/torch_microbench.py). h200x2-measured has host dispatch but
// not the kernels: a run costed there would take its attention and elementwise kernels at GEMM efficiency
// and generic copy rates, so it is passed over for h200x4-measured.
static bool calibrated_for_pytorch(const hw::ClusterProfile& p) {
  const auto& c = p.calibration;
  const bool torch_kernels =
      std::any_of(c.kernels.begin(), c.kernels.end(), [](const hw::BandwidthCurve& k) { return k.what.starts_with("torch_"); });
  return c.host_dispatch.has_value() && !c.attention.empty() && torch_kernels;
}

std::string default_profile(const MeasuredRun& run) {
  for (const std::string& name : hw::builtin_profile_names()) {
    const hw::ClusterProfile p = hw::builtin_profile(name);
    if (p.gpu.model == run.gpu && p.gpus_per_node() >= run.gpus && calibrated_for_pytorch(p)) return name;
  }
  throw ConfigError(run.path, run.from_trace ? "deviceProperties[0].name" : "provenance.gpu",
                    fmt::format("a GPU that a built-in profile calibrated for PyTorch (host dispatch, flash attention, torch "
                                "kernels) describes with {} GPUs per node (or give --hw)",
                                run.gpus),
                    "\"" + run.gpu + "\"");
}

// Measured runs sit a few folders deep (machine/date/run); 32 is far past that and far below
// the open-file limit a recursive walk would otherwise reach.
constexpr int MAX_MEASURED_DEPTH = 32;

ValidationInputs read_validation_inputs(const std::string& measured, const std::string& sidecar, const InputFlags& flags) {
  namespace fs = std::filesystem;
  ValidationInputs in;
  std::error_code ec;
  if (fs::is_directory(measured, ec)) {
    if (!sidecar.empty()) throw ConfigError("--sidecar", "--sidecar", "no --sidecar with a directory of measured runs", "\"" + sidecar + "\"");
    std::vector<std::string> files;
    // Every step checked, none throwing: a symlink loop, an unreadable subdirectory or a tree
    // deeper than the open-file limit is an error naming the path, not an internal error.
    fs::recursive_directory_iterator it(measured, ec);
    std::string last = measured;  // a failed step is entering the last entry seen, or leaving it
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const std::string p = it->path().string();
      last = p;
      if (it.depth() >= MAX_MEASURED_DEPTH) {
        throw ConfigError(p, "(directory)", fmt::format("directories nested at most {} deep under {}", MAX_MEASURED_DEPTH, measured),
                          "deeper");
      }
      if (!p.ends_with(".json")) continue;
      // Every .json entry is read through the reader that refuses what is not a regular file (a
      // FIFO, a device), rather than skipped in silence; a directory so named is walked into.
      const bool directory = it->is_directory(ec);
      if (ec) throw ConfigError(p, "(file)", "a readable measured-run file or directory", ec.message());
      if (!directory) files.push_back(p);
    }
    if (ec) throw ConfigError(last, "(directory)", "a readable directory of measured runs under " + measured, ec.message());
    std::sort(files.begin(), files.end());
    // A run's name keys its report rows and its known gaps: two runs of one name would make both
    // ambiguous, so the second is refused, naming the first.
    std::map<std::string, std::string> file_of_name;
    for (const auto& f : files) {
      if (!is_measured_run_file(f)) continue;
      in.runs.push_back(load_measured_run(f));
      in.paths.push_back(f);
      const auto [first, inserted] = file_of_name.emplace(in.runs.back().name, f);
      if (!inserted) {
        throw ConfigError(f, "name", "a name no other measured run under " + measured + " has (" + first->second + " has it)",
                          "\"" + in.runs.back().name + "\"");
      }
    }
    if (in.runs.empty()) {
      throw ConfigError(measured, "(directory)", "a directory holding measured-run JSON files (\"kind\": \"trainsim.measured_run\")", "none");
    }
    for (const MeasuredRun& run : in.runs) check_capture_source(run, flags);
    return in;
  }
  if (!fs::is_regular_file(measured, ec)) {
    const bool exists = fs::exists(measured, ec);
    throw ConfigError("--measured", "--measured", "a measured-run JSON, a profiler trace or a directory",
                      "\"" + measured + "\" (" + (exists ? "not a regular file" : "no such file") + ")");
  }
  in.paths.push_back(measured);
  if (!sidecar.empty()) in.paths.push_back(sidecar);
  if (measured.ends_with(".gz")) {
    in.runs.push_back(measured_run_from_trace(measured, sidecar, flags.model));
    return in;
  }
  // A plain profiler trace is streamed by its own reader; anything else is built as a measured run,
  // under its limits.
  const std::string text = read_input_file(measured);
  const MeasuredFileKind found = measured_file_kind(text);
  if (found.trace && found.json) {
    in.runs.push_back(measured_run_from_trace(measured, sidecar, flags.model));
  } else {
    const JsonDocument doc = parse_json_text(text, measured, MEASURED_JSON_LIMITS);
    if (!sidecar.empty()) {
      throw ConfigError("--sidecar", "--sidecar", "a sidecar only with a profiler trace (a measured run names its own model and strategy)",
                        "\"" + sidecar + "\"");
    }
    in.runs.push_back(measured_run_from_json(doc, std::filesystem::path(measured).parent_path().string()));
    check_capture_source(in.runs.back(), flags);
  }
  return in;
}

RunValidation validate_run(const MeasuredRun& run_in, const InputFlags& given, bool hw_given, bool read_trace) {
  RunValidation v;
  v.run = run_in;
  MeasuredRun& run = v.run;
  if ((read_trace || run.from_trace) && run.trace_path) v.trace = read_profiler_trace(*run.trace_path);
  if (read_trace && run.trace_summary_path) v.trace = read_trace_summary(*run.trace_summary_path);
  if (run.from_trace) {
    run.step_time_s = v.trace->step_s;
    if (run.gpu.empty()) run.gpu = v.trace->gpu;
    if (run.gpus <= 1 && v.trace->world_size > 1) run.gpus = v.trace->world_size;
    if (run.peak_allocated_bytes.empty() && v.trace->peak_allocated_bytes) run.peak_allocated_bytes = {*v.trace->peak_allocated_bytes};
  }
  const std::string hw = hw_given ? given.hw : run.profile_path ? *run.profile_path : default_profile(run);
  v.profile = hw;

  InputFlags flags = given;
  if (flags.model.empty()) flags.model = run.model_path;
  flags.hw = hw;
  // The run's own capture predicts it as --capture would (request.cpp attaches it).
  check_capture_source(run, given);
  if (run.capture_path) flags.capture_file = *run.capture_path;
  wl::StrategyInput strategy = run.strategy;
  // The run's own pipeline partition (a stack splits layers its own way; run_step.py evenly).
  if (run.layers_per_stage.size() >= 2) {
    strategy.first_stage_layers.set(run.layers_per_stage.front(), run.path + ": stack.details.layers_per_stage");
    strategy.last_stage_layers.set(run.layers_per_stage.back(), run.path + ": stack.details.layers_per_stage");
  }
  flags.base_strategy = strategy;
  MemoryAnswer memory = answer_memory(resolve_request(flags));
  const Request& request = memory.request;
  v.profile = request.profile.name;
  v.profile_description = request.profile.description;
  v.features = strategy_features(request.inputs.strategy);
  if (request.infeasible_reason) {
    v.error = "not simulated: " + *request.infeasible_reason;
    return v;
  }
  if (request.inputs.model.capture) {
    v.capture = request.inputs.model.capture->id;
    v.notes.push_back("each layer's, the embedding's and the head's kernels from the capture " + request.inputs.model.capture->describe);
  }
  const bool oom = ran_out_of_memory(run);
  // A run that ran out of memory has one row: whether it fits. Where the memory model already says it
  // does not, the planner replays nothing, and neither does this.
  if (oom && memory.fit.gpu == Verdict::OVERFLOWS) {
    v.rows.push_back(fits_row(run, memory, nullptr));
    return v;
  }
  // A run that ran is known to have fit: it is simulated whatever the memory model says about fitting,
  // so its predicted peak can be compared with the measured one.
  // The storage of the machine the run ran on, measured in the same device call, replaces the
  // profile's: each lent VM's disk is its own (reports/validation/reference/README.md).
  hw::ClusterProfile profile = request.profile;
  if (run.machine_storage) {
    const MachineStorage& ms = *run.machine_storage;
    if (profile.storage.kind == hw::StorageKind::NONE || profile.storage.count <= 0) {
      v.storage_basis = fmt::format("storage: the run's machine_storage not applied: profile {} has no storage tier", profile.name);
    } else {
      const std::string mixed =
          ms.mixed_read_GBps > 0 ? fmt::format(", reads and writes at once {:.3f} + {:.3f} GB/s", ms.mixed_read_GBps, ms.mixed_write_GBps)
                                 : std::string();
      v.storage_basis = fmt::format(
          "storage: the machine it ran on, read {:.3f} GB/s, write {:.3f} GB/s per device{} ({}), not profile {}'s "
          "{:.3f} / {:.3f}{}",
          ms.read_GBps, ms.write_GBps, mixed, ms.source, profile.name, profile.storage.read_GBps, profile.storage.write_GBps,
          profile.storage.mixed_read_GBps > 0 && ms.mixed_read_GBps == 0 ? " (the profile's mixed figure, of its own machine, dropped)" : "");
      profile.storage.read_GBps = ms.read_GBps;
      profile.storage.write_GBps = ms.write_GBps;
      // A mixed figure is the run's machine's or none: the profile's was measured elsewhere.
      profile.storage.mixed_read_GBps = ms.mixed_read_GBps;
      profile.storage.mixed_write_GBps = ms.mixed_write_GBps;
      profile.storage.source = "the run's machine_storage: " + ms.source;
    }
  }
  const double ops = sim::estimated_replay_ops(request.inputs.model, request.inputs.strategy, profile);
  if (ops > sim::MAX_REPLAY_OPS) {
    v.error = fmt::format("not simulated: the replay would hold about {:.3g} million ops, beyond trainsim's limit", ops / 1e6);
    return v;
  }
  const sim::SimResult r = sim::simulate(request.inputs.model, request.inputs.strategy, profile, memory.estimate);
  if (!r.simulated) {
    v.error = "not simulated: " + r.infeasible_reason.value_or("the simulator gave no result");
    return v;
  }
  std::set<std::string> seen;
  for (const auto& list : {r.assumptions, r.notes}) {
    for (const auto& n : list) {
      if (seen.insert(n).second) v.notes.push_back(n);
    }
  }
  for (const auto& g : r.per_gpu) v.predicted_peaks.push_back(g.peak_memory_bytes);
  if (oom) {
    v.rows.push_back(fits_row(run, memory, &r));
    return v;
  }
  // Only where the run's stack has calibrated host dispatch (a stack without, such as trainsim's
  // reference step, has no host stream to move).
  if (sim::stack_dispatch(request.inputs.strategy, profile) != nullptr && r.step_time_s > 0) {
    const sim::SimResult slower = sim::simulate(request.inputs.model, request.inputs.strategy,
                                                with_host_dispatch_scaled(profile, 1 + HOST_SENSITIVITY_PROBE), memory.estimate);
    if (slower.simulated) v.host_sensitivity = (slower.step_time_s / r.step_time_s - 1) / HOST_SENSITIVITY_PROBE;
  }
  if (copies_into_fresh_pageable(request.inputs.strategy, request.inputs.model.numerics)) {
    const sim::SimResult fresh = sim::simulate(request.inputs.model, request.inputs.strategy, with_fresh_pageable_pages(profile),
                                               memory.estimate);
    if (fresh.simulated) v.fresh_pages_step_s = fresh.step_time_s;
  }

  v.rows.push_back(row(run, "step_time", "s", r.step_time_s, run.step_time_s, true, STEP_TOLERANCE_PCT,
                       v.storage_basis.empty() ? "measured: median of the timed steps (slowest rank)"
                                               : "measured: median of the timed steps (slowest rank); predicted with " + v.storage_basis));
  const double predicted_peak = max_of(v.predicted_peaks);
  if (!run.peak_allocated_bytes.empty()) {
    v.rows.push_back(row(run, "peak_allocated", "bytes", predicted_peak, max_of(run.peak_allocated_bytes), true, MEMORY_TOLERANCE_PCT,
                         "the largest GPU: torch.cuda.max_memory_allocated against the replay's timeline peak"));
  }
  // The caching allocator reserves whole segments and keeps freed blocks: on a stack that allocates
  // through it, the replay's memory events go through its model (sim/engine/reserved_memory.hpp); trainsim's
  // reference step holds one arena, allocated once, so its reserved peak is its allocated one. No
  // target (the issue sets none): the row shows the model's error.
  if (!run.peak_reserved_bytes.empty()) {
    const bool caching = wl::stack_model(request.inputs.strategy).caching_allocator;
    double predicted_reserved = predicted_peak;
    if (caching) {
      for (const auto& g : r.per_gpu) v.predicted_reserved.push_back(g.peak_reserved_bytes);
      predicted_reserved = max_of(v.predicted_reserved);
    }
    v.rows.push_back(row(run, "peak_reserved", "bytes", predicted_reserved, max_of(run.peak_reserved_bytes), false, 0,
                         caching ? "predicted: the replay's memory events through the caching-allocator model, one request an event"
                                 : "predicted: the allocated peak (the stack has no caching allocator)"));
  }
  const sim::GpuResult* first = r.per_gpu.empty() ? nullptr : &r.per_gpu.front();
  // Where the GPU time goes, kernel class by kernel class: rank 0's profiled step against the
  // first simulated GPU (rank 0's stage) of the replay (validation_kernels.cpp reports them).
  if (first != nullptr && v.trace) {
    const TraceSummary& t = *v.trace;
    v.kernel_classes = {{"GEMM", first->gemm_kernel_s, t.gemm_kernel_s},
                        {"attention", first->attention_kernel_s, t.attention_kernel_s},
                        {"other kernels", first->other_kernel_s, t.other_kernel_s},
                        {"optimizer", first->optimizer_kernel_s, t.optimizer_kernel_s}};
  }
  const double exposed_measured = run.exposed_communication_s.value_or(v.trace ? v.trace->exposed_communication_s : -1.0);
  // Not for pipelines: there a stage waiting for its neighbour sits in an NCCL receive kernel,
  // which the trace counts as communication and the replay as idle; their bubble row covers it.
  if (first != nullptr && exposed_measured >= 0 && run.gpus > 1 && request.inputs.strategy.pp == 1) {
    v.rows.push_back(row(run, "exposed_communication", "s", first->exposed_communication_s, exposed_measured, false, 0,
                         "rank 0: NCCL kernels running while no other GPU work does (profiler trace)"));
  }
  // Per-stream busy times a reference step reports (measured.busy), where the replay has the same;
  // busy as the run defines it (measured_run.hpp, BusyDefinition): the GPU's kernels, or the spans
  // of the stack's calls, CUDA events around each (the replay measures both).
  const bool call_spans = run.busy_definition == BusyDefinition::CALL_SPANS;
  const double compute_busy = first == nullptr ? 0 : call_spans ? first->call_span_compute_s : first->compute_s;
  const double optimizer_busy = first == nullptr ? 0 : call_spans ? first->call_span_optimizer_s : first->optimizer_s;
  if (first != nullptr && run.compute_busy_s) {
    v.rows.push_back(row(run, "compute_busy", "s", compute_busy, *run.compute_busy_s, false, 0,
                         call_spans ? "rank 0: its forward and backward calls' spans (CUDA events around each call)"
                                    : "rank 0: compute stream busy"));
  }
  if (first != nullptr && run.optimizer_busy_s) {
    v.rows.push_back(row(run, "optimizer_busy", "s", optimizer_busy, *run.optimizer_busy_s, false, 0,
                         call_spans ? "rank 0: the optimizer step call's span" : "rank 0: optimizer step"));
  }
  const bool pipeline = request.inputs.strategy.pp > 1;
  const double bubble_measured = run.bubble_fraction.value_or(v.trace ? v.trace->no_compute_fraction : -1.0);
  if (pipeline && first != nullptr && bubble_measured >= 0 && r.step_time_s > 0) {
    // The same definition on both sides: the share of stage 0's step its GPU is not busy, busy
    // being what the run counts (run.busy_definition; a profiled step's trace counts kernels).
    const double predicted = std::clamp(1.0 - (compute_busy + optimizer_busy) / r.step_time_s, 0.0, 1.0);
    ValidationRow b = row(run, "bubble_fraction", "fraction", predicted, bubble_measured, true, 0,
                          !run.bubble_fraction ? "stage 0: share of the step its GPU runs no compute (measured: the profiled step's "
                                                 "trace, idle or in NCCL kernels alone)"
                          : call_spans ? "stage 0: share of the step outside its compute calls' spans (call_spans: CUDA events "
                                         "around each forward, backward, loss and optimizer call over the timed steps; replay: "
                                         "each call from its host dispatch starting, or the stream's earlier work and the waits "
                                         "queued before it ending, to its last kernel's end)"
                                       : "stage 0: share of the step its GPU runs no compute (measured: the run's own timing "
                                         "of its timed steps)");
    b.within = std::abs(b.error_abs) <= BUBBLE_TOLERANCE;
    v.rows.push_back(b);
  }
  // Said to have run ("oom": false): whether trainsim predicts that it fits.
  if (run.oom) v.rows.push_back(fits_row(run, memory, &r));
  return v;
}

MetricStats metric_stats(const std::vector<RunValidation>& runs, const std::string& metric, bool exclude_gaps) {
  MetricStats s;
  double sum = 0, sum_abs = 0;
  // The bubble's target is absolute, and whether a configuration fits is a yes or no: their worst
  // row is the largest absolute error.
  const bool absolute = metric == "bubble_fraction" || metric == "fits";
  for (const auto& v : runs) {
    for (const auto& r : v.rows) {
      if (r.metric != metric || (exclude_gaps && !r.gap.empty())) continue;
      ++s.rows;
      sum += std::abs(r.error_pct);
      sum_abs += std::abs(r.error_abs);
      const bool worse = absolute ? std::abs(r.error_abs) > std::abs(s.worst_error_abs) : std::abs(r.error_pct) > std::abs(s.worst_error_pct);
      if (s.worst_name.empty() || worse) {
        s.worst_error_pct = r.error_pct;
        s.worst_error_abs = r.error_abs;
        s.worst_name = r.name;
      }
      if (!r.within) ++s.outside;
    }
  }
  if (s.rows > 0) {
    s.mean_abs_error_pct = sum / static_cast<double>(s.rows);
    s.mean_abs_error_abs = sum_abs / static_cast<double>(s.rows);
  }
  return s;
}

}  // namespace trainsim::planner
