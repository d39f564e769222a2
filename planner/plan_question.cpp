#include "plan_question.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "candidate_layers.hpp"
#include "config_error.hpp"
#include "cost_model.hpp"
#include "enum_flag.hpp"
#include "limits.hpp"
#include "model_loader.hpp"
#include "model_params.hpp"
#include "profile_loader.hpp"

namespace trainsim::planner {
namespace {

std::optional<int> parse_count(std::string_view text) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1 || v > wl::limits::NODES.max) return std::nullopt;
  return v;
}

}  // namespace

std::string_view to_string(Objective o) {
  switch (o) {
    case Objective::TIME: return "time";
    case Objective::COST: return "cost";
    case Objective::ENERGY: return "energy";
  }
  return "time";
}

std::vector<int> parse_node_counts(const std::string& text, const std::string& flag) {
  const std::string expected =
      fmt::format("a node count N or a range A..B of node counts (whole numbers, 1 <= A <= B <= {})", wl::limits::NODES.max);
  const auto dots = text.find("..");
  if (dots == std::string::npos) {
    if (auto n = parse_count(text)) return {*n};
    throw ConfigError(flag, flag, expected, "\"" + text + "\"");
  }
  const auto a = parse_count(std::string_view(text).substr(0, dots));
  const auto b = parse_count(std::string_view(text).substr(dots + 2));
  if (!a || !b || *a > *b) throw ConfigError(flag, flag, expected, "\"" + text + "\"");
  std::vector<int> out;
  for (int n = *a; n <= *b; ++n) out.push_back(n);
  return out;
}

