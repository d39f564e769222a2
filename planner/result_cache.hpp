#pragma once
// The planner's results cache: one file per replay, named by a hash of everything that decides
// its answer (the build of trainsim, the model, the strategy, the cluster profile, the replay's
// options). A sweep that is interrupted resumes from what is cached; a repeated one replays
// nothing. Files are written through OutputSet (hwprofiles/io/output_files.hpp): to a temporary
// beside the target, synced, renamed, so an interrupt never leaves half a file, and concurrent
// writers of one entry (threads, MPI ranks on a shared directory) leave one whole file.
//
// The key text is stored in the file and compared on load: a hash collision or a foreign file
// is a miss, never a wrong answer. Entries are checked, not trusted: each carries a checksum over
// its key and value, a result is used only where it is consistent (a positive finite step, not
// below the bound proven for it, tokens/s matching the step), and only regular files are read;
// anything else is worked out again, with a warning naming the file and why.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "estimator.hpp"

namespace trainsim::planner {

// "trainsim 0.1.0 (build 1a2b...)": the version and the running executable's build ID (else a
// hash of its file), so that a rebuilt simulator (whose answers may have moved) never reads an
// older build's results.
const std::string& tool_build_id();

class ResultCache {
 public:
  // An empty directory disables the cache. The directory is created if missing (with its
  // parents); one that cannot be created or written is a ConfigError naming `flag`.
  ResultCache(std::string dir, std::string flag);

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  // The text every answer depends on, and its file name.
  static std::string key_text(const Config& c, const sim::SimOptions& options);
  static std::string file_name(const std::string& key_text);

  // `s` is the strategy the key names; `lower_bound_s` the step-time bound proven for it (0: none).
  std::optional<sim::SimResult> load(const std::string& key_text, const wl::Strategy& s, double lower_bound_s) const;
  // Best effort: a cache that cannot be written costs time, not the answer (a warning once).
  void store(const std::string& key_text, const sim::SimResult& r) const;

  // The walk bounds of one group's candidates (planner/sweep.cpp), one file per group: `key_text`
  // says what decides them (walks_key_text), the map is canonical strategy text -> bound.
  static std::string walks_key_text(const wl::ModelSpec& m, const hw::ClusterProfile& p, int gpus, std::int64_t global_batch,
                                    std::int64_t seq, const std::string& scope);
  std::map<std::string, double> load_walks(const std::string& key_text) const;
  void store_walks(const std::string& key_text, const std::map<std::string, double>& walks) const;

  // $XDG_CACHE_HOME/trainsim, else $HOME/.cache/trainsim (the XDG base directory spec).
  static std::string default_dir();

 private:
  // The entry's document, where it is a regular file of this build and key whose checksum over
  // `field` holds.
  std::optional<nlohmann::json> load_entry(const std::string& key_text, const char* field) const;
  void store_entry(const std::string& key_text, const char* kind, const char* field, nlohmann::ordered_json value) const;

  std::string dir_;
  std::string flag_;
};

}  // namespace trainsim::planner
