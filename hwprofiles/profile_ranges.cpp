#include "profile_ranges.hpp"

#include <fmt/format.h>

#include <array>
#include <stdexcept>

namespace trainsim::hw {
namespace {

// Bounds are generous for any machine built or planned (a GPU of 16 TiB, a NIC of 100 Tb/s) and
// tight enough that bytes stay below 2^63 and times below 1e15 s. Rates have a floor, not 0:
// a rate of 1e-300 is a typo, not a machine.
constexpr std::array<QuantityRange, 36> RANGES{{
    {"node_count", 1, 1 << 20, true, true, "nodes"},
    {"gpu.count_per_node", 1, 1024, true, true, "GPUs"},
    {"gpu.memory_GiB", 0, 16384, false, false, "GiB"},
    {"gpu.reserved_GiB", 0, 16384, true, false, "GiB"},
    {"gpu.peak_TFLOPs", 0.001, 1e6, true, false, "TFLOP/s"},
    {"gpu.hbm_GBps", 0.01, 1e6, true, false, "GB/s"},
    {"intra_node.link_GBps", 0.01, 1e5, true, false, "GB/s"},
    {"intra_node.latency_us", 0, 1e6, true, false, "microseconds"},
    {"pcie.link_GBps", 0.01, 1e4, true, false, "GB/s"},
    {"pcie.latency_us", 0, 1e6, true, false, "microseconds"},
    {"pcie.gpus_per_switch", 1, 1024, true, true, "GPUs"},
    {"pcie.switch_uplink_GBps", 0.01, 1e4, true, false, "GB/s"},
    {"pcie.host_aggregate_GBps", 0.01, 1e5, true, false, "GB/s"},
    {"host.sockets", 1, 16, true, true, "sockets"},
    {"host.cores", 1, 100000, true, true, "cores"},
    {"host.memory_GiB", 0, 1 << 20, false, false, "GiB"},
    {"host.memory_GBps", 0.01, 1e5, true, false, "GB/s"},
    {"storage.count", 1, 1024, true, true, "devices"},
    {"storage.capacity_TB", 0, 1000, false, false, "TB"},
    {"storage.read_GBps", 0.001, 1e4, true, false, "GB/s"},
    {"storage.write_GBps", 0.001, 1e4, true, false, "GB/s"},
    {"storage.mixed_read_GBps", 0.001, 1e4, true, false, "GB/s"},
    {"storage.mixed_write_GBps", 0.001, 1e4, true, false, "GB/s"},
    {"nic.count", 1, 1024, true, true, "NICs"},
    {"nic.link_Gbps", 0.1, 1e5, true, false, "Gb/s"},
    {"nic.latency_us", 0, 1e6, true, false, "microseconds"},
    {"inter_node.oversubscription", 1, 1024, true, false, "ratio"},
    {"inter_node.latency_us", 0, 1e6, true, false, "microseconds"},
    {"cost.price_per_gpu_hour_usd", 0, 1e4, true, false, "US dollars"},
    {"cost.power_per_node_kW", 0, 1e4, false, false, "kW"},
    {"calibration.gemm.m", 1, 2147483648.0, true, false, "elements"},
    {"calibration.gemm.efficiency", 0, 1.5, false, false, "fraction of peak"},
    {"calibration.curve.group_size", 2, 1 << 20, true, true, "GPUs"},
    {"calibration.curve.bytes", 1, 1e15, true, false, "bytes"},
    {"calibration.curve.GBps", 1e-6, 1e6, true, false, "GB/s"},
    {"calibration.cpu_adam_params_per_s", 1e3, 1e13, true, false, "parameters per second"},
}};

// "calibration.copies[2].points[0].GBps" -> "calibration.curve.GBps"; "gpu.peak_TFLOPs.fp16" ->
// "gpu.peak_TFLOPs"; gemm n and k share m's row.
std::string table_key(std::string_view path) {
  std::string key;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '[') {
      while (i < path.size() && path[i] != ']') ++i;
      continue;
    }
    key += path[i];
  }
  for (const char* curve : {"calibration.collectives", "calibration.copies", "calibration.kernels"}) {
    if (key.rfind(curve, 0) == 0) {
      key = "calibration.curve" + key.substr(std::string_view(curve).size());
      if (const auto pos = key.find(".points"); pos != std::string::npos) key.erase(pos, 7);
    }
  }
  if (key.rfind("gpu.peak_TFLOPs.", 0) == 0) key = "gpu.peak_TFLOPs";
  // The table of products timed inside steps has the entries of the table timed back to back.
  if (key.rfind("calibration.gemm_in_step.products.", 0) == 0) {
    key = "calibration.gemm." + key.substr(std::string_view("calibration.gemm_in_step.products.").size());
  }
  if (key == "calibration.gemm.n" || key == "calibration.gemm.k") key = "calibration.gemm.m";
  return key;
}

// 16384 -> "16384", 1e15 -> "1e15", 0.001 -> "0.001".
std::string bound_text(double v) {
  if (v == static_cast<double>(static_cast<long long>(v)) && v < 1e7) return fmt::format("{:.0f}", v);
  std::string text = fmt::format("{:g}", v);
  if (const auto e = text.find("e+"); e != std::string::npos) text.erase(e + 1, 1);
  return text;
}

NumberRange to_number_range(const QuantityRange& r) {
  return {r.min, r.max, r.min_inclusive,
          fmt::format("a number in {}{}, {}] ({})", r.min_inclusive ? "[" : "(", bound_text(r.min), bound_text(r.max),
                      r.unit)};
}

}  // namespace

std::span<const QuantityRange> profile_quantity_ranges() { return RANGES; }

std::string range_text(const QuantityRange& r) {
  if (r.integer) return fmt::format("an integer in [{}, {}] ({})", bound_text(r.min), bound_text(r.max), r.unit);
  return to_number_range(r).what;
}

const QuantityRange& quantity_range(std::string_view key_path) {
  const std::string key = table_key(key_path);
  for (const auto& r : RANGES) {
    if (r.key == key) return r;
  }
  throw std::logic_error("profile_ranges: no range for " + std::string(key_path));
}

double ranged_number(StrictObject& o, std::string_view key) {
  return o.number(key, to_number_range(quantity_range(o.path_of(key))));
}

std::optional<double> optional_ranged_number(StrictObject& o, std::string_view key) {
  if (!o.has(key)) return std::nullopt;
  return ranged_number(o, key);
}

std::int64_t ranged_integer(StrictObject& o, std::string_view key) {
  const QuantityRange& r = quantity_range(o.path_of(key));
  return o.integer(key, static_cast<std::int64_t>(r.min), static_cast<std::int64_t>(r.max));
}

}  // namespace trainsim::hw
