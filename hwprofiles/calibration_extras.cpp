#include "calibration_extras.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <tuple>

#include "reference_kernel_table.hpp"
#include "torch_offload_calibration.hpp"

namespace trainsim::hw {
namespace {

// Ranges: a slowdown is at least 1 (nothing runs faster for sharing its GPU) and below 100; host
// times from 0 to a second; rates from a thousand parameters per second up.
NumberRange slowdown() { return {1.0, 100.0, true, "a number in [1, 100] (ratio to running alone)"}; }
NumberRange micros() { return {0.0, 1e6, true, "a number in [0, 1e6] (microseconds)"}; }
NumberRange tflops() { return {0.001, 1e5, true, "a number in [0.001, 1e5] (TFLOP/s)"}; }
NumberRange count(const char* unit) { return {1.0, 1e12, true, std::string("a number in [1, 1e12] (") + unit + ")"}; }

// The grid form (hwprofiles/README.md, "interference"): one object per measured cell. The older
// form of two scalars (compute_slowdown, communication_slowdown: one GEMM and one all-reduce)
// is refused with a message saying how to measure the table: a single ratio applied to every
// collective over-exposed communication 35-98% on the validation runs (reports/validation).
Interference read_interference(StrictObject o) {
  if (o.has("compute_slowdown") || o.has("communication_slowdown")) {
    throw ConfigError(o.source(), o.path_of(o.has("compute_slowdown") ? "compute_slowdown" : "communication_slowdown"),
                      "the measured table \"points\" (the scalar form was replaced: run trainsim-calibrate --only "
                      "interference and take calibration.interference from its profile.json)",
                      "the scalar form");
  }
  Interference i;
  const NumberRange us = {0.0, 1e7, false, "a number in (0, 1e7] (microseconds)"};
  const NumberRange dim = {1.0, 1e7, true, "a number in [1, 1e7] (matrix size)"};
  std::vector<StrictObject> points = o.objects("points");
  for (std::size_t n = 0; n < points.size(); ++n) {
    StrictObject& p = points[n];
    InterferencePoint e;
    e.collective = p.string("collective");
    if (std::find(std::begin(INTERFERENCE_COLLECTIVES), std::end(INTERFERENCE_COLLECTIVES), e.collective) ==
        std::end(INTERFERENCE_COLLECTIVES)) {
      throw ConfigError(o.source(), p.path_of("collective"), "one of all_reduce, all_gather, reduce_scatter",
                        "\"" + e.collective + "\"");
    }
    e.bytes = p.number("bytes", count("bytes"));
    e.gemm_m = p.number("gemm_m", dim);
    e.gemm_n = p.number("gemm_n", dim);
    e.gemm_k = p.number("gemm_k", dim);
    e.gemm_alone_us = p.number("gemm_alone_us", us);
    e.collective_alone_us = p.number("collective_alone_us", us);
    e.collective_beside_us = p.number("collective_beside_us", us);
    e.compute_slowdown = p.number("compute_slowdown", slowdown());
    if (e.collective_beside_us < e.collective_alone_us) {
      throw ConfigError(o.source(), p.path_of("collective_beside_us"),
                        "at least collective_alone_us (" + describe_json(e.collective_alone_us) + ")",
                        describe_json(e.collective_beside_us));
    }
    p.finish();
    for (std::size_t q = 0; q < n; ++q) {
      const InterferencePoint& d = i.points[q];
      if (d.collective == e.collective && d.bytes == e.bytes && d.gemm_m == e.gemm_m && d.gemm_n == e.gemm_n &&
          d.gemm_k == e.gemm_k) {
        throw ConfigError(o.source(), p.path_of("bytes"), "one point per (collective, bytes, gemm_m, gemm_n, gemm_k)",
                          "a repeat of point " + std::to_string(q));
      }
    }
    i.points.push_back(e);
  }
  std::sort(i.points.begin(), i.points.end(), [](const InterferencePoint& a, const InterferencePoint& b) {
    return std::tuple(a.collective, a.gemm_flops(), a.bytes) < std::tuple(b.collective, b.gemm_flops(), b.bytes);
  });
  i.source = o.string("source");
  o.finish();
  return i;
}

HostDispatch read_host_dispatch(StrictObject o) {
  HostDispatch h;
  h.kernel_launch_us = o.optional_number("kernel_launch_us", micros());
  h.gpu_kernel_us = o.optional_number("gpu_kernel_us", micros());
  h.op_us = o.optional_number("op_us", micros());
  h.hook_us = o.optional_number("hook_us", micros());
  if (o.has("stacks")) {
    for (StrictObject s : o.objects("stacks")) {
      StackDispatch d;
      d.stack = s.string("stack");
      if (auto r = s.optional_integer("ranks", 1, 1 << 20)) d.ranks = static_cast<int>(*r);
      d.layer_forward_us = s.number("layer_forward_us", micros());
      d.layer_backward_us = s.number("layer_backward_us", micros());
      d.micro_batch_forward_us = s.number("micro_batch_forward_us", micros());
      d.micro_batch_backward_us = s.number("micro_batch_backward_us", micros());
      d.sync_layer_us = s.number("sync_layer_us", micros());
      d.optimizer_step_us = s.number("optimizer_step_us", micros());
      d.optimizer_layer_us = s.number("optimizer_layer_us", micros());
      for (const StackDispatch& e : h.stacks) {
        if (e.stack != d.stack) continue;
        if (!e.ranks || !d.ranks) {
          throw ConfigError(o.source(), s.path_of("ranks"),
                            "\"ranks\" on every entry of a stack calibrated at several rank counts",
                            "a second entry for " + d.stack);
        }
        if (*e.ranks == *d.ranks) {
          throw ConfigError(o.source(), s.path_of("ranks"), "one entry per (stack, ranks)",
                            "a repeat of " + d.stack + " at " + std::to_string(*d.ranks) + " ranks");
        }
      }
      s.finish();
      h.stacks.push_back(d);
    }
  }
  h.source = o.string("source");
  o.finish();
  return h;
}

}  // namespace

void read_calibration_extras(StrictObject& o, Calibration& cal) {
  if (auto r = o.optional_object("reference_kernels")) read_reference_kernels(*r, cal);
  if (auto i = o.optional_object("interference")) cal.interference = read_interference(*i);
  if (auto h = o.optional_object("host_dispatch")) cal.host_dispatch = read_host_dispatch(*h);
  if (auto a = o.optional_object("attention")) {
    for (StrictObject k : a->objects("kernels")) {
      AttentionKernel e;
      e.head_dim = k.number("head_dim", count("elements"));
      e.seq = k.number("seq", count("tokens"));
      e.batch_heads = k.number("batch_heads", count("attention heads"));
      e.causal = k.boolean("causal");
      e.forward_TFLOPs = k.number("forward_TFLOPs", tflops());
      e.backward_TFLOPs = k.number("backward_TFLOPs", tflops());
      k.finish();
      cal.attention.push_back(e);
    }
    cal.attention_source = a->string("source");
    a->finish();
  }
  if (auto c = o.optional_object("cpu_optimizers")) {
    for (StrictObject r : c->objects("runs")) {
      CpuOptimizerRate e;
      e.what = r.string("what");
      e.processes = static_cast<int>(r.integer("processes", 1, 4096));
      e.threads_per_process = static_cast<int>(r.integer("threads_per_process", 1, 100000));
      e.params_per_s_per_process = r.number("params_per_s_per_process", count("parameters per second"));
      r.finish();
      cal.cpu_optimizers.push_back(e);
    }
    cal.cpu_optimizers_source = c->string("source");
    c->finish();
  }
  if (auto t = o.optional_object("torch_offload")) cal.torch_offload = read_torch_offload(*t);
}

void calibration_extras_to_json(const Calibration& c, nlohmann::ordered_json& cal) {
  if (c.interference) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const InterferencePoint& p : c.interference->points) {
      points.push_back({{"collective", p.collective},
                        {"bytes", p.bytes},
                        {"gemm_m", p.gemm_m},
                        {"gemm_n", p.gemm_n},
                        {"gemm_k", p.gemm_k},
                        {"gemm_alone_us", p.gemm_alone_us},
                        {"collective_alone_us", p.collective_alone_us},
                        {"collective_beside_us", p.collective_beside_us},
                        {"compute_slowdown", p.compute_slowdown}});
    }
    cal["interference"] = {{"points", points}, {"source", c.interference->source}};
  }
  if (c.host_dispatch) {
    const HostDispatch& h = *c.host_dispatch;
    nlohmann::ordered_json j;
    if (h.kernel_launch_us) j["kernel_launch_us"] = *h.kernel_launch_us;
    if (h.gpu_kernel_us) j["gpu_kernel_us"] = *h.gpu_kernel_us;
    if (h.op_us) j["op_us"] = *h.op_us;
    if (h.hook_us) j["hook_us"] = *h.hook_us;
    if (!h.stacks.empty()) {
      j["stacks"] = nlohmann::ordered_json::array();
      for (const StackDispatch& s : h.stacks) {
        nlohmann::ordered_json e = {{"stack", s.stack}};
        if (s.ranks) e["ranks"] = *s.ranks;
        e.update(nlohmann::ordered_json{{"layer_forward_us", s.layer_forward_us},
                                        {"layer_backward_us", s.layer_backward_us},
                                        {"micro_batch_forward_us", s.micro_batch_forward_us},
                                        {"micro_batch_backward_us", s.micro_batch_backward_us},
                                        {"sync_layer_us", s.sync_layer_us},
                                        {"optimizer_step_us", s.optimizer_step_us},
                                        {"optimizer_layer_us", s.optimizer_layer_us}});
        j["stacks"].push_back(e);
      }
    }
    j["source"] = h.source;
    cal["host_dispatch"] = j;
  }
  if (!c.attention.empty()) {
    nlohmann::ordered_json k = nlohmann::ordered_json::array();
    for (const AttentionKernel& a : c.attention) {
      k.push_back({{"head_dim", a.head_dim},
                   {"seq", a.seq},
                   {"batch_heads", a.batch_heads},
                   {"causal", a.causal},
                   {"forward_TFLOPs", a.forward_TFLOPs},
                   {"backward_TFLOPs", a.backward_TFLOPs}});
    }
    cal["attention"] = {{"kernels", k}, {"source", c.attention_source}};
  }
  if (!c.cpu_optimizers.empty()) {
    nlohmann::ordered_json r = nlohmann::ordered_json::array();
    for (const CpuOptimizerRate& e : c.cpu_optimizers) {
      r.push_back({{"what", e.what},
                   {"processes", e.processes},
                   {"threads_per_process", e.threads_per_process},
                   {"params_per_s_per_process", e.params_per_s_per_process}});
    }
    cal["cpu_optimizers"] = {{"runs", r}, {"source", c.cpu_optimizers_source}};
  }
  if (c.torch_offload) cal["torch_offload"] = torch_offload_to_json(*c.torch_offload);
  if (!c.reference_kernels.empty()) cal["reference_kernels"] = reference_kernels_to_json(c);
}

