#pragma once
// The eight headline figures of a run, under the names summary.json uses, and the comparison
// of two runs' summaries (the "two --quick runs agree within 5%" acceptance check).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "results.hpp"

namespace trainsim::calibrate {

struct Headline {
  std::string name;   // e.g. "gemm_bf16_8192_tflops"
  std::string unit;
  std::string where;  // the configuration the figure comes from
  std::optional<Stats> stats;  // absent when that part was not run
};

std::vector<Headline> headlines(const Results& results);

// summary.json: the headline medians as top-level numbers (null when not measured), their
// spread under "spread", and the provenance block.
nlohmann::ordered_json summary_json(const std::vector<Headline>& heads, const nlohmann::ordered_json& provenance);

struct Comparison {
  std::string text;  // a Markdown table
  bool agree = true;
  int compared = 0;  // figures numeric in both
};
Comparison compare_summaries(const nlohmann::json& a, const nlohmann::json& b, const std::string& name_a,
                             const std::string& name_b, double tolerance);

}  // namespace trainsim::calibrate
