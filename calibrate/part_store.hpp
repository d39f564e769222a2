#pragma once
// The finished parts of a run, kept in OUT/parts/ as each part ends, so an interrupted or
// timed-out run loses only the part it was in and `--resume OUT` measures only the rest:
//   parts/run.json          the run's arguments (what --resume runs again)
//   parts/<part>.json       one of our parts: its level, seconds, measurements and notes
//   parts/framework/<part>.json  one of the framework driver's parts, as the driver wrote it
// Each file is written to a temporary and renamed into place (atomic_file.hpp).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "results.hpp"

namespace trainsim::calibrate {

struct StoredPart {
  int level = 0;
  double seconds = 0;
  std::vector<Measurement> measurements;
  std::vector<std::string> notes;
};

class PartStore {
 public:
  explicit PartStore(std::string out_dir);

  std::string dir() const { return out_dir_ + "/parts"; }
  std::string framework_dir() const { return dir() + "/framework"; }
  bool exists() const;  // an earlier run left parts here

  void record_arguments(const std::vector<std::string>& arguments) const;
  // The arguments of the run recorded in `out_dir` (UsageError on --resume when there is none).
  static std::vector<std::string> recorded_arguments(const std::string& out_dir);

  void save(const std::string& part, const StoredPart& stored) const;
  // A part finished earlier at `level` or above, or none.
  std::optional<StoredPart> load(const std::string& part, int level) const;
  // The framework driver's document of `part` when it ran at `sizes` or more, or none.
  std::optional<nlohmann::ordered_json> load_framework(const std::string& part, int sizes) const;
  void make_dirs() const;

 private:
  std::string out_dir_;
};

}  // namespace trainsim::calibrate
