// Where the GPU time goes, kernel class by kernel class (RunValidation::kernel_classes): the
// replay's kernels of one step as costed by class (sim/engine/metrics.hpp, GpuBusy::*_kernel_s) against
// rank 0's profiler trace (profiler_trace.hpp, kernel_class). A step can come out right while its
// GEMMs are costed long and its other kernels short; this is where that shows.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "validation.hpp"

namespace trainsim::planner {
namespace {

std::string error_text(double predicted, double measured) {
  if (measured <= 0) return predicted > 0 ? "none measured" : "-";
  return fmt::format("{:+.1f}%", 100 * (predicted / measured - 1));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::string kernel_classes_line(const RunValidation& v) {
  if (v.kernel_classes.empty()) return {};
  std::string parts;
  for (const auto& k : v.kernel_classes) {
    if (k.predicted_s <= 0 && k.measured_s <= 0) continue;
    parts += fmt::format("{}{} {:.1f} ms predicted, {:.1f} measured ({})", parts.empty() ? "" : "; ", k.name, 1e3 * k.predicted_s,
                         1e3 * k.measured_s, error_text(k.predicted_s, k.measured_s));
  }
  return fmt::format("{:<42} kernel time by class (rank 0, one step): {}\n", v.run.name, parts);
}

nlohmann::ordered_json kernel_classes_json(const RunValidation& v) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& k : v.kernel_classes) {
    out.push_back({{"class", k.name}, {"predicted_s", k.predicted_s}, {"measured_s", k.measured_s}});
  }
  return out;
}

std::string kernels_markdown(const std::vector<RunValidation>& runs) {
  std::vector<const RunValidation*> with;
  for (const auto& v : runs) {
    if (!v.kernel_classes.empty()) with.push_back(&v);
  }
  if (with.empty()) return {};
  const std::vector<RunValidation::KernelClass>& classes = with.front()->kernel_classes;
  std::string md = "## GPU kernel time by class\n\n";
  md += fmt::format(
      "Rank 0's kernels in its profiled step, each kernel's duration summed by class (a kernel's class from its name: GEMM "
      "for cuBLAS's nvjet, gemm, CUTLASS and xmma kernels; attention for flash attention's; optimizer for Adam's fused "
      "kernels; other kernels for the rest: elementwise, norms, reductions, casts and FSDP2's copies; NCCL's and copies "
      "left out), against the same sums over the first simulated GPU's step in the replay (its compute ops split by their "
      "costed classes, scaled to the time each took). The step can come out right while the classes do not: a class costed "
      "long beside one costed short. {} runs with a trace.\n\n",
      with.size());
  md += "| class | runs measuring it | median predicted / measured | mean abs error | worst |\n|---|---|---|---|---|\n";
  for (std::size_t c = 0; c < classes.size(); ++c) {
    std::vector<double> ratios;
    double sum = 0, worst = 0;
    for (const RunValidation* v : with) {
      const auto& k = v->kernel_classes[c];
      if (k.measured_s <= 0) continue;
      const double e = 100 * (k.predicted_s / k.measured_s - 1);
      ratios.push_back(k.predicted_s / k.measured_s);
      sum += std::fabs(e);
      if (std::fabs(e) > std::fabs(worst)) worst = e;
    }
    if (ratios.empty()) {
      md += fmt::format("| {} | 0 | - | - | - |\n", classes[c].name);
      continue;
    }
    md += fmt::format("| {} | {} | {:.3f} | {:.1f}% | {:+.1f}% |\n", classes[c].name, ratios.size(), median(ratios), sum / ratios.size(),
                      worst);
  }
  md += "\n| run |";
  for (const auto& k : classes) md += fmt::format(" {} predicted / measured (ms) |", k.name);
  md += "\n|---|";
  for (std::size_t c = 0; c < classes.size(); ++c) md += "---|";
  md += "\n";
  for (const RunValidation* v : with) {
    md += "| " + v->run.name + " |";
    for (const auto& k : v->kernel_classes) {
      md += fmt::format(" {:.1f} / {:.1f} ({}) |", 1e3 * k.predicted_s, 1e3 * k.measured_s, error_text(k.predicted_s, k.measured_s));
    }
    md += "\n";
  }
  return md + "\n";
}

}  // namespace trainsim::planner
