#pragma once
// Everything one run measured, kept as flat records so the profile writer, the summary and the
// plots read the same numbers. A record is one configuration (a GEMM shape, a copy size, a
// collective at one size and group) with the statistics of its repeated samples and how its
// output was checked.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stats.hpp"

namespace trainsim::calibrate {

struct Measurement {
  std::string bench;               // "gemm", "kernels", "host_copy", "p2p", "nccl", "storage", ...
  std::string what;                // series: "bf16", "h2d_pinned", "all_reduce", "read", ...
  nlohmann::ordered_json params;   // the configuration: bytes, gpus, m/n/k, block_bytes, depth, ...
  std::string unit;                // of the statistics: "GBps", "TFLOPs", "params_per_s", "us"
  Stats stats;
  std::string check;               // how the output was verified, with the observed error
};

class Results {
 public:
  explicit Results(bool verbose = true) : verbose_(verbose) {}

  void add(Measurement m);
  void note(std::string text);

  const std::vector<Measurement>& all() const { return measurements_; }
  const std::vector<std::string>& notes() const { return notes_; }

  // The records of one series, in the order they were measured.
  std::vector<const Measurement*> select(std::string_view bench, std::string_view what) const;
  // The first record of a series whose params satisfy `match`, if any.
  const Measurement* find(std::string_view bench, std::string_view what,
                          const std::function<bool(const nlohmann::ordered_json&)>& match) const;

  nlohmann::ordered_json to_json() const;

 private:
  bool verbose_;
  std::vector<Measurement> measurements_;
  std::vector<std::string> notes_;
};

// Adds the records of a `measurements` array as raw_results.json and a run's part files hold them
// (Results::to_json); a record of another shape is a UsageError naming `where_all`[i] and the key.
void add_measurements(Results& results, const nlohmann::json& all, const std::string& where_all);

// Params helpers: `p.value("bytes", 0.0)` with a clear failure when the key is missing.
double param_number(const nlohmann::ordered_json& params, const char* key);

}  // namespace trainsim::calibrate
