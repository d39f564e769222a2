#pragma once
// Loading cluster profiles: from a file, from the built-in set, or by a name-or-path as the --hw
// flag takes it. Every problem is a ConfigError naming the file and the key.

#include <string>
#include <vector>

#include "cluster_profile.hpp"
#include "strict_json.hpp"

namespace trainsim::hw {

ClusterProfile load_profile(const JsonDocument& doc);
ClusterProfile load_profile_file(const std::string& path);
ClusterProfile builtin_profile(const std::string& name);
std::vector<std::string> builtin_profile_names();

// `--hw dgx2` (built-in) or `--hw path/to/profile.json` (a file: the value contains '/' or ends in .json).
ClusterProfile resolve_profile(const std::string& name_or_path, const std::string& flag = "--hw");

// The profile in its JSON schema, keys in schema order (used to echo inputs and by calibration).
nlohmann::ordered_json profile_to_json(const ClusterProfile& profile);

}  // namespace trainsim::hw
