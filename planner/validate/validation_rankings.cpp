// Which configuration wins: the question a plan answers, asked of the measured runs. Runs of one model
// (its architecture and sequence length) on the same number of the same GPUs, costed on the same
// profile, are alternatives a user chooses between; for every pair of them that differ in what they ran (strategy, stack or split), the
// replay's order by training throughput (tokens a second: global batch x sequence over the step) is
// compared with the measured order. Pairs measured within RANKING_NOISE of each other are counted
// apart: a host's pace moves a small row's step by more than that between launches.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "validation.hpp"

namespace trainsim::planner {
namespace {

struct Candidate {
  const RunValidation* v;
  double measured_tokens_per_s, predicted_tokens_per_s;
};

// The model's architecture (not its name, which differs between the files of one model), the run's
// sequence length, GPU count and GPU, and the profile it is costed on (the calibration of the host
// it ran on, where it has one): what the alternatives of one choice share. Runs from hosts
// calibrated apart are not compared: a host's pace moves a small row by up to 20% (the report's
// section on several hosts). Empty when the run's model file has no architecture object.
std::string choice_key(const RunValidation& v) {
  const nlohmann::json c = nlohmann::json::parse(v.run.configuration, nullptr, false);
  if (c.is_discarded() || !c.contains("model") || !c["model"].is_object() || !c["model"].contains("architecture")) return {};
  return nlohmann::json{{"architecture", c["model"]["architecture"]},
                        {"seq", v.run.strategy.seq ? *v.run.strategy.seq : 0},
                        {"gpus", v.run.gpus},
                        {"gpu", v.run.gpu},
                        {"profile", v.profile}}
      .dump();
}

// What ran, without the names a rerun may give it (the run's and its model file's): two runs of one
// configuration are not a choice.
std::string what_ran(const MeasuredRun& r) {
  nlohmann::json c = nlohmann::json::parse(r.configuration, nullptr, false);
  if (c.is_discarded() || !c.contains("model") || !c["model"].is_object()) return r.configuration;
  c["model"].erase("name");
  c["model"].erase("description");
  return c.dump();
}

// "24 layers, hidden 1024, sequence 2048, on 4 x NVIDIA H200".
std::string choice_title(const RunValidation& v) {
  const nlohmann::json c = nlohmann::json::parse(v.run.configuration);  // choice_key read it already
  const auto& a = c["model"]["architecture"];
  auto number = [&](const char* k) { return a.contains(k) && a[k].is_number() ? fmt::format("{}", a[k].get<double>()) : std::string("?"); };
  return fmt::format("{} layers, hidden {}, {} heads{}, sequence {}, on {} x {}, costed on {}", number("layers"), number("hidden"),
                     number("heads"), a.contains("kv_heads") ? fmt::format(" ({} key/value)", number("kv_heads")) : std::string(),
                     v.run.strategy.seq ? *v.run.strategy.seq : 0, v.run.gpus, v.run.gpu, v.profile);
}

std::vector<std::vector<Candidate>> choices(const std::vector<RunValidation>& runs) {
  std::map<std::string, std::vector<Candidate>> by_key;
  for (const auto& v : runs) {
    const ValidationRow* step = find_row(v, "step_time");
    if (step == nullptr || v.run.configuration.empty() || !v.run.strategy.global_batch || !v.run.strategy.seq) continue;
    const double tokens = static_cast<double>(*v.run.strategy.global_batch) * static_cast<double>(*v.run.strategy.seq);
    const std::string key = choice_key(v);
    if (!key.empty()) by_key[key].push_back({&v, tokens / step->measured, tokens / step->predicted});
  }
  std::vector<std::vector<Candidate>> out;
  for (auto& [key, group] : by_key) {
    std::sort(group.begin(), group.end(), [](const Candidate& a, const Candidate& b) {
      return std::tie(b.measured_tokens_per_s, a.v->run.name) < std::tie(a.measured_tokens_per_s, b.v->run.name);
    });
    if (group.size() >= 2) out.push_back(group);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.front().v->run.name < b.front().v->run.name; });
  return out;
}

}  // namespace

