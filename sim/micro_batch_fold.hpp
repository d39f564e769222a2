#pragma once
// The arithmetic of folding identical gradient-accumulation micro-batches, shared by the replay
// (simulator.cpp, MicroBatchFold) and the planner's walk (critical_path.cpp): which micro-batch
// counts b, b + k, b + 2k to run, when three results grow evenly, and the line through them.
// A step is run at three counts past the warm-up, with (m - b) a multiple of k; when what it
// measures grows by the same amount from b to b + k as from b + k to b + 2k (the periodic regime),
// the step at m lies on that line. The regime's period k may be a multiple of the schedule's own
// (a 1F1B pipeline of unequal stages alternated between two increments), so k = P, 2P, 4P are
// tried in turn, and a later start b after them.

#include <algorithm>
#include <cmath>
#include <vector>

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
inline std::vector<FoldTry> fold_tries(const wl::Strategy& s, int m) {
  const int period = s.pp > 1 && s.schedule == wl::Schedule::INTERLEAVED ? s.pp : 1;
  const int base = s.pp > 1 ? s.pp + 1 : 2;
  const int first = (base + period - 1) / period * period;
  std::vector<FoldTry> out;
  for (int start : {first, 2 * first}) {
    for (int k : {period, 2 * period, 4 * period}) {
      const int b = start + ((m - start) % k + k) % k;  // the first count from which steps of k reach m
      if (3 * b + 3 * k < m) out.push_back({start, b, k});
    }
  }
  return out;
}

// Whether a, c, e (at b, b + k, b + 2k) grow by the same amount, to 1e-9 of their size.
inline bool grows_evenly(double a, double c, double e) {
  const double scale = std::max({std::fabs(a), std::fabs(c), std::fabs(e), 1e-300});
  return std::fabs((e - c) - (c - a)) <= 1e-9 * scale + 1e-15;
}

// The value at m on the line through c (at b + k) and e (at b + 2k).
inline double extend(double c, double e, int m, const FoldTry& t) {
  return e + static_cast<double>(m - (t.b + 2 * t.k)) / t.k * (e - c);
}

}  // namespace trainsim::sim
