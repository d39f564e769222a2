#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "report.hpp"
#include "svg_plot.hpp"

namespace trainsim::calibrate {
namespace {

std::string g4(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

std::string cell(const Stats& s) { return g4(s.median) + " (" + g4(s.min) + "-" + g4(s.max) + ")"; }

// A table with one row per value of `row_key` and one column per column label, cells from `pick`.
struct Pivot {
  std::string row_title;
  std::vector<std::string> columns;
  std::map<double, std::map<std::string, std::string>> rows;
  svg::AxisFormat row_format = svg::AxisFormat::BYTES;

  std::string markdown() const {
    if (rows.empty()) return "";
    std::string t = "| " + row_title + " |";
    std::string sep = "| ---: |";
    for (const auto& c : columns) {
      t += " " + c + " |";
      sep += " ---: |";
    }
    t += "\n" + sep + "\n";
    for (const auto& [row, cells] : rows) {
      t += "| " + svg::axis_label(row, row_format) + " |";
      for (const auto& c : columns) {
        const auto it = cells.find(c);
        t += " " + (it == cells.end() ? std::string("-") : it->second) + " |";
      }
      t += "\n";
    }
    return t + "\n";
  }
  void put(double row, const std::string& column, const std::string& value) {
    if (std::find(columns.begin(), columns.end(), column) == columns.end()) columns.push_back(column);
    rows[row][column] = value;
  }
};

std::string plot_link(const std::vector<std::pair<std::string, std::string>>& plots, const std::string& prefix) {
  std::string s;
  for (const auto& [file, svg] : plots) {
    if (file.starts_with(prefix)) s += "![" + file + "](" + file + ")\n\n";
  }
  return s;
}

}  // namespace

std::string summary_markdown(const Results& r, const std::vector<Headline>& heads, const nlohmann::ordered_json& prov,
                             const std::vector<std::pair<std::string, std::string>>& plots) {
  std::string md = "# Calibration of " + prov.value("host", std::string("?")) + " (" +
                   prov.value("mode", std::string("?")) + " run)\n\n";
  md += "Written by `" + prov.value("tool", std::string("trainsim-calibrate")) + "` on " +
        prov.value("date", std::string("?")) + ".\n\n";
  md += "Command: `" + prov.value("command_line", std::string("?")) + "`\n\n";
  const auto& gpu = prov["gpu"];
  if (gpu.value("available", false)) {
    md += "GPUs: " + std::to_string(gpu["devices"].size()) + " x " + gpu["devices"][0].value("name", std::string("?")) +
          ", driver " + gpu.value("driver_version", std::string("?")) + ", CUDA runtime " +
          std::to_string(gpu.value("cuda_runtime", 0)) + ", cuBLAS " + gpu.value("cublas_version", std::string("?")) +
          ", NCCL " + gpu.value("nccl_version", std::string("?")) + ".\n\n";
  }
  const auto& host = prov["host_info"];
  md += "Host: " + host.value("cpu", std::string("?")) + ", " + std::to_string(host.value("logical_cpus", 0)) +
        " logical CPUs, " + g4(host.value("memory_GiB", 0.0)) + " GiB, " + host.value("os", std::string("?")) + ".\n\n";

  md += "## Headline figures\n\nMedian of repeated samples after warm-up; spread as min-max and interquartile range.\n\n";
  md += "| figure | median | min - max | IQR | n | measured as |\n| --- | ---: | ---: | ---: | ---: | --- |\n";
  for (const auto& h : heads) {
    if (!h.stats) {
      md += "| `" + h.name + "` | not measured | | | | " + h.where + " |\n";
      continue;
    }
    const Stats& s = *h.stats;
    md += "| `" + h.name + "` | " + g4(s.median) + " " + h.unit + " | " + g4(s.min) + " - " + g4(s.max) + " | " +
          g4(s.q1) + " - " + g4(s.q3) + " | " + std::to_string(s.n) + " | " + h.where + " |\n";
  }
  md += "\nEvery figure below is median (min-max). Each record's output check is in `raw_results.json`.\n\n";

  // GEMM: per precision, the spread over shapes.
  if (!r.select("gemm", "bf16").empty() || !r.select("gemm", "fp32").empty()) {
    md += "## GEMM (cuBLASLt)\n\n| precision | shapes | worst shape TFLOP/s | median over shapes | best shape TFLOP/s |\n"
          "| --- | ---: | --- | ---: | --- |\n";
    for (const char* p : {"bf16", "fp16", "tf32", "fp32"}) {
      const auto ms = r.select("gemm", p);
      if (ms.empty()) continue;
      std::vector<double> med;
      const Measurement *lo = ms.front(), *hi = ms.front();
      for (const auto* m : ms) {
        med.push_back(m->stats.median);
        if (m->stats.median < lo->stats.median) lo = m;
        if (m->stats.median > hi->stats.median) hi = m;
      }
      auto shape = [](const Measurement* m) {
        auto dim = [&](const char* k) { return std::to_string(static_cast<long long>(param_number(m->params, k))); };
        return g4(m->stats.median) + " (" + m->params.value("layer", std::string()) + " " + m->params.value("pass", std::string()) +
               " " + dim("m") + "x" + dim("n") + "x" + dim("k") + ")";
      };
      md += std::string("| ") + p + " | " + std::to_string(ms.size()) + " | " + shape(lo) + " | " +
            g4(summarize(med).median) + " | " + shape(hi) + " |\n";
    }
    md += "\n" + plot_link(plots, "gemm");
  }
  Pivot kernels{"size", {}, {}, svg::AxisFormat::BYTES};
  for (const auto& m : r.all()) {
    if (m.bench == "kernels") kernels.put(param_number(m.params, "bytes"), m.what + " GB/s", cell(m.stats));
  }
  if (!kernels.rows.empty()) md += "## Memory-bound kernels\n\n" + kernels.markdown() + plot_link(plots, "kernels");

  Pivot copies{"size", {}, {}, svg::AxisFormat::BYTES};
  for (const auto& m : r.all()) {
    if (m.bench == "host_copy" && !m.what.starts_with("latency")) {
      copies.put(param_number(m.params, "bytes"), m.what + " x" + g4(param_number(m.params, "gpus")), cell(m.stats));
    }
    if (m.bench == "p2p" && m.unit == "GBps") copies.put(param_number(m.params, "bytes"), "p2p " + m.what, cell(m.stats));
  }
  if (!copies.rows.empty()) {
    md += "## Host <-> device and GPU <-> GPU copies (GB/s, all GPUs and directions together)\n\n" + copies.markdown();
    for (const auto& m : r.all()) {
      if (m.unit == "us") md += "- " + m.bench + " " + m.what + ": " + cell(m.stats) + " us\n";
    }
    md += "\n" + plot_link(plots, "host_copy") + plot_link(plots, "p2p");
  }

  Pivot nccl{"size", {}, {}, svg::AxisFormat::BYTES};
  for (const auto& m : r.all()) {
    if (m.bench == "nccl") {
      nccl.put(param_number(m.params, "bytes"), m.what + " x" + g4(param_number(m.params, "group_size")), cell(m.stats));
    }
  }
  if (!nccl.rows.empty()) {
    md += "## NCCL (bus bandwidth GB/s, nccl-tests definition)\n\n" + nccl.markdown() + plot_link(plots, "nccl");
  }

  for (const char* op : {"read", "write"}) {
    Pivot st{"block", {}, {}, svg::AxisFormat::BYTES};
    for (const auto* m : r.select("storage", op)) {
      st.put(param_number(m->params, "block_bytes"), "depth " + g4(param_number(m->params, "depth")), cell(m->stats));
    }
    if (!st.rows.empty()) {
      md += std::string("## Storage, O_DIRECT sequential ") + op + " (GB/s)\n\n" + st.markdown() +
            plot_link(plots, std::string("storage_") + op);
    }
  }
  std::string confirm;
  for (const char* op : {"read_confirm", "write_confirm"}) {
    for (const auto* m : r.select("storage", op)) {
      confirm += std::string("| ") + op + " | " + svg::axis_label(param_number(m->params, "block_bytes"), svg::AxisFormat::BYTES) +
                 " | " + g4(param_number(m->params, "depth")) + " | " + cell(m->stats) + " | " +
                 std::to_string(m->stats.n) + " |\n";
    }
  }
  if (!confirm.empty()) {
    md += "Best three configurations of each sweep, re-measured with fresh, longer samples (the headline takes the "
          "best of these):\n\n| | block | depth | GB/s | samples |\n| --- | ---: | ---: | ---: | ---: |\n" +
          confirm + "\n";
  }
  Pivot pipe{"block", {}, {}, svg::AxisFormat::BYTES};
  for (const auto* m : r.select("storage_gpu", "storage_to_gpu")) {
    pipe.put(param_number(m->params, "block_bytes"), "storage -> pinned -> GPU GB/s", cell(m->stats));
  }
  if (!pipe.rows.empty()) md += "## Storage to GPU pipeline\n\n" + pipe.markdown();

  Pivot adam{"threads", {}, {}, svg::AxisFormat::PLAIN};
  for (const auto& m : r.all()) {
    if (m.bench == "cpu_adam") {
      adam.put(param_number(m.params, "threads"),
               m.what + " " + svg::axis_label(param_number(m.params, "params"), svg::AxisFormat::BYTES) + " params (M/s)",
               g4(m.stats.median / 1e6) + " (" + g4(m.stats.min / 1e6) + "-" + g4(m.stats.max / 1e6) + ")");
    }
  }
  if (!adam.rows.empty()) md += "## CPU-Adam (million parameters per second)\n\n" + adam.markdown() + plot_link(plots, "cpu_adam");
  for (const auto* m : r.select("host_memory", "copy")) {
    md += "## Host memory\n\nParallel memcpy of 1 GiB on " + g4(param_number(m->params, "threads")) +
          " threads: " + cell(m->stats) + " GB/s (read + written).\n\n";
  }
  if (!r.notes().empty()) {
    md += "## Notes\n\n";
    for (const auto& n : r.notes()) md += "- " + n + "\n";
    md += "\n";
  }
  return md;
}

}  // namespace trainsim::calibrate
