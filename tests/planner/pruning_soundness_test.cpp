// Bounds that are proofs (sim/step_bound.hpp, sim/critical_path.hpp): for whole searches on small
// clusters, every configuration the sweep pruned is replayed (not a sample) and none may replay
// below the bound that pruned it, nor rank before the K-th best it was pruned against. The
// searches cover every family and framework the planner proposes, asynchronous schemes included
// (which get no bound and are replayed), and a profile whose CPU-Adam is fast enough that the
// optimizer no longer dominates (the case of a copied profile with cpu_adam_params_per_s 8e9).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "estimator.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "property_suite.hpp"
#include "replay_executor.hpp"
#include "sweep.hpp"
#include "test_support.hpp"

namespace trainsim::planner {
namespace {

struct Search {
  const char* model;
  const char* profile;
  int gpus;
  std::int64_t global_batch;
  int top_k;
  const char* stack;  // "" for none named
  bool allow_async;
  std::optional<double> cpu_adam_params_per_s;  // a calibration figure set on the profile
  bool in_ci;
};

const std::vector<Search>& searches() {
  static const std::vector<Search> s = {
      {"gpt2-1.5b", "dgx2", 4, 16, 3, "", false, std::nullopt, true},
      {"gpt2-1.5b", "dgx2", 16, 64, 5, "", false, 8e9, true},
      {"bert-large", "zhores", 8, 32, 3, "", true, std::nullopt, true},
      {"gpt2-1.5b", "dgx-a100", 8, 32, 3, "megatron", false, std::nullopt, false},
      {"gpt2-1.5b", "dgx2", 8, 32, 3, "deepspeed", false, std::nullopt, false},
      {"gpt2-1.5b", "dgx2", 16, 64, 10, "", true, std::nullopt, false},
      {"megatron-8.3b", "dgx2", 32, 64, 3, "", false, std::nullopt, false},
      {"bert-large", "zhores", 16, 64, 5, "", false, 8e9, false},
  };
  return s;
}

TEST(PruningSoundness, NoPrunedConfigurationReplaysBelowItsBoundOrRanksInTheTopK) {
  int searched = 0;
  long pruned_replayed = 0, ranked_checked = 0, tie_break_pruned = 0;
  for (const Search& q : searches()) {
    if (!q.in_ci && !test_suite::full()) continue;
    ++searched;
    wl::ModelSpec model = wl::builtin_model(q.model);
    hw::ClusterProfile profile = hw::builtin_profile(q.profile);
    if (q.cpu_adam_params_per_s) profile.calibration.cpu_adam_params_per_s = *q.cpu_adam_params_per_s;
    FrameworkFlags flags;
    flags.allow_async = q.allow_async;
    if (std::string(q.stack).size() > 0) flags.stack = q.stack;
    const Framework framework = resolve_framework(flags, model);
    SweepInputs in;
    in.model = &model;
    in.profile = &profile;
    in.seq = model.seq_len;
    in.global_batch = q.global_batch;
    in.framework = &framework;
    test::ScratchDir dir;
    const ResultCache cache(dir.path().string(), "--cache");
    Progress quiet(false);
    const auto nodes = (q.gpus + profile.gpus_per_node() - 1) / profile.gpus_per_node();
    const GroupResult g =
        run_sweep(in, {{"search", nodes, q.gpus, {}, q.top_k}}, *make_local_executor(2, cache, {}, quiet), quiet).front();
    const std::string search = fmt::format("{} on {} x {} ({}{})", q.model, q.gpus, q.profile, *q.stack ? q.stack : "any framework",
                                           q.allow_async ? ", asynchronous allowed" : "");
    ASSERT_EQ(g.ranked.size(), static_cast<std::size_t>(q.top_k)) << search;
    for (const RankedEntry& e : g.replayed_entries) {
      ++ranked_checked;
      EXPECT_LE(e.candidate.best_bound_s(), e.result.step_time_s * (1 + 1e-9)) << search << ": " << e.candidate.text;
    }
    std::vector<ReplayJob> jobs;
    for (const Candidate& c : g.pruned) {
      const Config config{&model, &profile, c.strategy};
      jobs.push_back({config, ResultCache::key_text(config, {})});
    }
    const std::vector<ReplayOutcome> outcomes = make_local_executor(2, cache, {}, quiet)->run(jobs);
    const RankedEntry& kth = g.ranked.back();
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      ASSERT_TRUE(outcomes[i].error.empty()) << outcomes[i].error;
      ++pruned_replayed;
      const Candidate& c = g.pruned[i];
      // Pruned in the K-th best's bin: by the tie-break (sweep.hpp), not by time.
      if (ranking_step_bin(c.best_bound_s()) == ranking_step_bin(kth.result.step_time_s)) ++tie_break_pruned;
      const sim::SimResult r = fitted_to(outcomes[i].result, jobs[i].config);
      EXPECT_LE(c.best_bound_s(), r.step_time_s * (1 + 1e-9))
          << search << ": pruned by a bound of " << c.best_bound_s() << " s above its replay's " << r.step_time_s << " s: " << c.text;
      if (!r.fits) continue;
      EXPECT_TRUE(ranks_before(kth, {c, r})) << search << ": pruned " << c.text << " (" << r.step_time_s
                                             << " s) ranks before the K-th best " << kth.candidate.text << " ("
                                             << kth.result.step_time_s << " s)";
    }
  }
  test_suite::report({{"suite", "pruning_soundness"},
                      {"searches", searched},
                      {"pruned_replayed", pruned_replayed},
                      {"ranked_replays_checked", ranked_checked},
                      {"pruned_by_the_tie_break", tie_break_pruned}});
  std::cout << fmt::format("pruning soundness: {} searches, {} pruned configurations replayed ({} by the tie-break), {} ranked replays "
                           "checked\n",
                           searched, pruned_replayed, tie_break_pruned, ranked_checked);
}

}  // namespace
}  // namespace trainsim::planner
