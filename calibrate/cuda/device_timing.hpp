#pragma once
// Timing of work enqueued on one stream with CUDA events: warm-up first (module loading, cuBLAS
// heuristics and caches stay out of the numbers), then samples of `reps` back-to-back launches
// each, `reps` chosen so a sample lasts at least min_sample_s and launch gaps do not dominate.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <vector>

#include "device_memory.hpp"

namespace trainsim::calibrate {

struct TimingPlan {
  int warmup = 2;
  int samples = 5;
  double min_sample_s = 2e-3;
  int max_reps = 2000;
  // Keep launching until this much time has passed: long enough for clocks and power draw to
  // settle, so the samples see the steady state a training step sees, not a cold GPU's boost.
  double warmup_s = 0;
};

struct Timing {
  std::vector<double> seconds;  // per launch, one entry per sample
  int reps = 1;                 // launches per sample
};

inline Timing time_on_stream(const Stream& stream, const std::function<void()>& launch, const TimingPlan& plan) {
  Event start(stream.device()), stop(stream.device());
  for (int i = 0; i < plan.warmup; ++i) launch();
  stream.sync();
  const auto warm_start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - warm_start).count() < plan.warmup_s) {
    for (int i = 0; i < 4; ++i) launch();
    stream.sync();
  }
  start.record(stream.get());
  launch();
  stop.record(stream.get());
  const double one = std::max(elapsed_seconds(start, stop), 1e-7);
  Timing t;
  t.reps = static_cast<int>(std::clamp(std::ceil(plan.min_sample_s / one), 1.0, static_cast<double>(plan.max_reps)));
  for (int s = 0; s < plan.samples; ++s) {
    start.record(stream.get());
    for (int r = 0; r < t.reps; ++r) launch();
    stop.record(stream.get());
    t.seconds.push_back(elapsed_seconds(start, stop) / t.reps);
  }
  return t;
}

}  // namespace trainsim::calibrate