PlanQuestion resolve_plan_question(const PlanFlags& f, int top_default) {
  PlanQuestion q;
  if (f.model.empty()) throw ConfigError("--model", "--model", "a built-in model name or a model JSON / config.json", "none");
  q.profile = hw::resolve_profile(f.hw, "--hw");
  q.model = wl::resolve_model(f.model, "--model");
  if (!q.model.has_architecture()) throw ConfigError("--model", "--model", "a model with an architecture", "a raw count");
  if (f.precision) q.model.numerics = wl::names::parse_flag("--precision", *f.precision, wl::names::NUMERICS);
  if (f.attention) q.model.attention = wl::names::parse_flag("--attention", *f.attention, wl::names::ATTENTION);
  q.framework = resolve_framework(f.framework, q.model);
  if (q.profile.gpu.peak_TFLOPs.count(sim::compute_precision(q.model.numerics)) == 0) {
    throw ConfigError("--precision", "--precision",
                      fmt::format("numerics the {} of {} has a peak for", q.profile.gpu.model, q.profile.name),
                      std::string(wl::to_string(q.model.numerics)));
  }

  const int gpn = q.profile.gpus_per_node();
  if (f.gpus && !f.nodes.empty()) throw ConfigError("--gpus", "--gpus", "either --nodes or --gpus, not both", "both");
  if (f.gpus) {
    if (*f.gpus < 1 || *f.gpus > wl::limits::GPUS.max) {
      throw ConfigError("--gpus", "--gpus", "a GPU count " + wl::limits::GPUS.text(), std::to_string(*f.gpus));
    }
    q.gpus = *f.gpus;
    q.nodes = {(*f.gpus + gpn - 1) / gpn};
  } else if (!f.nodes.empty()) {
    q.nodes = parse_node_counts(f.nodes, "--nodes");
  } else {
    throw ConfigError("--nodes", "--nodes", "--nodes N, --nodes A..B or --gpus G", "none of them");
  }
  // Node counts the cluster does not have are answered at once, not searched.
  const int cluster_nodes = q.profile.node_count;
  if (q.nodes.front() > cluster_nodes) {
    const std::string flag = f.gpus ? "--gpus" : "--nodes";
    throw ConfigError(flag, flag,
                      fmt::format("at most the cluster's size: {} has {} nodes ({} GPUs)", q.profile.name, cluster_nodes,
                                  cluster_nodes * gpn),
                      f.gpus ? std::to_string(*f.gpus) + " GPUs" : f.nodes);
  }
  if (q.nodes.back() > cluster_nodes) {
    q.beyond_cluster = fmt::format("node counts {}..{} not searched: {} has {} nodes", cluster_nodes + 1, q.nodes.back(),
                                   printable(q.profile.name), cluster_nodes);
    q.notes.push_back(q.beyond_cluster);
    q.nodes.erase(std::upper_bound(q.nodes.begin(), q.nodes.end(), cluster_nodes), q.nodes.end());
  }

  // The framework's configuration may fix the batch and the sequence; a flag must then agree.
  const FixedQuestion fixed = fixed_question(q.framework);
  if (fixed.global_batch && f.global_batch && *fixed.global_batch != *f.global_batch) {
    throw ConfigError("--global-batch", "--global-batch", fmt::format("{} ({} sets it)", *fixed.global_batch, fixed.global_batch_origin),
                      std::to_string(*f.global_batch));
  }
  if (fixed.seq && f.seq && *fixed.seq != *f.seq) {
    throw ConfigError("--seq", "--seq", fmt::format("{} ({} sets it)", *fixed.seq, fixed.seq_origin), std::to_string(*f.seq));
  }
  const std::optional<std::int64_t> global_batch = f.global_batch ? f.global_batch : fixed.global_batch;
  if (global_batch) {
    if (!wl::limits::GLOBAL_BATCH.contains(*global_batch)) {
      throw ConfigError("--global-batch", "--global-batch", wl::limits::GLOBAL_BATCH.text(), std::to_string(*global_batch));
    }
    q.global_batch = *global_batch;
  } else {
    q.notes.push_back("no --global-batch: one sequence per GPU and step");
  }
  q.seq = f.seq ? *f.seq : fixed.seq ? *fixed.seq : q.model.seq_len;
  if (q.seq < 1 || q.seq > wl::limits::SEQ.max || (q.model.position == wl::PositionKind::LEARNED && q.seq > q.model.seq_len)) {
    throw ConfigError("--seq", "--seq",
                      fmt::format("a sequence length in [1, {}]", q.model.position == wl::PositionKind::LEARNED ? q.model.seq_len
                                                                                                          : wl::limits::SEQ.max),
                      std::to_string(q.seq));
  }
  // Before the parameters are counted: a family known only from its captures counts them there.
  q.layers = candidate_layers_for(q.model, q.framework, q.seq);

  if (f.tokens) {
    if (!(std::isfinite(*f.tokens) && *f.tokens > 0 && *f.tokens <= 1e18)) {
      throw ConfigError("--tokens", "--tokens", "a token count in (0, 1e18]", fmt::format("{}", *f.tokens));
    }
    q.tokens = *f.tokens;
  } else {
    q.tokens = DEFAULT_TOKENS_PER_PARAM * wl::total_params(q.model);
    q.tokens_default = true;
  }
  static constexpr wl::names::Table<Objective, 3> OBJECTIVES{
      {{Objective::TIME, "time"}, {Objective::COST, "cost"}, {Objective::ENERGY, "energy"}}};
  q.objective = wl::names::parse_flag("--objective", f.objective, OBJECTIVES);

  q.top_k = f.top.value_or(q.range() ? 1 : top_default);
  if (q.top_k < 1 || q.top_k > 1000) throw ConfigError("--top", "--top", "a whole number in [1, 1000]", std::to_string(q.top_k));
  if (f.gap) {
    if (!(std::isfinite(*f.gap) && *f.gap >= 0 && *f.gap <= 0.5)) {
      throw ConfigError("--gap", "--gap", "a fraction in [0, 0.5]", fmt::format("{}", *f.gap));
    }
    q.gap = *f.gap;
    if (q.gap > 0) {
      q.notes.push_back(fmt::format("--gap {}: a configuration not replayed may be faster than a node count's last ranked one by at most "
                                    "{}% of its step time",
                                    q.gap, q.gap * 100));
    }
  }
  q.explain = f.explain;
  if (f.grid_kg_per_kwh) {
    if (!(std::isfinite(*f.grid_kg_per_kwh) && *f.grid_kg_per_kwh >= 0 && *f.grid_kg_per_kwh <= 10)) {
      throw ConfigError("--grid-kgco2-per-kwh", "--grid-kgco2-per-kwh", "a carbon intensity in [0, 10] kg CO2 per kWh",
                        fmt::format("{}", *f.grid_kg_per_kwh));
    }
    q.grid_kg_per_kwh = *f.grid_kg_per_kwh;
    q.grid_default = false;
  }
  if (!f.families.empty()) q.families = parse_families(f.families, "--families");
  if (f.memory_headroom) q.memory_headroom = checked_headroom(*f.memory_headroom, "--memory-headroom");
  q.uneven_pipelines = f.uneven_pipelines;
  for (std::string& note : framework_notes(q.framework)) q.notes.push_back(std::move(note));
  return q;
}

}  // namespace trainsim::planner
