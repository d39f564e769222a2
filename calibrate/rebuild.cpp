// `trainsim-calibrate rebuild`: the summary, plots and profile of a past run, derived again from
// its raw_results.json without measuring anything. The measurements and the run's provenance are
// kept as they were; the rebuild adds when, how and against which base it was redone.
#include <cmath>
#include <cstdio>
#include <fstream>

#include "atomic_file.hpp"
#include "calibrate_run.hpp"
#include "config_error.hpp"
#include "errors.hpp"
#include "profile_loader.hpp"
#include "strict_json.hpp"

namespace trainsim::calibrate {
namespace {

template <class T>
T get(const nlohmann::json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? fallback : it->get<T>();
}

HostInfo host_from(const nlohmann::json& prov) {
  const auto& h = prov.at("host_info");
  HostInfo host;
  host.hostname = get<std::string>(h, "hostname", "?");
  host.cpu_model = get<std::string>(h, "cpu", "?");
  host.logical_cpus = get<int>(h, "logical_cpus", 0);
  host.physical_cores = get<int>(h, "physical_cores", 0);
  host.sockets = get<int>(h, "sockets", 1);
  host.memory_GiB = get<double>(h, "memory_GiB", 0);
  host.kernel = get<std::string>(h, "kernel", "");
  host.os = get<std::string>(h, "os", "");
  host.avx2 = get<bool>(h, "avx2", false);
  host.avx512 = get<bool>(h, "avx512", false);
  host.date_utc = get<std::string>(prov, "date", "?");
  host.date_day = host.date_utc.substr(0, 10);
  return host;
}

GpuInfo gpu_from(const nlohmann::json& g) {
  GpuInfo gpu;
  gpu.available = get<bool>(g, "available", false);
  gpu.why_not = get<std::string>(g, "why_not", "");
  gpu.built_with_cuda = get<bool>(g, "built_with_cuda", false);
  gpu.visible = get<int>(g, "visible", 0);
  if (g.contains("devices")) {
    for (const auto& d : g["devices"]) {
      const std::string cc = get<std::string>(d, "compute_capability", "0.0");
      gpu.devices.push_back({get<int>(d, "index", 0), get<std::string>(d, "name", "?"), get<std::string>(d, "pci_bus_id", ""),
                             get<double>(d, "memory_GiB", 0), get<int>(d, "sm_count", 0), std::stoi(cc),
                             std::stoi(cc.substr(cc.find('.') + 1))});
    }
  }
  gpu.driver_version = get<std::string>(g, "driver_version", "unknown");
  gpu.cuda_driver_api = get<int>(g, "cuda_driver_api", 0);
  gpu.cuda_runtime = get<int>(g, "cuda_runtime", 0);
  gpu.cublas_version = get<std::string>(g, "cublas_version", "");
  gpu.nccl_version = get<std::string>(g, "nccl_version", "");
  gpu.nvlinks_per_gpu = get<int>(g, "nvlinks_per_gpu", -1);
  gpu.nvlink_remote = get<std::string>(g, "nvlink_remote", "unknown");
  gpu.p2p_all_pairs = get<bool>(g, "p2p_all_pairs", false);
  gpu.context_GiB = get<double>(g, "context_GiB", 0);
  return gpu;
}

Results results_from(const nlohmann::json& raw) {
  Results r(false);
  add_measurements(r, raw.at("measurements"), "measurements");
  for (const auto& n : raw.at("provenance").value("notes", nlohmann::json::array())) {
    if (!n.is_string()) throw UsageError("rebuild", "provenance.notes strings", describe_json(n));
    r.note(n.get<std::string>());
  }
  return r;
}

int rebuild_from(const ParsedCommand& command, const std::string& path, const nlohmann::json& raw);

}  // namespace

int run_rebuild(const ParsedCommand& command) {
  const std::string& path = command.inputs.front();
  nlohmann::json raw;
  try {
    raw = parse_json_file(path).json;
  } catch (const ConfigError& e) {
    throw UsageError("rebuild", "a raw_results.json written by trainsim-calibrate", e.what());
  }
  if (!raw.is_object() || !raw.contains("provenance") || !raw.contains("measurements") || !raw["provenance"].is_object()) {
    throw UsageError("rebuild", "a raw_results.json with provenance and measurements", "\"" + path + "\"");
  }
  // Everything read from the file below: a value of another type than trainsim-calibrate writes
  // is a usage error naming the file, not an internal error.
  try {
    return rebuild_from(command, path, raw);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError("rebuild", "a raw_results.json with the types trainsim-calibrate writes",
                     "\"" + path + "\": " + e.what());
  } catch (const UnloadableProfileError& e) {
    throw UsageError("rebuild", "a raw_results.json whose figures the profile loader takes", "\"" + path + "\": " + e.what());
  }
}

namespace {

int rebuild_from(const ParsedCommand& command, const std::string& path, const nlohmann::json& raw) {
  const nlohmann::json& prov_in = raw["provenance"];
  Options o = command.options;
  const nlohmann::json run_options = prov_in.value("options", nlohmann::json::object());
  // Flags given now win; otherwise the run's own choices.
  if (!o.base && run_options.contains("base") && !run_options["base"].is_null()) o.base = run_options["base"].get<std::string>();
  if (o.name == "measured" && run_options.contains("name")) o.name = run_options["name"].get<std::string>();
  if (!o.storage_kind && run_options.contains("storage_kind") && !run_options["storage_kind"].is_null()) {
    o.storage_kind = run_options["storage_kind"].get<std::string>();
  }
  const std::optional<hw::ClusterProfile> base = resolve_base_profile(o.base);
  const HostInfo host = host_from(prov_in);
  const GpuInfo gpu = gpu_from(prov_in.value("gpu", nlohmann::json::object()));
  std::optional<StorageDevice> storage;
  if (prov_in.contains("storage")) {
    const auto& s = prov_in["storage"];
    storage = StorageDevice{get<std::string>(s, "kind", "unknown"), get<std::string>(s, "device", ""),
                            get<std::string>(s, "filesystem", ""), get<double>(s, "capacity_TB", 0),
                            get<double>(s, "free_bytes", 0)};
  }
  const Results results = results_from(raw);
  nlohmann::ordered_json prov = nlohmann::ordered_json::parse(prov_in.dump());
  prov["options"] = {{"name", o.name},
                     {"base", o.base ? nlohmann::ordered_json(*o.base) : nlohmann::ordered_json(nullptr)},
                     {"storage_kind", o.storage_kind ? nlohmann::ordered_json(*o.storage_kind) : nlohmann::ordered_json(nullptr)}};
  // Rebuilt with the run's own choices, the outputs are the run's, byte for byte (nothing of when
  // or where the rebuild ran goes in); other choices are said.
  if (nlohmann::json::parse(prov["options"].dump()) != run_options) prov["rebuilt"] = {{"by", o.command_line}};
  nlohmann::ordered_json framework = nlohmann::ordered_json::object();
  if (raw.contains("framework")) {
    if (!raw["framework"].is_object()) throw UsageError("rebuild", "framework an object of the driver's parts", describe_json(raw["framework"]));
    framework = nlohmann::ordered_json::parse(raw["framework"].dump());
  }
  std::vector<std::string> names{"raw_results.json", "summary.json", "summary.md"};
  if (base) names.emplace_back("profile.json");
  const std::string out_dir = check_out_dir(o.out_dir, names);
  const auto heads = write_outputs({o, out_dir, host, gpu, storage, results, framework, prov, base});
  std::printf("rebuilt %s from %s (%zu measurements)%s\n", o.out_dir.c_str(), path.c_str(), results.all().size(),
              base ? ", profile.json included" : "");
  return 0;
}

}  // namespace

}  // namespace trainsim::calibrate
