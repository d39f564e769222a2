#pragma once
// One calibration run from parsed options to files on disk, and the `compare` command.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cluster_profile.hpp"
#include "gpu_benchmarks.hpp"
#include "headlines.hpp"
#include "host_info.hpp"
#include "options.hpp"
#include "results.hpp"

namespace trainsim::calibrate {

inline constexpr const char* TOOL_VERSION = "0.1.0";

// Returns the exit code; throws UsageError / NoGpuError / CalibrationError (see errors.hpp).
int run_calibration(const Options& options);
// The --base profile (a built-in name or a path), or none; a bad one is a UsageError on --base.
std::optional<hw::ClusterProfile> resolve_base_profile(const std::optional<std::string>& base);
int run_compare(const ParsedCommand& command);
int run_rebuild(const ParsedCommand& command);

struct OutputInputs {
  const Options& options;
  const std::string& out_dir;
  const HostInfo& host;
  const GpuInfo& gpu;
  const std::optional<StorageDevice>& storage;
  const Results& results;
  const nlohmann::ordered_json& framework;  // the framework driver's raw documents by part ({} when none)
  const nlohmann::ordered_json& provenance;
  const std::optional<hw::ClusterProfile>& base;
};

// raw_results.json, summary.json, summary.md, the plots and (with a base) profile.json, all
// written atomically together; the profile is a function of what raw_results.json holds, so
// `rebuild` writes it again byte for byte. Returns the headline figures.
std::vector<Headline> write_outputs(const OutputInputs& in);

}  // namespace trainsim::calibrate
