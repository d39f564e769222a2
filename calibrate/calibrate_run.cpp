#include "calibrate_run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "atomic_file.hpp"
#include "config_error.hpp"
#include "cpu_benchmarks.hpp"
#include "errors.hpp"
#include "framework_driver.hpp"
#include "part_store.hpp"
#include "run_plan.hpp"
#include "gpu_benchmarks.hpp"
#include "headlines.hpp"
#include "host_info.hpp"
#include "profile_loader.hpp"
#include "profile_writer.hpp"
#include "report.hpp"
#include "storage_bench.hpp"
#include "strict_json.hpp"

namespace trainsim::calibrate {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// The files every run writes into --out (plots and, with --base, profile.json come beside them).
std::vector<std::string> output_names(bool with_profile) {
  std::vector<std::string> names{"raw_results.json", "summary.json", "summary.md"};
  if (with_profile) names.emplace_back("profile.json");
  return names;
}

std::string no_gpu_message(const GpuInfo& gpu, const Options& o) {
  std::string asked;
  for (Part p : o.parts) {
    if (is_gpu_part(p)) asked += (asked.empty() ? "" : ", ") + std::string(to_string(p));
  }
  return "no GPU: " + gpu.why_not + ".\nThe GPU benchmarks asked for (" + asked +
         ") cannot run here. To run only the CPU benchmarks (CPU-Adam, host memory, storage), use\n"
         "  trainsim-calibrate --only cpu --storage-dir DIR --out " + o.out_dir;
}

}  // namespace

std::vector<Headline> write_outputs(const OutputInputs& in) {
  const Results& results = in.results;
  const auto heads = headlines(results);
  const auto plots = render_plots(results);
  nlohmann::ordered_json raw;
  raw["schema_version"] = 1;
  raw["provenance"] = in.provenance;
  raw["headlines"] = summary_json(heads, {})["spread"];
  raw["measurements"] = results.to_json();
  if (!in.framework.empty()) raw["framework"] = in.framework;

  std::vector<std::pair<std::string, std::string>> files;
  files.emplace_back("raw_results.json", raw.dump(1) + "\n");
  files.emplace_back("summary.json", summary_json(heads, in.provenance).dump(2) + "\n");
  files.emplace_back("summary.md", summary_markdown(results, heads, in.provenance, plots));
  for (const auto& [name, svg] : plots) files.emplace_back(name, svg);
  if (in.base) {
    nlohmann::ordered_json profile_prov = in.provenance;
    profile_prov["calibration_source"] =
        "calibration tables measured by trainsim-calibrate on " + in.host.hostname + " " + in.host.date_day +
        ": gemm efficiency = median TFLOP/s / base peak_TFLOPs (one entry per m,n,k, first layout measured); "
        "collectives = NCCL bus bandwidth (nccl-tests definition) by size; copies and kernels = median GB/s by size; "
        "cpu_adam_params_per_s = bf16 copy, all threads, largest size. Figures rounded to 4 significant digits.";
    // The raw measurements (every configuration with its spread and output check) are in
    // raw_results.json beside the profile; embedding them would make the profile too large to be
    // compiled in as a built-in. Their headline figures and spread are kept here.
    profile_prov["raw_results"] = {{"file", "raw_results.json (written beside this profile)"},
                                   {"measurements", results.all().size()}};
    profile_prov["headlines"] = summary_json(heads, {})["spread"];
    hw::ClusterProfile profile = build_profile(
        {in.options, in.host, in.gpu, in.storage, results, *in.base, *in.options.base, profile_prov});
    if (!in.framework.empty()) {
      const auto bf16 = profile.gpu.peak_TFLOPs.find(hw::ComputePrecision::BF16);
      profile = with_framework_sections(
          profile, FrameworkDriver::locate().sections(in.framework, "raw_results.json framework",
                                                      bf16 == profile.gpu.peak_TFLOPs.end() ? 0 : bf16->second));
    }
    files.emplace_back("profile.json", profile_text(profile));
  }
  write_out_dir(in.out_dir, files);
  return heads;
}

std::optional<hw::ClusterProfile> resolve_base_profile(const std::optional<std::string>& base) {
  if (!base) return std::nullopt;
  try {
    return hw::resolve_profile(*base, "--base");
  } catch (const ConfigError& e) {
    throw UsageError("--base", "a built-in profile name or a readable profile .json", e.what());
  }
}

