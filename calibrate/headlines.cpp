#include "headlines.hpp"

#include <cmath>
#include <cstdio>

namespace trainsim::calibrate {
namespace {

constexpr double GiB = 1073741824.0;

bool is(const nlohmann::ordered_json& p, const char* key, double value) {
  const auto it = p.find(key);
  return it != p.end() && it->is_number() && it->get<double>() == value;
}

double max_param(const Results& r, const char* bench, const char* what, const char* key) {
  double best = 0;
  for (const auto* m : r.select(bench, what)) best = std::max(best, param_number(m->params, key));
  return best;
}

std::string fmt(const char* f, double a, double b = 0) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), f, a, b);
  return buf;
}

Headline from(const char* name, const char* unit, const Measurement* m, std::string where) {
  Headline h{name, unit, std::move(where), std::nullopt};
  if (m != nullptr) h.stats = m->stats;
  return h;
}

// The record with the highest median among those of a series.
const Measurement* best_of(const Results& r, const char* bench, const char* what) {
  const Measurement* best = nullptr;
  for (const auto* m : r.select(bench, what)) {
    if (best == nullptr || m->stats.median > best->stats.median) best = m;
  }
  return best;
}

}  // namespace

std::vector<Headline> headlines(const Results& r) {
  std::vector<Headline> out;
  // The slowest GPU's 8192^3 product: a data-parallel step waits for its slowest GPU.
  const Measurement* gemm = nullptr;
  int gpus = 0;
  for (const auto* m : r.select("gemm", "bf16")) {
    if (m->params.value("layer", "") == "square" && is(m->params, "m", 8192)) {
      ++gpus;
      if (gemm == nullptr || m->stats.median < gemm->stats.median) gemm = m;
    }
  }
  out.push_back(from("gemm_bf16_8192_tflops", "TFLOP/s", gemm,
                     gemm ? fmt("8192^3 bf16 GEMM (cuBLASLt, fp32 accumulate), slowest of %.0f GPUs (GPU %.0f)", gpus,
                                param_number(gemm->params, "gpu"))
                          : "8192^3 bf16 GEMM"));
  out.push_back(from("hbm_copy_GBps", "GB/s",
                     r.find("kernels", "copy", [](const auto& p) { return is(p, "bytes", GiB); }),
                     "device-to-device copy of 1 GiB, bytes read plus written"));
  out.push_back(from("h2d_pinned_GBps", "GB/s",
                     r.find("host_copy", "h2d_pinned", [](const auto& p) { return is(p, "bytes", GiB) && is(p, "gpus", 1); }),
                     "host-to-device copy of 1 GiB from pinned memory, one GPU"));
  out.push_back(from("d2h_pinned_GBps", "GB/s",
                     r.find("host_copy", "d2h_pinned", [](const auto& p) { return is(p, "bytes", GiB) && is(p, "gpus", 1); }),
                     "device-to-host copy of 1 GiB to pinned memory, one GPU"));
  const double group = max_param(r, "nccl", "all_reduce", "group_size");
  out.push_back(from("allreduce_1GiB_busbw_GBps", "GB/s",
                     r.find("nccl", "all_reduce",
                            [group](const auto& p) { return is(p, "bytes", GiB) && is(p, "group_size", group); }),
                     group > 0 ? fmt("NCCL all-reduce of 1 GiB (fp32 sum) on %.0f GPUs, bus bandwidth = algbw * 2(n-1)/n", group)
                               : "NCCL all-reduce of 1 GiB on all GPUs of the node"));
  for (const char* op : {"read", "write"}) {
    // The re-measured best configurations when present (see run_storage_bench), else the sweep.
    const Measurement* m = best_of(r, "storage", op[0] == 'r' ? "read_confirm" : "write_confirm");
    const bool confirmed = m != nullptr;
    if (m == nullptr) m = best_of(r, "storage", op);
    const std::string how = std::string(op[0] == 'r' ? "O_DIRECT sequential read" : "O_DIRECT sequential write (+fdatasync)") +
                            (confirmed ? ", best of the sweep re-measured" : ", best of the sweep");
    out.push_back(from(op[0] == 'r' ? "storage_read_GBps" : "storage_write_GBps", "GB/s", m,
                       m ? how + fmt(": block %.0f KiB, depth %.0f", param_number(m->params, "block_bytes") / 1024,
                                     param_number(m->params, "depth"))
                         : std::string("O_DIRECT sequential ") + op));
  }
  const double params = max_param(r, "cpu_adam", "bf16", "params");
  const double threads = max_param(r, "cpu_adam", "bf16", "threads");
  out.push_back(from("cpu_adam_params_per_s", "params/s",
                     r.find("cpu_adam", "bf16",
                            [&](const auto& p) { return is(p, "params", params) && is(p, "threads", threads); }),
                     params > 0 ? fmt("CPU-Adam step (fp32 master, bf16 copy) on %.0f M parameters, %.0f threads",
                                      params / 1048576, threads)
                                : "CPU-Adam step on all logical CPUs"));
  return out;
}

nlohmann::ordered_json summary_json(const std::vector<Headline>& heads, const nlohmann::ordered_json& provenance) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  nlohmann::ordered_json spread;
  for (const auto& h : heads) {
    j[h.name] = h.stats ? nlohmann::ordered_json(h.stats->median) : nlohmann::ordered_json(nullptr);
    nlohmann::ordered_json s{{"unit", h.unit}, {"where", h.where}};
    if (h.stats) {
      s["min"] = h.stats->min;
      s["q1"] = h.stats->q1;
      s["median"] = h.stats->median;
      s["q3"] = h.stats->q3;
      s["max"] = h.stats->max;
      s["n"] = h.stats->n;
    }
    spread[h.name] = s;
  }
  j["spread"] = spread;
  j["provenance"] = provenance;
  return j;
}

Comparison compare_summaries(const nlohmann::json& a, const nlohmann::json& b, const std::string& name_a,
                             const std::string& name_b, double tolerance) {
  Comparison c;
  c.text = "| figure | " + name_a + " | " + name_b + " | difference | within " + fmt("%.0f%%", tolerance * 100) +
           " |\n| --- | ---: | ---: | ---: | --- |\n";
  for (const auto& [key, value] : a.items()) {
    if (key == "schema_version" || key == "spread" || key == "provenance") continue;
    const auto other = b.find(key);
    if (!value.is_number() || other == b.end() || !other->is_number()) {
      c.text += "| " + key + " | " + value.dump() + " | " + (other == b.end() ? "absent" : other->dump()) +
                " | - | not compared |\n";
      continue;
    }
    const double x = value.get<double>(), y = other->get<double>();
    // Relative to the mean of the two, so the comparison is symmetric.
    const double diff = x == y ? 0.0 : std::fabs(x - y) / (0.5 * (std::fabs(x) + std::fabs(y)));
    ++c.compared;
    const bool ok = diff <= tolerance;
    c.agree = c.agree && ok;
    c.text += "| " + key + " | " + fmt("%.4g", x) + " | " + fmt("%.4g", y) + " | " + fmt("%.2f%%", diff * 100) + " | " +
              (ok ? "yes" : "**no**") + " |\n";
  }
  return c;
}

}  // namespace trainsim::calibrate
