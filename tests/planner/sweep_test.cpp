// The sweep (planner/sweep.hpp): pruning by the bound is sound (a sample of what it pruned,
// replayed, never beats the K-th best), the answer does not depend on how many workers ran it,
// and a results cache gives the same answer without replaying.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "critical_path.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "replay_executor.hpp"
#include "sweep.hpp"
#include "test_support.hpp"

namespace trainsim::planner {
namespace {

// The plan's default framework: none named, asynchronous schemes not searched (framework.hpp).
const Framework& synchronous() {
  static const Framework f;
  return f;
}

SweepInputs inputs_for(const wl::ModelSpec& model, const hw::ClusterProfile& profile, std::int64_t global_batch) {
  SweepInputs in;
  in.model = &model;
  in.profile = &profile;
  in.framework = &synchronous();
  in.seq = model.seq_len;
  in.global_batch = global_batch;
  return in;
}

struct Fixture {
  wl::ModelSpec model = wl::builtin_model("gpt2-1.5b");
  hw::ClusterProfile profile = hw::builtin_profile("dgx2");
  SweepInputs inputs() const { return inputs_for(model, profile, 8); }
};

std::vector<GroupResult> sweep(const Fixture& f, int threads, const ResultCache& cache, int top_k, Progress* counted = nullptr) {
  Progress quiet(false);
  Progress& progress = counted ? *counted : quiet;
  auto executor = make_local_executor(threads, cache, {}, progress);
  return run_sweep(f.inputs(), {{"4 GPUs", 1, 4, {}, top_k}}, *executor, progress);
}

std::string summary(const GroupResult& g) {
  std::string s = std::to_string(g.enumerated) + "/" + std::to_string(g.candidates) + "/" + std::to_string(g.replayed) + "\n";
  for (const auto& [r, n] : g.infeasible) s += r + "=" + std::to_string(n) + "\n";
  for (const auto& e : g.ranked) s += e.candidate.text + " " + std::to_string(e.result.step_time_s) + "\n";
  return s;
}

// One group of two DGX-2 swept with a results cache of its own, which the replays of what it
// pruned then answer from where the sweep replayed them.
struct TwoNodeSweep {
  wl::ModelSpec model;
  hw::ClusterProfile profile = hw::builtin_profile("dgx2");
  test::ScratchDir dir;
  ResultCache cache{dir.path().string(), "--cache"};
  GroupResult group;
  TwoNodeSweep(const char* model_name, std::int64_t global_batch, const std::vector<const Family*>& families, int top_k)
      : model(wl::builtin_model(model_name)) {
    Progress quiet(false);
    const SweepInputs in = inputs_for(model, profile, global_batch);
    group = run_sweep(in, {{"2 nodes", 2, 0, families, top_k}}, *make_local_executor(2, cache, {}, quiet), quiet).front();
  }
};

// Replays `candidates` (from the cache where it has them), in order.
std::vector<ReplayOutcome> replay_all(const std::vector<const Candidate*>& candidates, const wl::ModelSpec& model,
                                      const hw::ClusterProfile& profile, const ResultCache& cache) {
  std::vector<ReplayJob> jobs;
  for (const Candidate* c : candidates) {
    const Config config{&model, &profile, c->strategy};
    jobs.push_back({config, ResultCache::key_text(config, {})});
  }
  Progress quiet(false);
  return make_local_executor(2, cache, {}, quiet)->run(jobs);
}

TEST(Sweep, PrunedConfigurationsNeverBeatTheTopK) {
  Fixture f;
  test::ScratchDir dir;
  const ResultCache cache(dir.path().string(), "--cache");
  const int k = 3;
  const GroupResult g = sweep(f, 2, cache, k).front();
  ASSERT_EQ(g.ranked.size(), static_cast<std::size_t>(k));
  ASSERT_GT(g.pruned.size(), 20u);
  // Every replay respected its bound.
  for (const RankedEntry& e : g.replayed_entries) EXPECT_LE(e.candidate.best_bound_s(), e.result.step_time_s * (1 + 1e-9)) << e.candidate.text;
  // The pruned ones closest to the cut and a spread of the rest, replayed.
  std::vector<const Candidate*> sample;
  for (std::size_t i = 0; i < g.pruned.size(); ++i) {
    if (i < 4 || i % (g.pruned.size() / 8) == 0) sample.push_back(&g.pruned[i]);
  }
  const auto outcomes = replay_all(sample, f.model, f.profile, cache);
  const RankedEntry& kth = g.ranked.back();
  for (std::size_t i = 0; i < sample.size(); ++i) {
    ASSERT_TRUE(outcomes[i].error.empty()) << outcomes[i].error;
    EXPECT_LE(sample[i]->best_bound_s(), outcomes[i].result.step_time_s * (1 + 1e-9)) << sample[i]->text;
    const sim::SimResult r = fitted_to(outcomes[i].result, {&f.model, &f.profile, sample[i]->strategy});
    if (!r.fits) continue;
    const RankedEntry pruned{*sample[i], r};
    EXPECT_TRUE(ranks_before(kth, pruned)) << "pruned " << sample[i]->text << " (" << outcomes[i].result.step_time_s
                                           << " s) beats the K-th best " << kth.candidate.text << " (" << kth.result.step_time_s << " s)";
  }
}

// With a relative gap g (plan --gap), what is left unreplayed may beat the K-th best, but by no
// more than g of its step time, and the sweep replays less than the exact one.
TEST(Sweep, WithAGapNothingPrunedBeatsTheKthByMoreThanTheGap) {
  // A search whose exact answer needs more than the first wave of replays (gpt2-1.5b's does not:
  // its near-ties lose the tie-break before any replay).
  const wl::ModelSpec model = wl::builtin_model("megatron-8.3b");
  const hw::ClusterProfile profile = hw::builtin_profile("dgx2");
  test::ScratchDir dir;
  const ResultCache cache(dir.path().string(), "--cache");
  Progress quiet(false);
  SweepInputs in = inputs_for(model, profile, 32);
  const std::vector<SweepGroup> groups = {{"2 nodes", 2, 0, {}, 1}};
  const GroupResult exact = run_sweep(in, groups, *make_local_executor(2, cache, {}, quiet), quiet).front();
  in.gap = 0.02;
  const GroupResult gapped = run_sweep(in, groups, *make_local_executor(2, cache, {}, quiet), quiet).front();
  ASSERT_EQ(exact.ranked.size(), 1u);
  ASSERT_EQ(gapped.ranked.size(), 1u);
  EXPECT_LT(gapped.replayed, exact.replayed);
  const double kth = gapped.ranked.back().result.step_time_s;
  EXPECT_GE(exact.ranked.front().result.step_time_s, kth * (1 - in.gap) * (1 - 1e-9));
  // The pruned ones closest to the cut, and a spread of the rest, replayed (from the cache where
  // the exact sweep replayed them).
  std::vector<const Candidate*> sample;
  for (std::size_t i = 0; i < gapped.pruned.size(); ++i) {
    if (i < 8 || i % (gapped.pruned.size() / 8) == 0) sample.push_back(&gapped.pruned[i]);
  }
  const auto outcomes = replay_all(sample, model, profile, cache);
  for (std::size_t i = 0; i < sample.size(); ++i) {
    ASSERT_TRUE(outcomes[i].error.empty()) << outcomes[i].error;
    if (!fitted_to(outcomes[i].result, {&model, &profile, sample[i]->strategy}).fits) continue;
    EXPECT_GE(outcomes[i].result.step_time_s, kth * (1 - in.gap) * (1 - 1e-9))
        << "pruned " << sample[i]->text << " (" << outcomes[i].result.step_time_s << " s) beats the answer (" << kth << " s) by more than the gap";
  }
}

TEST(Sweep, SameAnswerWithOneWorkerOrTwoAndFromTheCache) {
  Fixture f;
  test::ScratchDir dir;
  const ResultCache none("", "--cache"), cache(dir.path().string(), "--cache");
  const std::string one = summary(sweep(f, 1, none, 2).front());
  const std::string two = summary(sweep(f, 2, cache, 2).front());
  EXPECT_EQ(one, two);
  Progress counted(false);
  const std::string cached = summary(sweep(f, 2, cache, 2, &counted).front());
  EXPECT_EQ(one, cached);
  EXPECT_GT(counted.replayed(), 0);
  EXPECT_EQ(counted.cached(), counted.replayed());  // nothing simulated the second time
}

TEST(Sweep, EnumerateOnlyCountsWithoutReplaying) {
  Fixture f;
  const ResultCache none("", "--cache");
  Progress counted(false);
  const GroupResult g = sweep(f, 2, none, 0, &counted).front();
  EXPECT_GT(g.candidates, 0);
  EXPECT_EQ(g.replayed, 0);
  EXPECT_EQ(counted.replayed(), 0);
  EXPECT_TRUE(g.ranked.empty());
}

// What the walk (sim/critical_path.hpp) prunes after the closed forms let it through: each such
// configuration, replayed, ranks after the K-th best. ZeRO-3 on two DGX-2 with one sample per
// GPU, where gathers outlast the computes they hide behind.
TEST(Sweep, WhatTheWalkPrunesNeverBeatsTheTopK) {
  const int k = 3;
  const TwoNodeSweep sw("megatron-8.3b", 64, parse_families("zero3", "--families"), k);
  const GroupResult& g = sw.group;
  ASSERT_EQ(g.ranked.size(), static_cast<std::size_t>(k));
  std::vector<const Candidate*> walked_out;
  for (const Candidate& c : g.pruned) {
    if (c.walk_bound_s > c.bound_s) walked_out.push_back(&c);
  }
  ASSERT_GE(walked_out.size(), 3u) << "the walk pruned too little here to test it";
  const auto outcomes = replay_all(walked_out, sw.model, sw.profile, sw.cache);
  for (std::size_t i = 0; i < walked_out.size(); ++i) {
    ASSERT_TRUE(outcomes[i].error.empty()) << outcomes[i].error;
    EXPECT_LE(walked_out[i]->walk_bound_s, outcomes[i].result.step_time_s * (1 + 1e-9)) << walked_out[i]->text;
    if (!fitted_to(outcomes[i].result, {&sw.model, &sw.profile, walked_out[i]->strategy}).fits) continue;
    EXPECT_TRUE(ranks_before(g.ranked.back(), {*walked_out[i], outcomes[i].result}))
        << "pruned by its walk, " << walked_out[i]->text << " (" << outcomes[i].result.step_time_s << " s) beats the K-th best ("
        << g.ranked.back().result.step_time_s << " s)";
  }
}

// The walk against the replay on a spread of every family the search proposes (pipelines with
// their sends and folded micro-batches, the asynchronous ones and the delayed update over
// several steps, ZeRO with offload): never above it where one step is simulated; within the
// room sim/critical_path.hpp leaves where several are (the steady state between two step ends).
// The closed forms likewise.
TEST(Sweep, TheWalkIsNeverAboveTheReplayAcrossTheSearchSpace) {
  const wl::ModelSpec model = wl::builtin_model("gpt2-1.5b");
  const hw::ClusterProfile profile = hw::builtin_profile("dgx2");
  SweepInputs in = inputs_for(model, profile, 64);
  Framework asynchronous_too;
  asynchronous_too.allow_async = true;
  in.framework = &asynchronous_too;
  const ResultCache none("", "--cache");
  Progress quiet(false);
  // Enumerate only (top 0): every candidate that fits the memory model, in bound order.
  const GroupResult g = run_sweep(in, {{"2 nodes", 2, 0, {}, 0}}, *make_local_executor(2, none, {}, quiet), quiet).front();
  ASSERT_GT(g.pruned.size(), 200u);
  std::vector<const Candidate*> sample;
  for (std::size_t i = 0; i < g.pruned.size(); i += 4) sample.push_back(&g.pruned[i]);
  const auto outcomes = replay_all(sample, model, profile, none);
  int one_step = 0, several = 0, asynchronous = 0;
  for (std::size_t i = 0; i < sample.size(); ++i) {
    ASSERT_TRUE(outcomes[i].error.empty()) << outcomes[i].error;
    const wl::MemoryEstimate memory = wl::estimate_memory(model, sample[i]->strategy, profile.gpus_per_node());
    const std::optional<sim::StepWalk> walk = sim::contention_free_step(model, sample[i]->strategy, profile, memory);
    if (!walk) continue;
    const double replay = outcomes[i].result.step_time_s;
    // The closed forms too (sim/step_bound.hpp), steady-state share and room included.
    EXPECT_LE(sample[i]->bound_s, replay * (1 + 1e-9)) << sample[i]->text << ": closed form " << sample[i]->bound_s << " s, replay " << replay;
    const wl::Schedule schedule = sample[i]->strategy.schedule;
    if (sample[i]->strategy.pp > 1 && (schedule == wl::Schedule::PIPEDREAM || schedule == wl::Schedule::TWO_BW)) ++asynchronous;
    if (walk->steps == 1) {
      ++one_step;
      EXPECT_LE(walk->step_s, replay * (1 + 1e-9)) << sample[i]->text;
    } else {
      ++several;
      EXPECT_LE(sim::walk_bound_s(*walk), replay * (1 + 1e-9)) << sample[i]->text << ": walk " << walk->step_s << " s, replay " << replay;
    }
  }
  EXPECT_GT(one_step, 50);
  EXPECT_GT(several, 10);
  EXPECT_GT(asynchronous, 5);
}

// The results cache's key names the build (result_cache.hpp): the GNU build ID of the running
// executable, the one `readelf -n` prints for this test binary.
TEST(ResultCacheKey, NamesTheExecutablesBuildId) {
  const std::string command = "readelf -n /proc/" + std::to_string(::getpid()) + "/exe 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
  ::pclose(pipe);
  const std::string label = "Build ID: ";
  const std::size_t at = text.find(label);
  if (at == std::string::npos) GTEST_SKIP() << "no readelf, or no build ID in this binary: the key falls back to a hash of the file";
  const std::string id = text.substr(at + label.size(), text.find('\n', at) - at - label.size());
  EXPECT_NE(tool_build_id().find("(build " + id + ")"), std::string::npos) << tool_build_id() << " against readelf's " << id;
}

}  // namespace
}  // namespace trainsim::planner
