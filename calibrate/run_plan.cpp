#include "run_plan.hpp"

#include <cstdio>

namespace trainsim::calibrate {
namespace {

std::string secs(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f s", s);
  return buf;
}

std::string level_text(const PlanItem& item, int level) {
  if (!item.level_unit.empty()) {
    return std::to_string(level) + " of " + std::to_string(item.seconds.size()) + " " + item.level_unit;
  }
  return level == 1 ? "quick sizes" : "full sizes";
}

}  // namespace

RunPlan plan_run(const std::vector<PlanItem>& items, std::optional<double> budget_s, double framework_startup_s) {
  std::vector<int> level(items.size(), 0);
  double used = 0;
  bool started = false;
  auto cost = [&](std::size_t i, int to) {  // seconds added by raising item i to level `to`
    const PlanItem& it = items[i];
    const double at = level[i] == 0 ? 0 : it.seconds[static_cast<std::size_t>(level[i] - 1)];
    return it.seconds[static_cast<std::size_t>(to - 1)] - at + (it.framework && !started ? framework_startup_s : 0);
  };
  auto raise = [&](std::size_t i, int to) {
    used += cost(i, to);
    if (items[i].framework) started = true;
    level[i] = to;
  };
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].seconds.empty()) continue;
    if (!budget_s) {
      raise(i, static_cast<int>(items[i].seconds.size()));
    } else if (used + cost(i, 1) <= *budget_s) {
      raise(i, 1);
    }
  }
  if (budget_s) {
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (level[i] == 0) continue;
      for (int to = static_cast<int>(items[i].seconds.size()); to > level[i]; --to) {
        if (used + cost(i, to) <= *budget_s) {
          raise(i, to);
          break;
        }
      }
    }
  }
  RunPlan plan;
  plan.seconds = used;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const PlanItem& it = items[i];
    const int last = static_cast<int>(it.seconds.size());
    if (level[i] > 0) plan.parts.push_back({it.name, it.framework, level[i], it.seconds[static_cast<std::size_t>(level[i] - 1)]});
    if (level[i] == 0 && last > 0) {
      plan.left_out.push_back(it.name + ": left out (about " + secs(it.seconds.front()) + " at " + level_text(it, 1) +
                              "; the budget of " + secs(*budget_s) + " is spent)");
    } else if (level[i] < last) {
      plan.left_out.push_back(it.name + ": " + level_text(it, level[i]) + " (" + level_text(it, last) + " need about " +
                              secs(it.seconds.back() - it.seconds[static_cast<std::size_t>(level[i] - 1)]) +
                              " more than the budget of " + secs(*budget_s) + " leaves)");
    }
  }
  return plan;
}

std::vector<double> native_part_seconds(Part part, Mode mode) {
  // {quick, full}: provenance.seconds of reports/calibration/h200x2/{quick-repeat-a,raw_results.json},
  // interference/h200x2 (full: 5 samples a cell instead of 3), host_dispatch/calib; reference
  // kernels: README's "about 10 s". GEMMs: their shapes' launches (each candidate's probe and the
  // timed samples, gemm_bench.cpp) at the rates one H100 measured for them, about 41 s and 138 s.
  double q = 0, f = 0;
  switch (part) {
    case Part::GEMM: q = 45, f = 140; break;
    case Part::KERNELS: q = 0.3, f = 0.6; break;
    case Part::HOST_COPY: q = 13, f = 30; break;
    case Part::NCCL: q = 1.6, f = 4; break;
    case Part::STORAGE_GPU: q = 1.8, f = 7.8; break;
    case Part::STORAGE: q = 31, f = 75; break;
    case Part::CPU_ADAM: q = 6.8, f = 13.5; break;
    case Part::HOST_MEMORY: q = 0.4, f = 0.5; break;
    case Part::INTERFERENCE: q = 19, f = 30; break;
    case Part::HOST_DISPATCH: q = 0.2, f = 0.2; break;
    case Part::REFERENCE_KERNELS: q = 8, f = 12; break;
    case Part::FRAMEWORK: return {};
  }
  return mode == Mode::QUICK ? std::vector<double>{q} : std::vector<double>{q, f};
}

}  // namespace trainsim::calibrate
