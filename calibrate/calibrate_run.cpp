#include "calibrate_run.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "atomic_file.hpp"
#include "config_error.hpp"
#include "cpu_benchmarks.hpp"
#include "errors.hpp"
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
    const hw::ClusterProfile profile = build_profile(
        {in.options, in.host, in.gpu, in.storage, results, *in.base, *in.options.base, profile_prov});
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

int run_calibration(const Options& o) {
  const double t_start = now_s();
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
  // Checked before anything is measured; created (if missing) only when the results are written.
  const std::string out_dir = check_out_dir(o.out_dir, output_names(base.has_value()));

  nlohmann::ordered_json prov;
  prov["kind"] = "measured";
  prov["tool"] = std::string("trainsim-calibrate ") + TOOL_VERSION;
  prov["date"] = host.date_utc;
  prov["host"] = host.hostname;
  prov["command_line"] = o.command_line;
  prov["mode"] = std::string(to_string(o.mode));
  prov["base_profile"] = o.base ? nlohmann::ordered_json(*o.base) : nlohmann::ordered_json(nullptr);
  prov["gpu"] = to_json(gpu);
  prov["host_info"] = to_json(host);
  if (storage) {
    prov["storage"] = to_json(*storage);
    prov["storage"]["directory"] = scratch->path();
  }
  prov["environment"] = {{"NCCL_NVLS_ENABLE", env_or("NCCL_NVLS_ENABLE", "(unset: set to 0 by the tool)")},
                         {"CUDA_VISIBLE_DEVICES", env_or("CUDA_VISIBLE_DEVICES", "(unset)")}};

  std::printf("trainsim-calibrate %s: %s run on %s, writing to %s\n", TOOL_VERSION, std::string(to_string(o.mode)).c_str(),
              host.hostname.c_str(), out_dir.c_str());
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
  const std::vector<Part> order{Part::GEMM,        Part::KERNELS, Part::HOST_COPY, Part::NCCL,
                                Part::STORAGE_GPU, Part::STORAGE, Part::CPU_ADAM,  Part::HOST_MEMORY,
                                Part::INTERFERENCE, Part::HOST_DISPATCH, Part::REFERENCE_KERNELS};
  nlohmann::ordered_json timings;
  for (Part part : order) {
    if (!o.parts.contains(part)) continue;
    const double t0 = now_s();
    std::printf("[%s]\n", std::string(to_string(part)).c_str());
    std::fflush(stdout);
    switch (part) {
      case Part::GEMM: run_gemm_bench(o.mode, gpu, results); break;
      case Part::KERNELS: run_kernel_bench(o.mode, gpu, results); break;
      case Part::HOST_COPY: run_host_copy_bench(o.mode, gpu, results); break;
      case Part::NCCL: run_nccl_bench(o.mode, gpu, results); break;
      case Part::STORAGE_GPU: run_storage_gpu_bench(o.mode, gpu, *scratch, results); break;
      case Part::STORAGE: {
        StorageConfig c = storage_config(o.mode);
        if (o.storage_file_mib != 0) c.file_bytes = static_cast<std::size_t>(o.storage_file_mib) << 20;
        if (o.storage_mixed_file_mib != 0) c.mixed.file_bytes = static_cast<std::size_t>(o.storage_mixed_file_mib) << 20;
        run_storage_bench(c, *scratch, results);
        break;
      }
      case Part::CPU_ADAM: run_cpu_adam_bench(o.mode, o.threads, results); break;
      case Part::HOST_MEMORY: run_host_memory_bench(o.mode, results); break;
      case Part::INTERFERENCE: run_interference_bench(o.mode, gpu, results); break;
      case Part::HOST_DISPATCH: run_host_dispatch_bench(o.mode, gpu, results); break;
      case Part::REFERENCE_KERNELS: run_reference_kernel_bench(o.mode, gpu, results); break;
    }
    timings[std::string(to_string(part))] = now_s() - t0;
    std::printf("[%s] done in %.1f s\n", std::string(to_string(part)).c_str(), now_s() - t0);
  }
  if (!base) results.note("no --base given: profile.json not written (a profile needs datasheet peaks and costs from a base)");
  prov["seconds"] = timings;
  prov["seconds"]["total"] = now_s() - t_start;
  prov["notes"] = results.notes();
  // What `rebuild` needs to write the same profile again from raw_results.json.
  prov["options"] = {{"name", o.name},
                     {"base", o.base ? nlohmann::ordered_json(*o.base) : nlohmann::ordered_json(nullptr)},
                     {"storage_kind", o.storage_kind ? nlohmann::ordered_json(*o.storage_kind) : nlohmann::ordered_json(nullptr)}};
  const auto heads = write_outputs({o, out_dir, host, gpu, storage, results, prov, base});
  std::printf("\nheadline figures (median [min .. max]):\n");
  for (const auto& h : heads) {
    if (h.stats) {
      std::printf("  %-28s %12.4g %-9s [%.4g .. %.4g]\n", h.name.c_str(), h.stats->median, h.unit.c_str(), h.stats->min,
                  h.stats->max);
    } else {
      std::printf("  %-28s %12s\n", h.name.c_str(), "not measured");
    }
  }
  std::printf("wrote %s/{raw_results.json,summary.json,summary.md%s} and the plots in %.1f s\n", out_dir.c_str(),
              base ? ",profile.json" : "", now_s() - t_start);
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
