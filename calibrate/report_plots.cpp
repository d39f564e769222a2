#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "report.hpp"
#include "svg_plot.hpp"

namespace trainsim::calibrate {
namespace {

svg::WhiskerPoint point(double x, const Stats& s, double scale = 1.0) { return {x, s.median * scale, s.min * scale, s.max * scale}; }

// One series per value of `what` (optionally filtered), x taken from a params key.
void add_series(svg::WhiskerPlot& plot, const Results& r, const std::string& bench, const std::string& what, const std::string& label,
                const char* x_key, const std::function<bool(const nlohmann::ordered_json&)>& keep, double scale = 1.0) {
  svg::WhiskerSeries s{label, {}, true};
  for (const auto* m : r.select(bench, what)) {
    if (keep(m->params)) s.points.push_back(point(param_number(m->params, x_key), m->stats, scale));
  }
  if (!s.points.empty()) plot.series.push_back(std::move(s));
}

std::set<std::string> whats(const Results& r, const std::string& bench) {
  std::set<std::string> out;
  for (const auto& m : r.all()) {
    if (m.bench == bench) out.insert(m.what);
  }
  return out;
}

auto all_params = [](const nlohmann::ordered_json&) { return true; };

}  // namespace

std::vector<std::pair<std::string, std::string>> render_plots(const Results& r) {
  std::vector<std::pair<std::string, std::string>> out;
  auto emit = [&](const std::string& file, const svg::WhiskerPlot& p) {
    if (!p.series.empty()) out.emplace_back(file, svg::whisker_plot_svg(p));
  };
  {
    svg::WhiskerPlot p{"GEMM throughput by size (cuBLASLt, first GPU)", "GEMM work (FLOPs, log scale)", "TFLOP/s",
                       svg::AxisFormat::PLAIN, true, {}};
    for (const auto& what : whats(r, "gemm")) {
      svg::WhiskerSeries s{what, {}, false};
      for (const auto* m : r.select("gemm", what)) {
        if (param_number(m->params, "gpu") != 0 && m->params.value("layer", "") == "square") continue;
        const double flops = 2 * param_number(m->params, "m") * param_number(m->params, "n") *
                             param_number(m->params, "k") * param_number(m->params, "batch");
        s.points.push_back(point(flops, m->stats));
      }
      p.series.push_back(std::move(s));
    }
    emit("gemm.svg", p);
  }
  {
    svg::WhiskerPlot p{"Memory-bound kernels on the GPU", "input tensor size (bytes)", "GB/s (read + written)",
                       svg::AxisFormat::BYTES, true, {}};
    for (const char* what : {"copy", "layernorm", "gelu", "softmax"}) add_series(p, r, "kernels", what, what, "bytes", all_params);
    emit("kernels.svg", p);
  }
  {
    svg::WhiskerPlot p{"Host <-> device copies", "copy size (bytes)", "GB/s (all GPUs, both directions)", svg::AxisFormat::BYTES, true, {}};
    std::set<int> counts;
    for (const auto* m : r.select("host_copy", "h2d_pinned")) counts.insert(static_cast<int>(param_number(m->params, "gpus")));
    for (const auto& what : whats(r, "host_copy")) {
      if (what.starts_with("latency")) continue;
      for (int g : counts) {
        add_series(p, r, "host_copy", what, what + (g > 1 ? " x" + std::to_string(g) + " GPUs" : ""), "bytes",
                   [g](const auto& q) { return param_number(q, "gpus") == g; });
      }
    }
    emit("host_copy.svg", p);
  }
  {
    svg::WhiskerPlot p{"GPU <-> GPU copies (GPU 0 and 1)", "copy size (bytes)", "GB/s", svg::AxisFormat::BYTES, true, {}};
    for (const char* what : {"unidir", "bidir"}) add_series(p, r, "p2p", what, what, "bytes", all_params);
    emit("p2p.svg", p);
  }
  {
    std::set<int> groups;
    for (const auto& m : r.all()) {
      if (m.bench == "nccl") groups.insert(static_cast<int>(param_number(m.params, "group_size")));
    }
    for (int g : groups) {
      svg::WhiskerPlot p{"NCCL bus bandwidth, " + std::to_string(g) + " GPUs", "size (bytes, as nccl-tests)", "busbw GB/s",
                         svg::AxisFormat::BYTES, true, {}};
      for (const auto& what : whats(r, "nccl")) {
        add_series(p, r, "nccl", what, what, "bytes", [g](const auto& q) { return param_number(q, "group_size") == g; });
      }
      emit("nccl_" + std::to_string(g) + "gpus.svg", p);
    }
  }
  for (const char* op : {"read", "write"}) {
    svg::WhiskerPlot p{std::string("Storage O_DIRECT sequential ") + op, "queue depth", "GB/s", svg::AxisFormat::PLAIN, true, {}};
    std::set<double> blocks;
    for (const auto* m : r.select("storage", op)) blocks.insert(param_number(m->params, "block_bytes"));
    for (double b : blocks) {
      add_series(p, r, "storage", op, svg::axis_label(b, svg::AxisFormat::BYTES) + " blocks", "depth",
                 [b](const auto& q) { return param_number(q, "block_bytes") == b; });
    }
    emit(std::string("storage_") + op + ".svg", p);
  }
  {
    svg::WhiskerPlot p{"CPU-Adam (fp32 master, bf16 copy)", "threads", "million parameters / s", svg::AxisFormat::PLAIN, true, {}};
    std::set<double> sizes;
    for (const auto* m : r.select("cpu_adam", "bf16")) sizes.insert(param_number(m->params, "params"));
    for (double n : sizes) {
      add_series(p, r, "cpu_adam", "bf16", svg::axis_label(n, svg::AxisFormat::BYTES) + " params", "threads",
                 [n](const auto& q) { return param_number(q, "params") == n; }, 1e-6);
    }
    emit("cpu_adam.svg", p);
  }
  return out;
}

}  // namespace trainsim::calibrate