namespace {

// The order parts run in, and their priority under --budget: what every profile needs first, the
// framework parts next (they are a block: one driver start), the long and optional ones last.
const std::vector<Part> RUN_ORDER{Part::GEMM,         Part::KERNELS,     Part::HOST_COPY,   Part::NCCL,
                                  Part::HOST_DISPATCH, Part::CPU_ADAM,   Part::HOST_MEMORY, Part::FRAMEWORK,
                                  Part::INTERFERENCE, Part::REFERENCE_KERNELS, Part::STORAGE_GPU, Part::STORAGE};

void run_native_part(Part part, Mode mode, const Options& o, const GpuInfo& gpu, ScratchDir* scratch, Results& results) {
  switch (part) {
    case Part::GEMM: run_gemm_bench(mode, gpu, results); break;
    case Part::KERNELS: run_kernel_bench(mode, gpu, results); break;
    case Part::HOST_COPY: run_host_copy_bench(mode, gpu, results); break;
    case Part::NCCL: run_nccl_bench(mode, gpu, results); break;
    case Part::STORAGE_GPU: run_storage_gpu_bench(mode, gpu, *scratch, results); break;
    case Part::STORAGE: {
      StorageConfig c = storage_config(mode);
      if (o.storage_file_mib != 0) c.file_bytes = static_cast<std::size_t>(o.storage_file_mib) << 20;
      if (o.storage_mixed_file_mib != 0) c.mixed.file_bytes = static_cast<std::size_t>(o.storage_mixed_file_mib) << 20;
      run_storage_bench(c, *scratch, results);
      break;
    }
    case Part::CPU_ADAM: run_cpu_adam_bench(mode, o.threads, results); break;
    case Part::HOST_MEMORY: run_host_memory_bench(mode, results); break;
    case Part::INTERFERENCE: run_interference_bench(mode, gpu, results); break;
    case Part::HOST_DISPATCH: run_host_dispatch_bench(mode, gpu, results); break;
    case Part::REFERENCE_KERNELS: run_reference_kernel_bench(mode, gpu, results); break;
    case Part::FRAMEWORK: break;
  }
}

std::string seconds_text(double s) {
  char buf[32];
  if (s < 90) {
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f min %02.0f s", std::floor(s / 60), std::fmod(s, 60.0));
  }
  return buf;
}

}  // namespace

