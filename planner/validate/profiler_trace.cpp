#include "profiler_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "config_error.hpp"
#include "gzip_file.hpp"
#include "strict_json.hpp"

namespace trainsim::planner {
namespace {

// Traces of a whole step are tens of MB; anything beyond 4 GiB is not one.
constexpr std::size_t MAX_TRACE_BYTES = std::size_t{4} << 30;
// A GPU event lasts at most a day, and its timestamp (microseconds since some epoch, as CUPTI
// gives it) stays below 1e18: past that a double no longer holds the microsecond.
constexpr double MAX_EVENT_US = 8.64e10;
constexpr double MAX_TIMESTAMP_US = 1e18;

constexpr double MAX_ALLOCATED_BYTES = 16.0 * 1024 * 1024 * 1024 * 1024;

using Interval = std::pair<double, double>;

// An event's ts and dur in microseconds, checked: numbers, finite, a timestamp below 1e18 and a
// duration from 0 to a day; anything else is not a trace of a step (a ts of 1e308 once gave a
// step of "inf s").
template <class Key>
std::pair<double, double> checked_span(const std::string& path, const nlohmann::json& e, const Key& key) {
  for (const char* k : {"ts", "dur"}) {
    if (!e[k].is_number()) throw ConfigError(path, key(k), "a number of microseconds", describe_json(e[k]));
  }
  const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
  if (!std::isfinite(ts) || std::fabs(ts) > MAX_TIMESTAMP_US) {
    throw ConfigError(path, key("ts"), "a finite timestamp below 1e18 microseconds", fmt::format("{}", ts));
  }
  if (!std::isfinite(dur) || dur < 0 || dur > MAX_EVENT_US) {
    throw ConfigError(path, key("dur"), "a duration from 0 to 8.64e10 microseconds (a day)", fmt::format("{}", dur));
  }
  return {ts, dur};
}

double union_length(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  double total = 0, start = 0, end = -std::numeric_limits<double>::infinity();
  for (const auto& [a, b] : v) {
    if (a > end) {
      if (end > start) total += end - start;
      start = a;
      end = b;
    } else {
      end = std::max(end, b);
    }
  }
  if (end > start) total += end - start;
  return total;
}

bool is_nccl(std::string_view name) {
  return name.find("nccl") != std::string_view::npos || name.find("NCCL") != std::string_view::npos;
}

bool contains_lower(std::string_view name, std::string_view lower) {
  if (lower.size() > name.size()) return false;
  for (std::size_t i = 0; i + lower.size() <= name.size(); ++i) {
    std::size_t k = 0;
    while (k < lower.size() && static_cast<char>(std::tolower(static_cast<unsigned char>(name[i + k]))) == lower[k]) ++k;
    if (k == lower.size()) return true;
  }
  return false;
}

}  // namespace

const char* kernel_class(std::string_view name) {
  if (contains_lower(name, "nccl")) return "nccl";
  for (const char* a : {"flash", "fmha", "attention", "sdpa"}) {
    if (contains_lower(name, a)) return "attention";
  }
  if (contains_lower(name, "adam")) return "optimizer";
  if (name.rfind("nvjet", 0) == 0) return "gemm";
  for (const char* g : {"gemm", "cutlass", "xmma", "cublas"}) {
    if (contains_lower(name, g)) return "gemm";
  }
  return "other";
}

TraceSummary read_profiler_trace(const std::string& path) {
  const std::string text = read_maybe_gzipped(path, "a readable profiler trace (Chrome trace JSON, optionally gzipped)", MAX_TRACE_BYTES);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) throw ConfigError(path, "", "a Chrome trace JSON document", "text that is not JSON");
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    throw ConfigError(path, "traceEvents", "an array of trace events (torch.profiler's export_chrome_trace)",
                      doc.is_object() ? "no such array" : "not an object");
  }
  std::vector<Interval> compute, nccl, all;
  double first = std::numeric_limits<double>::infinity(), last = -first;
  double step_begin = first, step_end = -first;
  TraceSummary t;
  double peak = -1;
  const nlohmann::json& events = doc["traceEvents"];
  for (std::size_t i = 0; i < events.size(); ++i) {
    const nlohmann::json& e = events[i];
    if (!e.is_object()) continue;
    auto key = [&](std::string_view k) { return fmt::format("traceEvents[{}].{}", i, k); };
    if (e.contains("cat") && !e["cat"].is_string()) {
      throw ConfigError(path, key("cat"), "a string (the event's category, e.g. \"kernel\")", describe_json(e["cat"]));
    }
    const std::string cat = e.value("cat", "");
    const std::string name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    const bool gpu = cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
    if (name.rfind("ProfilerStep#", 0) == 0 && e.contains("ts") && e.contains("dur")) {
      const auto [ts, dur] = checked_span(path, e, key);
      step_begin = std::min(step_begin, ts);
      step_end = std::max(step_end, ts + dur);
    }
    if (name == "[memory]" && e.contains("args") && e["args"].is_object() && e["args"].contains("Total Allocated")) {
      const nlohmann::json& v = e["args"]["Total Allocated"];
      // Bytes on one GPU: from 0 to 16 TiB, past any GPU's memory (hwprofiles allow 16384 GiB).
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > MAX_ALLOCATED_BYTES) {
        throw ConfigError(path, key("args.Total Allocated"),
                          "a number of bytes from 0 to 16 TiB (the memory one GPU holds)", describe_json(v));
      }
      peak = std::max(peak, v.get<double>());
    }
    if (!gpu) continue;
    if (!e.contains("ts") || !e.contains("dur")) {
      throw ConfigError(path, key(e.contains("ts") ? "dur" : "ts"), "GPU events with numeric ts and dur (microseconds)",
                        "an event without it");
    }
    const auto [ts, dur] = checked_span(path, e, key);
    const double a = ts * 1e-6, b = a + dur * 1e-6;
    first = std::min(first, a);
    last = std::max(last, b);
    all.emplace_back(a, b);
    (cat == "kernel" && is_nccl(name) ? nccl : compute).emplace_back(a, b);
    if (cat != "kernel") {
      t.copy_s += b - a;
      continue;
    }
    ++t.kernels;
    const std::string_view k = kernel_class(name);
    (k == "nccl"        ? t.nccl_kernel_s
     : k == "attention" ? t.attention_kernel_s
     : k == "optimizer" ? t.optimizer_kernel_s
     : k == "gemm"      ? t.gemm_kernel_s
                        : t.other_kernel_s) += b - a;
  }
  if (all.empty()) {
    throw ConfigError(path, "traceEvents", "GPU activity (kernel, gpu_memcpy or gpu_memset events: a trace with CUDA activities)",
                      "none");
  }
  t.step_from_profiler_step = step_end > step_begin;
  t.step_s = t.step_from_profiler_step ? (step_end - step_begin) * 1e-6 : last - first;
  t.compute_busy_s = union_length(compute);
  t.nccl_busy_s = union_length(nccl);
  const double busy = union_length(all);
  t.exposed_communication_s = std::max(0.0, busy - t.compute_busy_s);
  t.gpu_span_s = last - first;
  t.idle_fraction = std::clamp(1.0 - busy / t.gpu_span_s, 0.0, 1.0);
  t.no_compute_fraction = std::clamp(1.0 - t.compute_busy_s / t.gpu_span_s, 0.0, 1.0);
  if (peak >= 0) t.peak_allocated_bytes = peak;
  // What ran it, for the default profile when nothing else says (torch.profiler writes both).
  if (doc.contains("deviceProperties") && doc["deviceProperties"].is_array() && !doc["deviceProperties"].empty() &&
      doc["deviceProperties"][0].is_object() && doc["deviceProperties"][0].contains("name") &&
      doc["deviceProperties"][0]["name"].is_string()) {
    t.gpu = doc["deviceProperties"][0]["name"].get<std::string>();
  }
  if (doc.contains("distributedInfo") && doc["distributedInfo"].is_object() && doc["distributedInfo"].contains("world_size") &&
      doc["distributedInfo"]["world_size"].is_number_integer()) {
    t.world_size = static_cast<int>(std::clamp<std::int64_t>(doc["distributedInfo"]["world_size"].get<std::int64_t>(), 0, 1 << 20));
  }
  return t;
}

}  // namespace trainsim::planner
