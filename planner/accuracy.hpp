#pragma once
// How far to trust an answer: the measured error of the replay on the committed validation runs
// (reports/validation/summary.json and reports/validation/reference/summary.json) and against a
// published table (reports/validation/megatron_table1.json), compiled into the binary, for each
// whole set and for each feature the answer's configuration shares with its runs (the features
// strategy_features names: its stack, layout, ZeRO stage, schedule, offload and recompute). A
// feature no run has is listed as such; a profile that was not calibrated on its machine says that
// its answers carry the published figures' own error besides these.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cluster_profile.hpp"
#include "strategy.hpp"

namespace trainsim::planner {

// What a configuration exercises, in the words the card groups measured runs by ("ZeRO-3", "CPU
// offload", "pipeline (1f1b)", ...). validate writes each run's into summary.json ("runs"), and
// an answer's configuration is looked up by the same function, so both sides use one vocabulary.
std::vector<std::string> strategy_features(const wl::Strategy& s);

struct AccuracyLine {
  std::string what;          // "all runs" or a feature
  int runs = 0;              // measured runs with a step-time row
  double step_mean_pct = 0;  // mean |error| of the step time
  double step_worst_pct = 0; // signed, the largest |error|
  int memory_runs = 0;       // runs with a peak-allocated row
  double memory_mean_pct = 0;
  double memory_worst_pct = 0;
};

// One set of comparisons: runs measured on the lent machines (validate's summaries), or runs a
// paper published (kind "trainsim.published_comparison", e.g. reports/validation/megatron_table1.json).
struct AccuracySet {
  bool published = false;
  std::string title;                 // published sets: whose runs ("Megatron-LM's Table 1 (...)")
  std::vector<std::string> sources;  // where each summary's runs lie (reports/validation/measured)
  std::vector<std::string> gpus;     // the GPU models the runs ran on
  std::vector<std::string> stacks;   // the training stacks they ran (measured runs' stack.name)
  std::vector<std::string> profiles; // published sets: the profiles they were replayed on
  int fewest_gpus = 0, most_gpus = 0;  // GPUs a run used
  AccuracyLine all;
  std::vector<AccuracyLine> features;  // the configuration's features that its runs share
};

struct AccuracyCard {
  std::vector<std::string> features;      // the configuration's (strategy_features)
  std::vector<AccuracySet> sets;          // measured first, then published ones
  std::vector<std::string> not_measured;  // the configuration's features no set has a run of
  std::string profile;
  bool profile_calibrated = false;  // provenance.kind "measured": calibrated on its machine
  std::string unavailable;          // why there is no card (the compiled-in summaries unreadable)
};

// Whether the profile was calibrated on its machine (provenance.kind "measured"), not compiled from
// published figures.
bool calibrated_profile(const hw::ClusterProfile& profile);

// The card from validation summaries (trainsim.validation_summary documents, pooled into one set)
// and published comparisons (trainsim.published_comparison, a set each).
AccuracyCard accuracy_card(const std::vector<nlohmann::json>& summaries, const wl::Strategy& s, const hw::ClusterProfile& profile);
// The card from the summaries compiled into this binary.
AccuracyCard accuracy_card(const wl::Strategy& s, const hw::ClusterProfile& profile);

// `subject` names the configuration the features are of ("#1", "this configuration").
std::string accuracy_text(const AccuracyCard& card, const std::string& subject);
// One line for a table of configurations: each feature of the configuration with the mean
// |step-time error| of the runs sharing it ("ZeRO-3 4.6% (28 runs), tensor parallel 3.3% (6
// published runs), L2L none yet").
std::string accuracy_brief(const AccuracyCard& card);
nlohmann::ordered_json accuracy_json(const AccuracyCard& card);

// The card of the runs predicted with their layers from captures
// (reports/validation/captured_models/summary.json, compiled in): what an answer whose model carries
// a capture adds to its card.
AccuracyCard captured_accuracy_card(const wl::Strategy& s, const hw::ClusterProfile& profile);

}  // namespace trainsim::planner
