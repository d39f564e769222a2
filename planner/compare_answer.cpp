#include "compare_answer.hpp"

#include "accuracy.hpp"

#include <fmt/format.h>

#include <deque>

#include "candidate_layers.hpp"
#include "plan_answer.hpp"
#include "result_json.hpp"
#include "strategy_identity.hpp"
#include "strategy_input.hpp"

namespace trainsim::planner {
namespace {

// The most frequent reason, for a row where nothing fits; where the family had no strategy to
// search, why: the framework named does not run it, or it is asynchronous and --allow-async absent.
std::string main_reason(const std::map<std::string, long>& counts, long enumerated, const PlanQuestion& q,
                        const Family& family) {
  std::string best;
  long n = -1;
  for (const auto& [reason, c] : counts) {
    if (c > n) n = c, best = reason;
  }
  if (!best.empty()) return fmt::format("nothing fits ({} of {} strategies: {})", n, enumerated, best);
  if (enumerated > 0) return "nothing fits";
  if (q.framework.named()) {
    return fmt::format("no strategy of this family that {} runs ({})", wl::to_string(q.framework.stack.kind), q.framework.source);
  }
  if (!q.framework.allow_async && family.schedule && wl::schedule_facts(*family.schedule).asynchronous) {
    return "asynchronous (changes the optimizer's math): searched only with --allow-async";
  }
  return "no strategy of this family on this cluster";
}

wl::Strategy resolve_file(const std::string& path, const PlanQuestion& q, wl::ModelSpec& model) {
  wl::StrategyInput in = wl::strategy_from_json(path);
  if (q.gpus) {
    in.gpus.set(*q.gpus, "--gpus");
  } else {
    in.nodes.set(q.nodes.front(), "--nodes");
  }
  // Without --global-batch a file keeps its own batch, or `simulate`'s default (one micro-batch
  // per pipeline stage): give --global-batch to compare files with families on one batch.
  if (q.global_batch) in.global_batch.set(*q.global_batch, "--global-batch");
  in.seq.set(q.seq, "--seq");
  const wl::ClusterShape shape{q.profile.gpus_per_node(), q.profile.node_count, q.profile.name};
  wl::ResolvedInputs r = wl::resolve_inputs(in, model, shape);
  model = r.model;  // the file may set the numerics
  return r.strategy;
}

}  // namespace

CompareAnswer answer_compare(PlanQuestion q, const std::vector<std::string>& strategy_files, const SweepInputs& base,
                             ReplayExecutor& executor, Progress& progress) {
  CompareAnswer a;
  a.question = std::move(q);
  const PlanQuestion& pq = a.question;
  SweepInputs in = sweep_inputs_for(pq, base);
  progress.set_label(fmt::format("compare on {} x {}", pq.nodes.front(), pq.profile.name));
  if (strategy_files.empty()) {
    std::vector<SweepGroup> groups;
    for (const Family* f : pq.families) groups.push_back({std::string(f->name), pq.nodes.front(), pq.gpus.value_or(0), {f}, 1});
    for (GroupResult& g : run_sweep(in, groups, executor, progress)) {
      CompareRow row;
      row.label = g.group.label;
      if (!g.ranked.empty()) row.entry = g.ranked.front();
      else row.why_not = main_reason(g.infeasible, g.enumerated, pq, *g.group.families.front());
      row.infeasible = g.infeasible;
      row.enumerated = g.enumerated;
      row.candidates = g.candidates;
      row.replayed = g.replayed;
      row.pruned = static_cast<long>(g.pruned.size());
      a.rows.push_back(std::move(row));
    }
    return a;
  }
  // Strategy files: every file resolved first (a bad one fails before any replay), then one wave.
  std::deque<wl::ModelSpec> models;
  std::vector<Config> configs;
  std::vector<std::optional<Issue>> layer_issues;
  for (const std::string& path : strategy_files) {
    models.push_back(pq.model);
    configs.push_back({&models.back(), &pq.profile, resolve_file(path, pq, models.back()), pq.memory_headroom});
    layer_issues.emplace_back();
    // Each file replays with its candidate's layer (candidate_layers.hpp), whose captures are those
    // of the question's numerics.
    if (pq.layers && models.back().numerics != pq.model.numerics) {
      layer_issues.back() = Issue{"layer-capture", fmt::format("{} trains in {}, the question in {}: its layer's capture would be "
                                                               "another (give --precision {})",
                                                               path, wl::to_string(models.back().numerics),
                                                               wl::to_string(pq.model.numerics), wl::to_string(models.back().numerics))};
    } else if (pq.layers) {
      const CandidateLayers::Layer layer = pq.layers->for_candidate(configs.back().strategy);
      layer_issues.back() = layer.issue;
      if (!layer.issue) configs.back().model = layer.model;
    }
  }
  std::vector<ReplayJob> jobs;
  std::vector<std::size_t> job_row;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    CompareRow row;
    row.label = strategy_files[i];
    row.family = false;
    row.enumerated = 1;
    std::optional<Issue> issue = layer_issues[i];
    const std::vector<Issue> issues = validate(configs[i]);
    if (!issues.empty()) issue = issues.front();
    std::optional<Bound> b;
    if (!issue) {
      b = bound(configs[i]);
      issue = b->misfit ? b->misfit : replay_size_issue(configs[i]);
    }
    if (issue) {
      row.infeasible[issue->reason] = 1;
      row.why_not = issue->message;
    } else {
      row.candidates = 1;
      row.entry = RankedEntry{candidate_of(configs[i].strategy, *b), {}};
      jobs.push_back({configs[i], ResultCache::key_text(configs[i], in.options)});
      job_row.push_back(i);
    }
    a.rows.push_back(std::move(row));
  }
  progress.set_remaining(static_cast<long>(jobs.size()));
  const std::vector<ReplayOutcome> outcomes = executor.run(jobs);
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    CompareRow& row = a.rows[job_row[j]];
    row.replayed = 1;
    const bool error = !outcomes[j].error.empty();
    const sim::SimResult r = error ? outcomes[j].result : fitted_to(outcomes[j].result, jobs[j].config);
    if (error || !r.fits) {
      row.infeasible[error ? "replay-error" : "replayed-memory"] = 1;
      row.why_not = error ? outcomes[j].error : r.infeasible_reason.value_or("does not fit");
      row.entry.reset();
    } else {
      row.entry->result = r;
    }
  }
  return a;
}

