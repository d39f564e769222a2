#pragma once
// The human-readable side of a run: SVG plots of every benchmark family and summary.md.

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "headlines.hpp"
#include "results.hpp"

namespace trainsim::calibrate {

// (file name, SVG text) for every family that has measurements.
std::vector<std::pair<std::string, std::string>> render_plots(const Results& results);

std::string summary_markdown(const Results& results, const std::vector<Headline>& heads,
                             const nlohmann::ordered_json& provenance,
                             const std::vector<std::pair<std::string, std::string>>& plots);

}  // namespace trainsim::calibrate