namespace {

// Linear interpolation of y over log(x) through points sorted by x, clamped at both ends.
double log_interp(const std::vector<std::pair<double, double>>& xy, double x) {
  if (xy.empty()) return 0;
  if (x <= xy.front().first) return xy.front().second;
  if (x >= xy.back().first) return xy.back().second;
  const auto hi = std::upper_bound(xy.begin(), xy.end(), x, [](double v, const auto& p) { return v < p.first; });
  const auto lo = std::prev(hi);
  const double t = std::log(x / lo->first) / std::log(hi->first / lo->first);
  return lo->second + t * (hi->second - lo->second);
}

}  // namespace

InterferenceEffect interference_effect(const Interference& table, std::string_view collective, double bytes,
                                       double gemm_flops) {
  // Per measured GEMM (points are sorted by collective, GEMM FLOPs, bytes): the effect at `bytes`.
  std::vector<std::pair<double, double>> extra_by_gemm, slowdown_by_gemm;
  for (std::size_t i = 0; i < table.points.size();) {
    const InterferencePoint& first = table.points[i];
    std::size_t j = i;
    std::vector<std::pair<double, double>> extra, slow;
    while (j < table.points.size() && table.points[j].collective == first.collective &&
           table.points[j].gemm_flops() == first.gemm_flops()) {
      const InterferencePoint& p = table.points[j++];
      extra.emplace_back(p.bytes, std::max(0.0, p.collective_beside_us - p.collective_alone_us) * 1e-6);
      slow.emplace_back(p.bytes, p.compute_slowdown);
    }
    if (first.collective == collective) {
      extra_by_gemm.emplace_back(first.gemm_flops(), log_interp(extra, bytes));
      slowdown_by_gemm.emplace_back(first.gemm_flops(), log_interp(slow, bytes));
    }
    i = j;
  }
  if (extra_by_gemm.empty()) return {};
  return {log_interp(extra_by_gemm, gemm_flops), std::max(1.0, log_interp(slowdown_by_gemm, gemm_flops))};
}

}  // namespace trainsim::hw
