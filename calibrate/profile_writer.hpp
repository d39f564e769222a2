#pragma once
// Turns a run's measurements into a cluster profile in the foundation schema
// (hwprofiles/cluster_profile.hpp). What was measured is used as measured; what a microbenchmark
// cannot measure (datasheet peaks, price, power, reserved memory) is copied from the base
// profile the user named, and every section's `source` says which is which.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cluster_profile.hpp"
#include "gpu_benchmarks.hpp"
#include "host_info.hpp"
#include "options.hpp"
#include "results.hpp"

namespace trainsim::calibrate {

struct ProfileInputs {
  const Options& options;
  const HostInfo& host;
  const GpuInfo& gpu;
  const std::optional<StorageDevice>& storage;
  const Results& results;
  const hw::ClusterProfile& base;
  const std::string& base_name;
  const nlohmann::ordered_json& provenance;
};

hw::ClusterProfile build_profile(const ProfileInputs& in);

// "H100" from "NVIDIA H100 80GB HBM3" or "H100-SXM5-80GB": a letter and three digits, or "" when
// the name has none. Used to warn when the base profile describes another GPU.
std::string gpu_family(const std::string& model);

// The profile with the framework driver's sections ({"calibration": {...}, "notes": [...]},
// calibrate/framework/sections.py) put in: "kernels" curves after ours, "host_dispatch" figures
// into ours (its source appended), the others as they are, the notes into provenance.notes.
// The result is loaded back through the strict loader (CalibrationError if it does not load).
hw::ClusterProfile with_framework_sections(const hw::ClusterProfile& profile, const nlohmann::ordered_json& sections);

// The profile as text, after checking that it loads back through the strict loader (throws
// CalibrationError with the loader's message if it does not).
std::string profile_text(const hw::ClusterProfile& profile);

}  // namespace trainsim::calibrate
