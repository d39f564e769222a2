#pragma once
// The planner's property suites (memory_consistency_test.cpp, pruning_soundness_test.cpp): their
// size and where they report. CI runs them reduced; `TRAINSIM_SUITE_SIZE=full` runs them whole
// (trainsim-bench --section soundness does, reports/perf/soundness.md), and with
// `TRAINSIM_SUITE_REPORT=FILE` each suite writes its counts there as JSON.

#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace trainsim::planner::test_suite {

inline bool full() {
  const char* v = std::getenv("TRAINSIM_SUITE_SIZE");
  return v != nullptr && std::string(v) == "full";
}

// Appends one suite's counts to the report file, one JSON object per line.
inline void report(const nlohmann::ordered_json& j) {
  const char* path = std::getenv("TRAINSIM_SUITE_REPORT");
  if (path == nullptr) return;
  std::ofstream out(path, std::ios::app);
  out << j.dump() << "\n";
}

}  // namespace trainsim::planner::test_suite