int run_calibration(const Options& given) {
  const double t_start = now_s();
  // A resumed run is the recorded one again, with its finished parts kept (and a new budget, if given).
  Options o = given;
  if (given.resume_dir) {
    const std::vector<std::string> args = PartStore::recorded_arguments(*given.resume_dir);
    o = parse_command_line(args).options;
    o.resume_dir = given.resume_dir;
    if (given.budget_s) o.budget_s = given.budget_s;
    o.command_line = given.command_line;
  }
  const HostInfo host = probe_host();
  // Usage errors first, then "no GPU", and only then is anything created on disk.
  const std::optional<hw::ClusterProfile> base = resolve_base_profile(o.base);
  std::unique_ptr<ScratchDir> scratch;
  std::optional<StorageDevice> storage;
  if (o.storage_dir) {
    scratch = std::make_unique<ScratchDir>(*o.storage_dir);
    storage = probe_storage(scratch->path());
  }
  install_cleanup_signal_handlers();

  GpuInfo gpu;
  if (any_gpu_part(o.parts)) {
    gpu = probe_gpus(o.gpus);
    if (!gpu.available) throw NoGpuError(no_gpu_message(gpu, o));
    if (o.gpus > gpu.visible) {
      throw UsageError("--gpus", "at most " + std::to_string(gpu.visible) + " (the GPUs CUDA can see)", std::to_string(o.gpus));
    }
  } else {
    gpu.why_not = "no GPU benchmark was asked for";
  }
  // Checked before anything is measured; created (if missing) when the first part is kept.
  const std::string out_dir = check_out_dir(o.out_dir, output_names(base.has_value()));
  const PartStore store(out_dir);
  if (!o.resume_dir && store.exists()) {
    throw UsageError("--out", "a directory without the parts/ of an earlier run (finish that run with --resume " +
                     o.out_dir + ", or remove " + store.dir() + ")", "\"" + o.out_dir + "\"");
  }

  std::printf("trainsim-calibrate %s: %s run on %s, writing to %s%s\n", TOOL_VERSION, std::string(to_string(o.mode)).c_str(),
              host.hostname.c_str(), out_dir.c_str(), o.resume_dir ? " (resumed: finished parts kept)" : "");
  if (gpu.available) {
    std::printf("  %zu x %s (driver %s, CUDA runtime %d, cuBLAS %s, NCCL %s)\n", gpu.devices.size(),
                gpu.devices.front().name.c_str(), gpu.driver_version.c_str(), gpu.cuda_runtime, gpu.cublas_version.c_str(),
                gpu.nccl_version.c_str());
  }
  Results results;
  for (const auto& n : o.skipped_notes) results.note(n);
  if (base && gpu.available && gpu_family(gpu.devices.front().name) != gpu_family(base->gpu.model)) {
    results.note("the base profile " + *o.base + " describes " + base->gpu.model + " but this machine has " +
                 gpu.devices.front().name + ": datasheet peaks copied from the base (and GEMM efficiencies relative "
                 "to them) may not apply");
  }

  // The framework parts: where PyTorch with CUDA is importable, the driver says which and what they cost.
  const FrameworkDriver driver = FrameworkDriver::locate();
  FrameworkCatalog catalog;
  nlohmann::ordered_json framework_facts;
  if (o.parts.contains(Part::FRAMEWORK)) {
    const FrameworkProbe probe = driver.probe();
    if (probe.available) {
      catalog = driver.catalog(o.mode);
      framework_facts = probe.facts;
      framework_facts["driver"] = "calibrate/framework/ (python3 -m framework)";
    } else {
      std::printf("framework parts skipped: %s; the profile is written without its PyTorch sections\n", probe.why_not.c_str());
      results.note("framework parts skipped: " + probe.why_not);
    }
  }
  std::vector<PlanItem> items;
  for (Part part : RUN_ORDER) {
    if (!o.parts.contains(part)) continue;
    if (part != Part::FRAMEWORK) {
      items.push_back({std::string(to_string(part)), false, native_part_seconds(part, o.mode), ""});
      continue;
    }
    for (const auto& fp : catalog.parts) items.push_back({fp.name, true, fp.seconds, "sizes"});
  }
  const RunPlan plan = plan_run(items, o.budget_s, catalog.startup_seconds);
  std::printf("plan: %zu parts, about %s%s\n", plan.parts.size(), seconds_text(plan.seconds).c_str(),
              o.budget_s ? (" (budget " + seconds_text(*o.budget_s) + ")").c_str() : "");
  for (const auto& line : plan.left_out) {
    std::printf("  %s\n", line.c_str());
    results.note("--budget: " + line);
  }
  std::fflush(stdout);
  if (!o.resume_dir) store.record_arguments(o.arguments);

  // A run that outlives its budget (the estimates were wrong) stops starting parts, and stops the
  // driver, a quarter of the budget later; a run without one stops a hung driver at three times
  // its estimate.
  const std::optional<double> deadline =
      o.budget_s ? std::optional<double>(t_start + *o.budget_s * 1.25) : std::nullopt;
  double estimate_left = plan.seconds;
  nlohmann::ordered_json timings;
  nlohmann::ordered_json framework = nlohmann::ordered_json::object();
  std::vector<std::pair<std::string, int>> framework_todo;
  std::size_t index = 0;
  auto announce = [&](const PlannedPart& p) {
    ++index;
    std::printf("[%zu/%zu] %s (about %s; about %s left in the run)\n", index, plan.parts.size(), p.name.c_str(),
                seconds_text(p.seconds).c_str(), seconds_text(estimate_left).c_str());
    std::fflush(stdout);
  };
  auto past_deadline = [&](const std::string& name) {
    if (!deadline || now_s() < *deadline) return false;
    results.note(name + ": not measured, the run passed its budget of " + seconds_text(*o.budget_s) +
                 " (the estimates were short; resume with --resume " + o.out_dir + ")");
    return true;
  };
  for (std::size_t i = 0; i <= plan.parts.size(); ++i) {
    // The framework parts run together, in one driver, when the block of them ends.
    const bool block_ends = !framework_todo.empty() && (i == plan.parts.size() || !plan.parts[i].framework);
    if (block_ends) {
      const double t0 = now_s();
      std::optional<double> left;
      if (deadline) left = std::max(1.0, *deadline - now_s());
      double block_estimate = catalog.startup_seconds;
      for (const auto& [name, sizes] : framework_todo) {
        for (const auto& fp : catalog.parts) {
          if (fp.name == name) block_estimate += fp.seconds[static_cast<std::size_t>(sizes - 1)];
        }
      }
      if (!left) left = 3 * block_estimate + 120;
      store.make_dirs();
      std::string current;
      const ChildResult r = driver.run(store.framework_dir(), o.mode, framework_todo, [&](const nlohmann::json& e) {
        const std::string event = e.value("event", "");
        const std::string part = e.value("part", "");
        if (event == "progress") {
          std::printf("  %s: size %d of %d\n", part.c_str(), e.value("done", 0) + 1, e.value("of", 0));
        } else if (event == "part_done") {
          std::printf("[%s] done in %.1f s\n", part.c_str(), e.value("seconds", 0.0));
        } else if (event == "part_failed") {
          std::printf("[%s] FAILED: %s\n", part.c_str(), e.value("error", "").c_str());
          results.note(part + ": failed (" + e.value("error", "") + "); its section is not in the profile");
        }
        std::fflush(stdout);
      }, left);
      if (!r.started) throw CalibrationError("the framework driver could not start: " + r.error);
      if (r.timed_out) results.note("the framework driver was stopped at the run's deadline; the parts it finished are kept");
      else if (r.exit_code != 0 && r.exit_code != 1) {
        results.note("the framework driver ended with " + (r.error.empty() ? "exit " + std::to_string(r.exit_code) : r.error) +
                     ": " + r.stderr_tail.substr(r.stderr_tail.size() > 400 ? r.stderr_tail.size() - 400 : 0));
      }
      timings["framework"] = now_s() - t0;
      framework_todo.clear();
    }
    if (i == plan.parts.size()) break;
    const PlannedPart& p = plan.parts[i];
    if (p.framework) {
      if (auto doc = store.load_framework(p.name, p.level)) {
        announce(p);
        std::printf("[%s] finished in an earlier run: kept\n", p.name.c_str());
      } else if (!past_deadline(p.name)) {
        announce(p);
        framework_todo.emplace_back(p.name, p.level);
      }
      estimate_left -= p.seconds;
      continue;
    }
    const Part part = *std::find_if(RUN_ORDER.begin(), RUN_ORDER.end(), [&](Part q) { return to_string(q) == p.name; });
    const Mode mode = p.level == 1 ? Mode::QUICK : Mode::FULL;
    announce(p);
    estimate_left -= p.seconds;
    if (auto stored = store.load(p.name, p.level)) {
      std::printf("[%s] finished in an earlier run: kept\n", p.name.c_str());
      for (auto& m : stored->measurements) results.add(std::move(m));
      for (auto& n : stored->notes) results.note(std::move(n));
      timings[p.name] = stored->seconds;
      continue;
    }
    if (past_deadline(p.name)) continue;
    const double t0 = now_s();
    const std::size_t measured_before = results.all().size(), notes_before = results.notes().size();
    run_native_part(part, mode, o, gpu, scratch.get(), results);
    timings[p.name] = now_s() - t0;
    StoredPart stored{p.level, now_s() - t0,
                      std::vector<Measurement>(results.all().begin() + static_cast<std::ptrdiff_t>(measured_before), results.all().end()),
                      std::vector<std::string>(results.notes().begin() + static_cast<std::ptrdiff_t>(notes_before), results.notes().end())};
    store.save(p.name, stored);
    std::printf("[%s] done in %.1f s\n", p.name.c_str(), now_s() - t0);
  }
  // Every framework part finished (now or before) goes into the raw results and the profile.
  for (const auto& p : plan.parts) {
    if (!p.framework) continue;
    if (auto doc = store.load_framework(p.name, p.level)) framework[p.name] = *doc;
  }
  if (!base) results.note("no --base given: profile.json not written (a profile needs datasheet peaks and costs from a base)");

  nlohmann::ordered_json prov;
  prov["kind"] = "measured";
  prov["tool"] = std::string("trainsim-calibrate ") + TOOL_VERSION;
  prov["date"] = host.date_utc;
  prov["host"] = host.hostname;
  prov["command_line"] = o.command_line;
  prov["mode"] = std::string(to_string(o.mode));
  if (o.budget_s) prov["budget_s"] = *o.budget_s;
  prov["base_profile"] = o.base ? nlohmann::ordered_json(*o.base) : nlohmann::ordered_json(nullptr);
  prov["gpu"] = to_json(gpu);
  prov["host_info"] = to_json(host);
  if (storage) {
    prov["storage"] = to_json(*storage);
    prov["storage"]["directory"] = scratch->path();
  }
  if (!framework_facts.empty()) prov["framework"] = framework_facts;
  prov["environment"] = {{"NCCL_NVLS_ENABLE", env_or("NCCL_NVLS_ENABLE", "(unset: set to 0 by the tool)")},
                         {"CUDA_VISIBLE_DEVICES", env_or("CUDA_VISIBLE_DEVICES", "(unset)")}};
  prov["seconds"] = timings;
  prov["seconds"]["total"] = now_s() - t_start;
  prov["notes"] = results.notes();
  // What `rebuild` needs to write the same profile again from raw_results.json.
  prov["options"] = {{"name", o.name},
                     {"base", o.base ? nlohmann::ordered_json(*o.base) : nlohmann::ordered_json(nullptr)},
                     {"storage_kind", o.storage_kind ? nlohmann::ordered_json(*o.storage_kind) : nlohmann::ordered_json(nullptr)}};
  const auto heads = write_outputs({o, out_dir, host, gpu, storage, results, framework, prov, base});
  std::printf("\nheadline figures (median [min .. max]):\n");
  for (const auto& h : heads) {
    if (h.stats) {
      std::printf("  %-28s %12.4g %-9s [%.4g .. %.4g]\n", h.name.c_str(), h.stats->median, h.unit.c_str(), h.stats->min,
                  h.stats->max);
    } else {
      std::printf("  %-28s %12s\n", h.name.c_str(), "not measured");
    }
  }
  std::printf("wrote %s/{raw_results.json,summary.json,summary.md%s} and the plots in %s%s\n", out_dir.c_str(),
              base ? ",profile.json" : "", seconds_text(now_s() - t_start).c_str(),
              framework.empty() ? "" : (" (framework parts: " + std::to_string(framework.size()) + ")").c_str());
  return 0;
}

