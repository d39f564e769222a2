#include "sweep.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

#include "candidate_layers.hpp"
#include "critical_path.hpp"
#include "parallel_for.hpp"
#include "search_space.hpp"
#include "strategy_identity.hpp"

namespace trainsim::planner {
namespace {

// The model a candidate that passed enumeration replays with (its layer: candidate_layers.hpp).
const wl::ModelSpec* model_of(const SweepInputs& in, const wl::Strategy& s) {
  return in.layers != nullptr ? in.layers->for_candidate(s).model : in.model;
}

// The walk bound of a candidate (sim/critical_path.hpp); -1 where the walk does not apply or
// proves nothing (an asynchronous step is a difference of two ends: step_bound.hpp).
double walk_bound(const SweepInputs& in, const Candidate& c) {
  if (wl::asynchronous(c.strategy)) return -1;
  const wl::ModelSpec& model = *model_of(in, c.strategy);
  const wl::MemoryEstimate memory = wl::estimate_memory(model, c.strategy, in.profile->gpus_per_node());
  const std::optional<sim::StepWalk> walk = sim::contention_free_step(model, c.strategy, *in.profile, memory);
  return walk ? sim::walk_bound_s(*walk) : -1;
}

// Candidates walked together, whatever the threads: the walks a sweep does never depend on cores.
// Two per replay a wave offers: enough to keep two walk threads busy, few enough that what the
// next replay's bar rules out is seldom walked (1T over 20..29 DGX-2, one replay per wave and
// node count: 19.1 s with four per batch, 16.2 s with two).
constexpr std::size_t WALKS_PER_WAVE_REPLAY = 2;

// Walks `todo` over the walk threads (each walk is pure: no SimGrid, no shared state).
void walk_all(const SweepInputs& in, const std::vector<Candidate*>& todo) {
  parallel_for(todo.size(), in.walk_threads, [&](std::size_t i) { todo[i]->walk_bound_s = walk_bound(in, *todo[i]); });
}

// What a candidate must rank before to enter the top K: the K-th best replay (its bin and
// tie-break), or with a gap that best less the gap; nothing yet (fewer than K replayed: all may
// enter), or nothing at all (enumerate only).
struct Bar {
  enum class Kind { ANY, NONE, RANK, GAP } kind = Kind::ANY;
  std::int64_t bin = 0;  // RANK: the K-th best's bin; GAP: the bin of that best less the gap
  double gpu_bytes = 0;  // RANK: the K-th best's tie-break
  std::string text;
  // Whether a candidate of this bound or more may enter, by the bound alone (bins are monotone:
  // a bound's bin is at most its replay's).
  bool reachable(double bound_s) const {
    if (kind == Kind::ANY) return true;
    if (kind == Kind::NONE) return false;
    return ranking_step_bin(bound_s) <= bin;
  }
  // Whether a candidate whose bound lies in `bound_bin`, with this tie-break, may enter: in the
  // K-th best's bin only by winning the tie-break (its replay is no faster than its bound).
  bool may_enter(std::int64_t bound_bin, double gpu, const std::string& t) const {
    if (kind == Kind::ANY) return true;
    if (kind == Kind::NONE) return false;
    if (kind == Kind::GAP) return bound_bin <= bin;
    return bound_bin < bin || (bound_bin == bin && std::tie(gpu, t) < std::tie(gpu_bytes, text));
  }
};

struct GroupState {
  GroupResult out;
  double gap = 0;                        // SweepInputs::gap
  std::string walks_key;                 // its walks' entry in the cache ("" when none)
  std::map<std::string, double> walks;   // canonical text -> walk bound: loaded, then computed
  bool walks_changed = false;
  std::vector<Candidate> candidates;  // ascending closed-form bound, then canonical text
  std::size_t next = 0;               // the first candidate not yet walked
  std::size_t walk_batch_size = 4;    // candidates walked together (WALKS_PER_WAVE_REPLAY x wave)
  // Walked, not yet replayed, in ranking order of their best bounds: the bound's bin, the
  // memory model's GPU bytes, the canonical text (then the index).
  std::set<std::tuple<std::int64_t, double, std::string, std::size_t>> walked;

