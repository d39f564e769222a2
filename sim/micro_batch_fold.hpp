#pragma once
// The arithmetic of folding identical gradient-accumulation micro-batches, shared by the replay
// (simulator.cpp, MicroBatchFold) and the planner's walk (critical_path.cpp): which micro-batch
// counts b, b + k, b + 2k to run, when three results grow evenly, and the line through them.
// A step is run at three counts past the warm-up, with (m - b) a multiple of k; when what it
// measures grows by the same amount from b to b + k as from b + k to b + 2k (the periodic regime),
// the step at m lies on that line. The regime's period k may be a multiple of the schedule's own
// (a 1F1B pipeline of unequal stages alternated between two increments), so k = P, 2P, 4P are
// tried in turn, and a later start b after them.
// A pipeline whose stages hold unequal numbers of layers can repeat only after as many
// micro-batches as it has stages of one kind: replayed at every count from 37 to 110, megatron-1t
// on 36 DGX-2 stages (15 and 1 of 3 layers, 20 of 4; tp 16, dp 2, 1F1B) grew by 0.315948 s per
// micro-batch but by 0.313846 s at 43, 63, 83 and 103; on 48 stages (16 of 2 layers, 32 of 3)
// every 32nd, on 44 (4 of 2, 40 of 3) every 40th (reports/perf/fold_periods.md). Three counts
// one apart can then hold no glitch, or one, and the line through them misses the step: these
// pipelines try k = each kind's count of stages first (the fold stays exact either way: a regime
// of period 1 also repeats over 20), then P, 2P, 4P.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "stage_partition.hpp"
#include "strategy.hpp"

namespace trainsim::sim {

struct FoldTry {
  int start = 0;  // the count past the warm-up this try starts from (b is the first at or after it)
  int b = 0;      // the first of the three counts
  int k = 0;      // the step between them
};

// The (b, k) to try for a step of `m` micro-batches, in order; only those that run fewer
// micro-batches than the step (3b + 3k < m). Past a pipeline's warm-up (p + 1), rounded to the
// interleaved schedule's groups of p.
// `stage_kinds`: how many stages hold each distinct number of layers (stage_kind_counts), empty
// where every stage holds as many.
inline std::vector<FoldTry> fold_tries(const wl::Strategy& s, std::int64_t m, const std::vector<int>& stage_kinds = {}) {
  const int period = s.pp > 1 && s.schedule == wl::Schedule::INTERLEAVED ? s.pp : 1;
  const int base = s.pp > 1 ? s.pp + 1 : 2;
  const int first = (base + period - 1) / period * period;
  std::vector<int> periods;
  for (int n : stage_kinds) {
    const int k = (n + period - 1) / period * period;
    if (k > period && std::find(periods.begin(), periods.end(), k) == periods.end()) periods.push_back(k);
  }
  for (int k : {period, 2 * period, 4 * period}) {
    if (std::find(periods.begin(), periods.end(), k) == periods.end()) periods.push_back(k);
  }
  std::vector<FoldTry> out;
  for (int start : {first, 2 * first}) {
    for (int k : periods) {
      // the first count from which steps of k reach m (m may pass an int: 2^31 sequences a step)
      const int b = start + static_cast<int>(((m - start) % k + k) % k);
      if (3 * static_cast<std::int64_t>(b) + 3 * k < m) out.push_back({start, b, k});
    }
  }
  return out;
}

// How many pipeline stages hold each distinct number of layers, the kind with the most layers
// first (the one the glitches above followed); empty when they all hold as many.
inline std::vector<int> stage_kind_counts(const wl::StagePartition& part) {
  std::vector<int> layers;
  for (int st = 0; st < part.stages; ++st) layers.push_back(part.stage_layers(st));
  std::vector<int> kinds = layers;
  std::sort(kinds.begin(), kinds.end(), std::greater<>());
  kinds.erase(std::unique(kinds.begin(), kinds.end()), kinds.end());
  std::vector<int> counts;
  if (kinds.size() < 2) return counts;
  for (int l : kinds) counts.push_back(static_cast<int>(std::count(layers.begin(), layers.end(), l)));
  return counts;
}

// Whether a, c, e (at b, b + k, b + 2k) grow by the same amount, to 1e-9 of their size.
inline bool grows_evenly(double a, double c, double e) {
  const double scale = std::max({std::fabs(a), std::fabs(c), std::fabs(e), 1e-300});
  return std::fabs((e - c) - (c - a)) <= 1e-9 * scale + 1e-15;
}

// The value at m on the line through c (at b + k) and e (at b + 2k).
inline double extend(double c, double e, std::int64_t m, const FoldTry& t) {
  return e + static_cast<double>(m - (t.b + 2 * t.k)) / t.k * (e - c);
}

// Where no fold try applies (3b + 3k < m fails, or none grew evenly) and one replay of all `m`
// micro-batches would exceed trainsim's op limit (`largest`: the most micro-batches one replay may
// hold): three counts past the warm-up whose line is extended to m, smallest first (k = P, 2P, 4P),
// each replay within the limit. Such a step is extrapolated, not folded, and said so; the replays
// together may hold more micro-batches than the step (each stays within the limit, which is what
// bounds a replay's memory). Empty where the step fits the limit or even the first try would not.
inline std::vector<FoldTry> extrapolation_tries(const wl::Strategy& s, std::int64_t m, int largest) {
  std::vector<FoldTry> out;
  if (m <= largest) return out;
  const int period = s.pp > 1 && s.schedule == wl::Schedule::INTERLEAVED ? s.pp : 1;
  const int base = s.pp > 1 ? s.pp + 1 : 2;
  const int first = (base + period - 1) / period * period;
  for (int k : {period, 2 * period, 4 * period}) {
    const int b = first + static_cast<int>(((m - first) % k + k) % k);  // so that m lies on the line's grid
    if (b + 2 * k <= largest && b + 2 * k < m) out.push_back({first, b, k});
  }
  return out;
}

}  // namespace trainsim::sim
