#include "torch_offload_calibration.hpp"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <type_traits>

namespace trainsim::hw {
namespace {

NumberRange bytes_range() { return {1.0, 1e13, true, "a number in [1, 1e13] (bytes)"}; }
// Down to 1 kB/s: a slower rate makes copy times no SimGrid replay can hold (5e-324 GB/s crashed one).
NumberRange rate_range() { return {1e-6, 1e5, true, "a number in [1e-6, 1e5] (GB/s)"}; }
NumberRange params_rate() { return {1e3, 1e13, true, "a number in [1e3, 1e13] (parameters per second)"}; }

template <class T>
const T* nearest(const std::vector<T>& xs, int want, int T::*count, std::string_view what = {}) {
  const T* best = nullptr;
  for (const T& x : xs) {
    if constexpr (std::is_same_v<T, BandwidthCurve>) {
      if (x.what != what) continue;
    }
    const int d = std::abs(x.*count - want), bd = best == nullptr ? 0 : std::abs(best->*count - want);
    if (best == nullptr || d < bd || (d == bd && x.*count < best->*count)) best = &x;
  }
  return best;
}

}  // namespace

TorchOffload read_torch_offload(StrictObject o) {
  TorchOffload t;
  for (StrictObject c : o.objects("curves")) {
    BandwidthCurve curve;
    curve.what = c.string("what");
    if (std::find(std::begin(TORCH_OFFLOAD_CURVES), std::end(TORCH_OFFLOAD_CURVES), curve.what) ==
        std::end(TORCH_OFFLOAD_CURVES)) {
      throw ConfigError(o.source(), c.path_of("what"), "one of d2h_pageable, d2h_pinned, h2d_pinned, cpu_grad_add",
                        "\"" + curve.what + "\"");
    }
    curve.group_size = static_cast<int>(c.integer("gpus", 1, 4096));
    for (const BandwidthCurve& d : t.curves) {
      if (d.what == curve.what && d.group_size == curve.group_size) {
        throw ConfigError(o.source(), c.path_of("gpus"), "one curve per (what, gpus)",
                          "a second \"" + curve.what + "\" at " + std::to_string(curve.group_size) + " GPUs");
      }
    }
    double previous = 0;
    for (StrictObject p : c.objects("points")) {
      CurvePoint point{p.number("bytes", bytes_range()), p.number("GBps", rate_range())};
      if (point.bytes <= previous) {
        throw ConfigError(o.source(), p.path_of("bytes"), "sizes in strictly ascending order", describe_json(point.bytes));
      }
      previous = point.bytes;
      p.finish();
      curve.points.push_back(point);
    }
    c.finish();
    t.curves.push_back(std::move(curve));
  }
  for (StrictObject r : o.objects("adamw")) {
    CpuOptimizerRate e;
    e.what = "torch_adamw_fused_cpu_pinned";
    e.processes = static_cast<int>(r.integer("processes", 1, 4096));
    e.threads_per_process = static_cast<int>(r.integer("threads_per_process", 1, 100000));
    e.params_per_s_per_process = r.number("params_per_s_per_process", params_rate());
    if (r.has("seconds_per_tensor")) {
      double previous = 0;
      for (StrictObject p : r.objects("seconds_per_tensor")) {
        CpuOptimizerRate::TensorPoint point{p.number("elements", {1.0, 1e13, true, "a number in [1, 1e13] (elements per tensor)"}),
                                            p.number("seconds", {0.0, 1e4, false, "a number in (0, 1e4] (seconds per tensor)"})};
        if (point.elements <= previous) {
          throw ConfigError(o.source(), p.path_of("elements"), "sizes in strictly ascending order", describe_json(point.elements));
        }
        previous = point.elements;
        p.finish();
        e.seconds_per_tensor.push_back(point);
      }
    }
    for (const CpuOptimizerRate& d : t.adamw) {
      if (d.processes == e.processes) {
        throw ConfigError(o.source(), r.path_of("processes"), "one run per process count",
                          "a second run of " + std::to_string(e.processes));
      }
    }
    r.finish();
    t.adamw.push_back(e);
  }
  t.source = o.string("source");
  o.finish();
  return t;
}

nlohmann::ordered_json torch_offload_to_json(const TorchOffload& t) {
  nlohmann::ordered_json curves = nlohmann::ordered_json::array(), adamw = nlohmann::ordered_json::array();
  for (const BandwidthCurve& c : t.curves) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const CurvePoint& p : c.points) points.push_back({{"bytes", p.bytes}, {"GBps", p.value}});
    curves.push_back({{"what", c.what}, {"gpus", c.group_size}, {"points", points}});
  }
  for (const CpuOptimizerRate& r : t.adamw) {
    nlohmann::ordered_json run = {{"processes", r.processes},
                                  {"threads_per_process", r.threads_per_process},
                                  {"params_per_s_per_process", r.params_per_s_per_process}};
    if (!r.seconds_per_tensor.empty()) {
      nlohmann::ordered_json points = nlohmann::ordered_json::array();
      for (const CpuOptimizerRate::TensorPoint& p : r.seconds_per_tensor) points.push_back({{"elements", p.elements}, {"seconds", p.seconds}});
      run["seconds_per_tensor"] = points;
    }
    adamw.push_back(run);
  }
  return {{"curves", curves}, {"adamw", adamw}, {"source", t.source}};
}

const BandwidthCurve* torch_offload_curve(const TorchOffload& t, std::string_view what, int gpus) {
  return nearest(t.curves, gpus, &BandwidthCurve::group_size, what);
}

const CpuOptimizerRate* torch_offload_adamw(const TorchOffload& t, int processes) {
  return nearest(t.adamw, processes, &CpuOptimizerRate::processes);
}

}  // namespace trainsim::hw