  Bar bar() const {
    Bar b;
    if (out.group.top_k <= 0) {
      b.kind = Bar::Kind::NONE;  // enumerate only
      return b;
    }
    const auto k = static_cast<std::size_t>(out.group.top_k);
    if (out.replayed_entries.size() < k) return b;
    const RankedEntry& kth = out.replayed_entries[k - 1];
    if (gap > 0) {
      b.kind = Bar::Kind::GAP;
      b.bin = ranking_step_bin(kth.result.step_time_s * (1 - gap));
      return b;
    }
    b.kind = Bar::Kind::RANK;
    b.bin = ranking_step_bin(kth.result.step_time_s);
    b.gpu_bytes = kth.candidate.model_gpu_bytes;
    b.text = kth.candidate.text;
    return b;
  }
  // The open candidate first in ranking order of its bound, walked first if it was not (the walk
  // only raises a bound, so it may go back behind others): the next to replay, or none once
  // nothing left may enter past the bar.
  std::optional<std::size_t> pick(const SweepInputs& in, const Bar& bar) {
    for (;;) {
      const bool unwalked = next < candidates.size();
      if (!walked.empty() && (!unwalked || std::get<0>(*walked.begin()) < ranking_step_bin(candidates[next].bound_s))) {
        const auto& [bin, gpu, text, i] = *walked.begin();
        if (!bar.may_enter(bin, gpu, text)) return std::nullopt;
        const std::size_t chosen = i;
        walked.erase(walked.begin());
        return chosen;
      }
      // Nothing walked lies in a lower bin than the next bound: past the bar, so is every one.
      if (!unwalked || !bar.reachable(candidates[next].bound_s)) return std::nullopt;
      if (candidates[next].walk_bound_s == 0) walk_batch(in, bar);
      Candidate& c = candidates[next];
      walked.emplace(ranking_step_bin(c.best_bound_s()), c.model_gpu_bytes, c.text, next++);
    }
  }
  // The next candidates not yet walked, up to a batch, that may still enter: from the cache, or
  // walked in parallel.
  void walk_batch(const SweepInputs& in, const Bar& bar) {
    std::vector<Candidate*> todo;
    for (std::size_t i = next; i < candidates.size() && todo.size() < walk_batch_size && bar.reachable(candidates[i].bound_s); ++i) {
      Candidate& c = candidates[i];
      if (c.walk_bound_s != 0) continue;
      const auto hit = walks.find(c.text);
      if (hit != walks.end()) {
        c.walk_bound_s = hit->second;
      } else {
        todo.push_back(&c);
      }
    }
    walk_all(in, todo);
    for (const Candidate* c : todo) walks[c->text] = c->walk_bound_s;
    walks_changed = walks_changed || !todo.empty();
  }
  void store_walks(const SweepInputs& in) {
    if (walks_changed && in.walk_cache != nullptr && !walks_key.empty()) in.walk_cache->store_walks(walks_key, walks);
    walks_changed = false;
  }
  long remaining() const {
    long n = 0;
    const Bar b = bar();
    for (std::size_t i = next; i < candidates.size() && b.reachable(candidates[i].bound_s); ++i) ++n;
    for (const auto& [bin, gpu, text, i] : walked) n += b.may_enter(bin, gpu, text) ? 1 : 0;
    return n;
  }
  void count(const Issue& issue) {
    ++out.infeasible[issue.reason];
    out.example.emplace(issue.reason, issue.message);
  }
};

bool in_group(const SweepGroup& g, const wl::Strategy& s) {
  if (g.families.empty()) return true;
  return std::any_of(g.families.begin(), g.families.end(), [&](const Family* f) { return f->contains(s); });
}

// Enumerates one node count once for every group that shares it.
void enumerate_groups(const SweepInputs& in, const SweepGroup& group, const std::vector<GroupState*>& states) {
  SpaceShape shape;
  shape.model = in.model;
  shape.gpus_per_node = in.profile->gpus_per_node();
  shape.nodes = group.nodes;
  shape.gpu_count = group_gpus(in, group);
  shape.global_batch = group_global_batch(in, group);
  shape.seq = in.seq;
  shape.framework = in.framework;
  shape.uneven_pipelines = in.uneven_pipelines;
  std::vector<GroupState*> members;
  enumerate_space(shape, [&](const wl::Strategy& s) {
    members.clear();
    for (GroupState* g : states) {
      if (in_group(g->out.group, s)) members.push_back(g);
    }
    if (members.empty()) return;
    for (GroupState* g : members) ++g->out.enumerated;
    const std::vector<Issue> issues = validate({in.model, in.profile, s, in.memory_headroom});
    if (!issues.empty()) {
      for (GroupState* g : members) g->count(issues.front());
      return;
    }
    Config c{in.model, in.profile, s, in.memory_headroom};
    if (in.layers != nullptr) {
      const CandidateLayers::Layer layer = in.layers->for_candidate(s);
      if (layer.issue) {
        for (GroupState* g : members) g->count(*layer.issue);
        return;
      }
      c.model = layer.model;
    }
    const Bound b = bound(c);
    std::optional<Issue> out = b.misfit;
    if (!out) out = replay_size_issue(c);
    if (out) {
      for (GroupState* g : members) g->count(*out);
      return;
    }
    const Candidate candidate = candidate_of(s, b);
    for (GroupState* g : members) {
      g->candidates.push_back(candidate);
      ++g->out.candidates;
    }
  });
  for (GroupState* g : states) {
    std::sort(g->candidates.begin(), g->candidates.end(), [](const Candidate& a, const Candidate& b) {
      return a.bound_s != b.bound_s ? a.bound_s < b.bound_s : a.text < b.text;
    });
  }
}

void insert_ranked(std::vector<RankedEntry>& ranked, RankedEntry e) {
  const auto at = std::upper_bound(ranked.begin(), ranked.end(), e, ranks_before);
  ranked.insert(at, std::move(e));
}

}  // namespace

int group_gpus(const SweepInputs& in, const SweepGroup& g) {
  return g.gpus > 0 ? g.gpus : g.nodes * in.profile->gpus_per_node();
}

std::int64_t group_global_batch(const SweepInputs& in, const SweepGroup& g) {
  return in.global_batch ? *in.global_batch : static_cast<std::int64_t>(group_gpus(in, g));
}

Candidate candidate_of(const wl::Strategy& s, const Bound& b) {
  const double gpu = b.memory.stages.empty() ? 0 : b.memory.stages[static_cast<std::size_t>(b.memory.peak_stage)].gpu_bytes();
  return Candidate{s, wl::canonical_text(s), b.step.seconds, b.step.dominant, gpu};
}

std::int64_t ranking_step_bin(double step_time_s) {
  if (!(step_time_s > 0)) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(std::floor(std::log(step_time_s) / std::log1p(RANK_RESOLUTION)));
}

bool ranks_before(const RankedEntry& a, const RankedEntry& b) {
  const std::int64_t x = ranking_step_bin(a.result.step_time_s), y = ranking_step_bin(b.result.step_time_s);
  if (x != y) return x < y;
  if (a.candidate.model_gpu_bytes != b.candidate.model_gpu_bytes) return a.candidate.model_gpu_bytes < b.candidate.model_gpu_bytes;
  return a.candidate.text < b.candidate.text;
}

std::vector<GroupResult> run_sweep(const SweepInputs& in, const std::vector<SweepGroup>& groups, ReplayExecutor& executor,
                                   Progress& progress) {
  std::vector<GroupState> states(groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    states[i].out.group = groups[i];
    states[i].out.global_batch = group_global_batch(in, groups[i]);
    states[i].gap = in.gap;
  }
  // One enumeration per GPU count, in the order the groups first name them, on the walk threads:
  // each writes only the states of its own count, so the outcome does not depend on threads.
  std::vector<int> done;
  std::vector<std::pair<const SweepGroup*, std::vector<GroupState*>>> enumerations;
  for (const SweepGroup& g : groups) {
    const int gpus = group_gpus(in, g);
    if (std::find(done.begin(), done.end(), gpus) != done.end()) continue;
    done.push_back(gpus);
    std::vector<GroupState*> sharing;
    for (GroupState& s : states) {
      if (group_gpus(in, s.out.group) == gpus) sharing.push_back(&s);
    }
    enumerations.emplace_back(&g, std::move(sharing));
  }
  parallel_for(enumerations.size(), in.walk_threads,
               [&](std::size_t i) { enumerate_groups(in, *enumerations[i].first, enumerations[i].second); });
  if (in.walk_cache != nullptr && in.walk_cache->enabled()) {
    for (GroupState& s : states) {
      if (s.out.group.top_k <= 0 || s.candidates.empty()) continue;
      std::string scope = "all";
      if (!s.out.group.families.empty()) {
        scope.clear();
        for (const Family* f : s.out.group.families) scope += std::string(f->name) + ",";
      }
      if (in.layers != nullptr) scope += " " + in.layers->identity();
      s.walks_key = ResultCache::walks_key_text(*in.model, *in.profile, group_gpus(in, s.out.group), s.out.global_batch, in.seq, scope);
      s.walks = in.walk_cache->load_walks(s.walks_key);
    }
  }

  // Waves: each open group offers its next `wave` candidates; a strategy two groups share is
  // replayed once.
  std::map<std::string, ReplayOutcome> memo;
  const int wave = in.wave > 0 ? in.wave : groups.size() > 1 ? 1 : 2;
  for (GroupState& s : states) s.walk_batch_size = WALKS_PER_WAVE_REPLAY * static_cast<std::size_t>(wave);
  for (;;) {
    long remaining = 0;
    for (const GroupState& s : states) remaining += s.remaining();
    progress.set_remaining(remaining);
    if (const std::string why = in.stop_reason ? in.stop_reason() : std::string(); !why.empty()) {
      for (GroupState& s : states) {
        if (s.remaining() > 0) s.out.incomplete = why;
      }
      break;
    }
    std::vector<ReplayJob> jobs;
    std::vector<std::string> job_texts;
    std::vector<std::pair<GroupState*, std::size_t>> assigned;
    for (GroupState& s : states) {
      const Bar bar = s.bar();
      for (int taken = 0; taken < wave; ++taken) {
        const std::optional<std::size_t> i = s.pick(in, bar);
        if (!i) {
          s.store_walks(in);  // the group is done: what an interrupt would lose is kept
          break;
        }
        const Candidate& c = s.candidates[*i];
        assigned.emplace_back(&s, *i);
        if (memo.count(c.text) || std::find(job_texts.begin(), job_texts.end(), c.text) != job_texts.end()) continue;
        const Config config{model_of(in, c.strategy), in.profile, c.strategy, in.memory_headroom};
        jobs.push_back({config, ResultCache::key_text(config, in.options), c.best_bound_s()});
        job_texts.push_back(c.text);
      }
    }
    if (assigned.empty()) break;
    std::vector<ReplayOutcome> outcomes = executor.run(jobs);
    for (std::size_t j = 0; j < jobs.size(); ++j) memo.emplace(job_texts[j], std::move(outcomes[j]));
    // An interrupt may have ended this wave's simulations: their failures say nothing of them.
    const bool stopping = in.stop_reason && !in.stop_reason().empty();
    for (const auto& [state, index] : assigned) {
      const Candidate& c = state->candidates[index];
      const ReplayOutcome& o = memo.at(c.text);
      if (stopping && !o.error.empty()) {
        state->out.incomplete = in.stop_reason();
        continue;
      }
      ++state->out.replayed;
      const sim::SimResult r = o.error.empty() ? fitted_to(o.result, {model_of(in, c.strategy), in.profile, c.strategy, in.memory_headroom})
                                               : o.result;
      if (!o.error.empty()) {
        state->count({"replay-error", o.error});
        state->out.errors.push_back(c.text + ": " + o.error);
      } else if (!r.fits) {
        state->count({"replayed-memory", r.infeasible_reason.value_or("the replayed peak does not fit")});
      } else {
        insert_ranked(state->out.replayed_entries, {c, r});
      }
    }
  }

  std::vector<GroupResult> results;
  for (GroupState& s : states) {
    const auto k = static_cast<std::size_t>(std::max(0, s.out.group.top_k));
    const auto& all = s.out.replayed_entries;
    s.out.ranked.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(std::min(k, all.size())));
    // Never replayed, closest to the cut first: the walked ones by their walk, then the rest.
    for (const auto& w : s.walked) s.out.pruned.push_back(s.candidates[std::get<3>(w)]);
    s.out.pruned.insert(s.out.pruned.end(), s.candidates.begin() + static_cast<std::ptrdiff_t>(s.next), s.candidates.end());
    results.push_back(std::move(s.out));
  }
  return results;
}

}  // namespace trainsim::planner