RankingStats ranking_stats(const std::vector<RunValidation>& runs) {
  RankingStats s;
  for (const auto& group : choices(runs)) {
    for (std::size_t i = 0; i < group.size(); ++i) {
      for (std::size_t j = i + 1; j < group.size(); ++j) {
        const Candidate &a = group[i], &b = group[j];  // a measured at least as fast as b
        if (what_ran(a.v->run) == what_ran(b.v->run)) continue;
        const bool agree = a.predicted_tokens_per_s >= b.predicted_tokens_per_s;
        const bool apart = a.measured_tokens_per_s > (1 + RANKING_NOISE) * b.measured_tokens_per_s;
        ++s.pairs;
        s.agree += agree ? 1 : 0;
        s.apart_pairs += apart ? 1 : 0;
        s.apart_agree += apart && agree ? 1 : 0;
        if (!agree) {
          s.disagreements.push_back(
              {a.v->run.name, b.v->run.name, a.measured_tokens_per_s / b.measured_tokens_per_s, a.predicted_tokens_per_s / b.predicted_tokens_per_s});
        }
      }
    }
  }
  return s;
}

nlohmann::ordered_json ranking_json(const RankingStats& s) {
  nlohmann::ordered_json disagreements = nlohmann::ordered_json::array();
  for (const auto& d : s.disagreements) {
    disagreements.push_back({{"measured_faster", d.measured_faster}, {"other", d.other}, {"measured_ratio", d.measured_ratio},
                             {"predicted_ratio", d.predicted_ratio}});
  }
  return {{"definition", fmt::format("pairs of runs of one model on the same GPUs that ran different configurations, ordered by tokens "
                                     "a second; apart: measured more than {:.0f}% apart",
                                     100 * RANKING_NOISE)},
          {"pairs", s.pairs},
          {"ordered_as_measured", s.agree},
          {"pairs_apart", s.apart_pairs},
          {"apart_ordered_as_measured", s.apart_agree},
          {"disagreements", disagreements}};
}

std::string rankings_markdown(const std::vector<RunValidation>& runs) {
  const auto groups = choices(runs);
  const RankingStats s = ranking_stats(runs);
  if (s.pairs == 0) return {};
  std::string md = "## Which configuration wins\n\n";
  md += fmt::format(
      "Runs of one model on the same number of the same GPUs, costed on the same profile (runs from hosts calibrated apart "
      "are not compared), are the alternatives a plan chooses between. Ordered by "
      "training throughput (global batch x sequence over the step), the replay orders **{} of {} pairs** of different "
      "configurations as measured, and **{} of {}** of the pairs measured more than {:.0f}% apart.\n\n",
      s.agree, s.pairs, s.apart_agree, s.apart_pairs, 100 * RANKING_NOISE);
  for (const auto& group : groups) {
    md += fmt::format("{}, fastest measured first:\n\n", choice_title(*group.front().v));
    md += "| run | measured tokens/s | predicted tokens/s | predicted rank |\n|---|---|---|---|\n";
    for (const Candidate& c : group) {
      const auto rank = 1 + std::count_if(group.begin(), group.end(), [&](const Candidate& o) {
                          return o.predicted_tokens_per_s > c.predicted_tokens_per_s;
                        });
      md += fmt::format("| {} | {:.0f} | {:.0f} | {} |\n", c.v->run.name, c.measured_tokens_per_s, c.predicted_tokens_per_s, rank);
    }
    md += "\n";
  }
  if (!s.disagreements.empty()) {
    md += "Pairs the replay orders otherwise (throughput of the measured faster over the other):\n\n";
    for (const auto& d : s.disagreements) {
      md += fmt::format("- `{}` over `{}`: measured {:.3f}, predicted {:.3f}\n", d.measured_faster, d.other, d.measured_ratio,
                        d.predicted_ratio);
    }
    md += "\n";
  }
  return md;
}

}  // namespace trainsim::planner
