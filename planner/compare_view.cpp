// `trainsim compare` for people: the side-by-side table and the two SVG charts (drawn with the
// project's plotting library, hwprofiles/svg/svg_plot.hpp).
#include <fmt/format.h>

#include <cmath>

#include "config_error.hpp"
#include "accuracy.hpp"
#include "candidate_layers.hpp"
#include "compare_answer.hpp"
#include "model_params.hpp"
#include "plan_answer.hpp"
#include "request.hpp"
#include "result_json.hpp"
#include "svg_plot.hpp"

namespace trainsim::planner {
namespace {

constexpr double GiB = 1073741824.0;

std::string title(const CompareAnswer& a, const char* what) {
  const PlanQuestion& q = a.question;
  return fmt::format("{}: {} on {} x {}", what, q.model.name, q.gpus ? *q.gpus : q.nodes.front() * q.profile.gpus_per_node(),
                     q.profile.gpu.model);
}

}  // namespace

std::string compare_table(const CompareAnswer& a) {
  const PlanQuestion& q = a.question;
  std::string out = fmt::format("trainsim compare: {} ({}) on {} of {} ({} x {} per node)\n", printable(q.model.name),
                                human_count(wl::total_params(q.model)),
                                q.gpus ? fmt::format("{} GPUs", *q.gpus) : fmt::format("{} nodes", q.nodes.front()), printable(q.profile.name),
                                q.profile.gpus_per_node(), q.profile.gpu.model);
  out += q.global_batch ? fmt::format("  global batch {} x seq {}", *q.global_batch, q.seq)
                        : fmt::format("  global batch: one sequence per GPU (no --global-batch) x seq {}", q.seq);
  out += fmt::format("; {} tokens{}\n\n", human_count(q.tokens), q.tokens_default ? " (20 per parameter; --tokens)" : "");
  out += fmt::format("{:<20} {:>10} {:>8} {:>10} {:>9} {:>10} {:>9} {:>11} {:>11}\n", "", "step s", "TFLOP/s", "tokens/s", "GPU GiB",
                     "host GiB", "NVMe TB", "days", "cost USD");
  for (const CompareRow& r : a.rows) {
    const std::string label = r.label.size() > 20 ? "..." + r.label.substr(r.label.size() - 17) : r.label;
    if (!r.entry) {
      out += fmt::format("{:<20} {}\n", label, r.why_not);
      continue;
    }
    const EntryMetrics m = metrics_of(*r.entry, q);
    out += fmt::format("{:<20} {:>10.4g} {:>8.1f} {:>10.4g} {:>9.2f} {:>10.1f} {:>9.2f} {:>11.4g} {:>11.4g}\n", label, m.step_time_s,
                       m.tflops_per_gpu, m.tokens_per_s, m.peak_memory_bytes / GiB, m.host_peak_bytes / GiB,
                       m.storage_peak_bytes / 1e12, m.time_to_train_days, m.cost_usd);
    out += fmt::format("{:<20} {}\n", "", describe(r.entry->candidate.strategy));
  }
  out += fmt::format("\nWhere the step goes (seconds per step, average GPU)\n{:<20} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "", "compute",
                     "exp. comm", "exp. I/O", "optimizer", "idle");
  for (const CompareRow& r : a.rows) {
    if (!r.entry) continue;
    const Breakdown b = average_breakdown(r.entry->result);
    out += fmt::format("{:<20} {:>10.4g} {:>10.4g} {:>10.4g} {:>10.4g} {:>10.4g}\n",
                       r.label.size() > 20 ? "..." + r.label.substr(r.label.size() - 17) : r.label, b.compute_s,
                       b.exposed_communication_s, b.exposed_offload_io_s, b.optimizer_s, b.idle_s);
  }
  // How far to trust each (planner/accuracy.hpp): the runs measured, or published, that share its features.
  out += "\nMeasured accuracy (mean |step-time error| of the runs sharing each feature; trainsim simulate or plan gives the whole card)\n";
  for (const CompareRow& r : a.rows) {
    if (!r.entry) continue;
    out += fmt::format("{:<20} {}\n", r.label.size() > 20 ? "..." + r.label.substr(r.label.size() - 17) : r.label,
                       accuracy_brief(accuracy_card(r.entry->candidate.strategy, q.profile)));
  }
  if (!calibrated_profile(q.profile)) {
    out += fmt::format("{} is not a calibrated profile: its answers carry its published figures' error besides these.\n", printable(q.profile.name));
  }
  if (q.layers) {
    for (const std::string& line : q.layers->basis()) out += "Basis: " + line + "\n";
  }
  return out;
}

std::string compare_step_time_svg(const CompareAnswer& a) {
  svg::BarChart c;
  c.title = title(a, "Step time by category");
  c.value_label = "seconds per step (average GPU)";
  c.stacked = true;
  const char* names[] = {"compute", "exposed communication", "exposed offload I/O", "optimizer", "idle"};
  for (const char* n : names) c.series.push_back({n, {}, {}});
  for (const CompareRow& r : a.rows) {
    c.categories.push_back(r.label);
    c.notes.push_back(r.entry ? "" : r.why_not);
    const Breakdown b = r.entry ? average_breakdown(r.entry->result) : Breakdown{};
    const double v[] = {b.compute_s, b.exposed_communication_s, b.exposed_offload_io_s, b.optimizer_s, b.idle_s};
    for (std::size_t k = 0; k < 5; ++k) c.series[k].y.push_back(r.entry ? v[k] : std::nan(""));
  }
  return svg::bar_chart_svg(c);
}

std::string compare_memory_svg(const CompareAnswer& a) {
  svg::BarChart c;
  c.title = title(a, "Memory per tier at the peak");
  c.value_label = "GiB (log scale): GPU per GPU, host and NVMe per node";
  c.stacked = false;
  c.log_scale = true;
  c.series = {{"GPU (per GPU)", {}, {}}, {"host memory (per node)", {}, {}}, {"NVMe (per node)", {}, {}}};
  for (const CompareRow& r : a.rows) {
    c.categories.push_back(r.label);
    c.notes.push_back(r.entry ? "" : r.why_not);
    const sim::SimResult* s = r.entry ? &r.entry->result : nullptr;
    c.series[0].y.push_back(s ? s->peak_memory_bytes / GiB : std::nan(""));
    c.series[1].y.push_back(s ? s->host_peak_bytes / GiB : std::nan(""));
    c.series[2].y.push_back(s ? s->storage_peak_bytes / GiB : std::nan(""));
  }
  return svg::bar_chart_svg(c);
}

}  // namespace trainsim::planner
