#pragma once
// Summary statistics of repeated measurements. Every figure trainsim-calibrate reports is the
// median of samples taken after warm-up, with min, max and the interquartile range beside it.

#include <nlohmann/json.hpp>
#include <vector>

namespace trainsim::calibrate {

struct Stats {
  double median = 0;
  double min = 0;
  double max = 0;
  double q1 = 0;  // 25th percentile (linear interpolation between order statistics)
  double q3 = 0;  // 75th percentile
  int n = 0;
};

// Throws std::invalid_argument on an empty sample or a non-finite value.
Stats summarize(std::vector<double> samples);

// Maps a time sample to a rate sample (bytes / seconds, FLOPs / seconds, ...): value = amount / t.
std::vector<double> rates(double amount, const std::vector<double>& seconds);

nlohmann::ordered_json to_json(const Stats& s);

}  // namespace trainsim::calibrate