nlohmann::ordered_json compare_json(const CompareAnswer& a) {
  nlohmann::ordered_json j = plan_header(a.question, "compare");
  j["rows"] = nlohmann::ordered_json::array();
  for (const CompareRow& r : a.rows) {
    nlohmann::ordered_json row;
    row[r.family ? "family" : "strategy_file"] = r.label;
    row["best"] = r.entry ? entry_json(*r.entry, a.question) : nlohmann::ordered_json();
    row["why_not"] = r.entry ? nlohmann::ordered_json() : nlohmann::ordered_json(r.why_not);
    row["infeasible"] = infeasible_json(r.infeasible);
    row["search"] = {{"enumerated", r.enumerated}, {"fit_memory_model", r.candidates}, {"replayed", r.replayed}, {"pruned_by_bound", r.pruned}};
    row["accuracy"] = r.entry ? accuracy_json(accuracy_card(r.entry->candidate.strategy, a.question.profile)) : nlohmann::ordered_json();
    j["rows"].push_back(std::move(row));
  }
  return j;
}

std::string compare_csv(const CompareAnswer& a) {
  std::string out =
      "label,fits,description,step_time_s,tflops_per_gpu,tokens_per_s,compute_s,exposed_communication_s,exposed_offload_io_s,"
      "optimizer_s,idle_s,peak_memory_bytes,host_peak_bytes,storage_peak_bytes,time_to_train_days,cost_usd,energy_kwh,co2_kg,why_not\n";
  auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const CompareRow& r : a.rows) {
    if (!r.entry) {
      out += fmt::format("{},false,,,,,,,,,,,,,,,,,{}\n", quoted(r.label), quoted(r.why_not));
      continue;
    }
    const EntryMetrics m = metrics_of(*r.entry, a.question);
    const Breakdown b = average_breakdown(r.entry->result);
    out += fmt::format("{},true,{},{},{},{},{},{},{},{},{},{:.0f},{:.0f},{:.0f},{},{},{},{},\n", quoted(r.label),
                       quoted(describe(r.entry->candidate.strategy)), m.step_time_s, m.tflops_per_gpu, m.tokens_per_s, b.compute_s,
                       b.exposed_communication_s, b.exposed_offload_io_s, b.optimizer_s, b.idle_s, m.peak_memory_bytes,
                       m.host_peak_bytes, m.storage_peak_bytes, m.time_to_train_days, m.cost_usd, m.energy_kwh, m.co2_kg);
  }
  return out;
}

}  // namespace trainsim::planner