int run_compare(const ParsedCommand& command) {
  nlohmann::json docs[2];
  for (int i = 0; i < 2; ++i) {
    const std::string& path = command.inputs[static_cast<std::size_t>(i)];
    // The one input reader: a regular file of bounded size (a FIFO or /dev/zero is refused, not
    // waited on or read to the end of memory), strict JSON.
    try {
      docs[i] = parse_json_file(path).json;
    } catch (const ConfigError& e) {
      throw UsageError("compare", "a summary.json written by trainsim-calibrate", e.what());
    }
    // A summary is an object with schema_version 1 and the spread of its figures (headlines.cpp);
    // anything else ([] or another tool's JSON) has nothing to compare, and "all figures agree"
    // would be a wrong answer.
    const nlohmann::json& d = docs[i];
    if (!d.is_object() || !d.contains("schema_version") || d["schema_version"] != 1 || !d.contains("spread") ||
        !d["spread"].is_object()) {
      throw UsageError("compare",
                       "a summary.json written by trainsim-calibrate (an object with \"schema_version\": 1 and "
                       "\"spread\")",
                       "\"" + path + "\": " + describe_json(d));
    }
  }
  const auto c = compare_summaries(docs[0], docs[1], command.inputs[0], command.inputs[1], command.tolerance);
  if (c.compared == 0) {
    throw UsageError("compare", "two summaries with at least one headline figure measured in both",
                     "no figure to compare");
  }
  std::printf("%s", c.text.c_str());
  std::printf("\n%s\n", c.agree ? "all compared figures agree within the tolerance"
                                : "some figures differ by more than the tolerance");
  return c.agree ? 0 : EXIT_FAILED;
}

}  // namespace trainsim::calibrate
