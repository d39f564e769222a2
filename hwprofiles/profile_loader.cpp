#include "profile_loader.hpp"

#include "calibration_extras.hpp"

#include <array>
#include <utility>

#include "embedded_file.hpp"
#include "profile_ranges.hpp"

namespace trainsim {
std::span<const EmbeddedFile> builtin_profile_files();  // generated from hwprofiles/*.json
}

namespace trainsim::hw {
namespace {

constexpr std::array<std::pair<ComputePrecision, std::string_view>, 6> PRECISION_NAMES{{
    {ComputePrecision::FP64, "fp64"},
    {ComputePrecision::FP32, "fp32"},
    {ComputePrecision::TF32, "tf32"},
    {ComputePrecision::FP16, "fp16"},
    {ComputePrecision::BF16, "bf16"},
    {ComputePrecision::FP8, "fp8"},
}};
constexpr std::array<std::pair<IntraNodeFabric, std::string_view>, 3> FABRIC_NAMES{{
    {IntraNodeFabric::NVSWITCH, "nvswitch"},
    {IntraNodeFabric::NVLINK_MESH, "nvlink_mesh"},
    {IntraNodeFabric::PCIE_ONLY, "pcie_only"},
}};
constexpr std::array<std::pair<InterNodeTopology, std::string_view>, 3> TOPOLOGY_NAMES{{
    {InterNodeTopology::SINGLE_NODE, "single_node"},
    {InterNodeTopology::FAT_TREE, "fat_tree"},
    {InterNodeTopology::RAIL_OPTIMIZED, "rail_optimized"},
}};
constexpr std::array<std::pair<StorageKind, std::string_view>, 5> STORAGE_NAMES{{
    {StorageKind::NVME, "nvme"},
    {StorageKind::SATA_SSD, "sata_ssd"},
    {StorageKind::VIRTIO, "virtio"},
    {StorageKind::HDD, "hdd"},
    {StorageKind::NONE, "none"},
}};

constexpr std::array<std::pair<int, std::string_view>, 3> GPU_ARCH_NAMES{{
    {70, "sm70"},
    {80, "sm80"},
    {90, "sm90"},
}};
constexpr std::array<std::pair<NcclCpuVendor, std::string_view>, 3> CPU_VENDOR_NAMES{{
    {NcclCpuVendor::INTEL, "intel"},
    {NcclCpuVendor::AMD, "amd"},
    {NcclCpuVendor::OTHER, "other"},
}};

template <class Enum, std::size_t N>
std::string_view name_of(Enum value, const std::array<std::pair<Enum, std::string_view>, N>& names) {
  for (const auto& [v, n] : names) {
    if (v == value) return n;
  }
  return "?";
}

GpuSpec read_gpu(StrictObject o) {
  GpuSpec g;
  g.model = o.string("model");
  g.count_per_node = static_cast<int>(ranged_integer(o, "count_per_node"));
  g.memory_GiB = ranged_number(o, "memory_GiB");
  g.reserved_GiB = ranged_number(o, "reserved_GiB");
  if (g.reserved_GiB >= g.memory_GiB) {
    throw ConfigError(o.source(), o.path_of("reserved_GiB"), "less than gpu.memory_GiB",
                      std::to_string(g.reserved_GiB));
  }
  StrictObject peaks = o.object("peak_TFLOPs");
  for (const auto& [precision, name] : PRECISION_NAMES) {
    if (auto v = optional_ranged_number(peaks, name)) g.peak_TFLOPs[precision] = *v;
  }
  peaks.finish();
  if (g.peak_TFLOPs.empty()) {
    throw ConfigError(o.source(), o.path_of("peak_TFLOPs"), "at least one precision (fp32, tf32, fp16, bf16, fp8)",
                      "an empty object");
  }
  g.hbm_GBps = ranged_number(o, "hbm_GBps");
  g.source = o.string("source");
  o.finish();
  return g;
}

IntraNodeSpec read_intra_node(StrictObject o, int gpus_per_node) {
  IntraNodeSpec s;
  s.fabric = o.choice<IntraNodeFabric>("fabric", FABRIC_NAMES);
  // A single-GPU node has no GPU-GPU fabric; its bandwidth is then 0 by definition.
  s.link_GBps = gpus_per_node == 1 && o.has("link_GBps") && o.raw("link_GBps") == 0 ? 0.0 : ranged_number(o, "link_GBps");
  s.latency_us = ranged_number(o, "latency_us");
  s.source = o.string("source");
  o.finish();
  return s;
}

PcieSpec read_pcie(StrictObject o, int gpus_per_node) {
  PcieSpec p;
  p.link_GBps = ranged_number(o, "link_GBps");
  p.latency_us = ranged_number(o, "latency_us");
  p.gpus_per_switch = static_cast<int>(ranged_integer(o, "gpus_per_switch"));
  if (p.gpus_per_switch > gpus_per_node || gpus_per_node % p.gpus_per_switch != 0) {
    throw ConfigError(o.source(), o.path_of("gpus_per_switch"),
                      "a divisor of gpu.count_per_node (" + std::to_string(gpus_per_node) + ")",
                      std::to_string(p.gpus_per_switch));
  }
  p.switch_uplink_GBps = ranged_number(o, "switch_uplink_GBps");
  p.host_aggregate_GBps = ranged_number(o, "host_aggregate_GBps");
  p.source = o.string("source");
  o.finish();
  return p;
}

HostSpec read_host(StrictObject o) {
  HostSpec h;
  h.cpu = o.string("cpu");
  h.sockets = static_cast<int>(ranged_integer(o, "sockets"));
  h.cores = static_cast<int>(ranged_integer(o, "cores"));
  h.memory_GiB = ranged_number(o, "memory_GiB");
  h.memory_GBps = ranged_number(o, "memory_GBps");
  h.source = o.string("source");
  o.finish();
  return h;
}

StorageSpec read_storage(StrictObject o) {
  StorageSpec s;
  s.kind = o.choice<StorageKind>("kind", STORAGE_NAMES);
  if (s.kind == StorageKind::NONE) {
    // No storage: every figure is 0 by definition.
    for (const char* key : {"count", "capacity_TB", "read_GBps", "write_GBps"}) {
      o.number(key, NumberRange{0.0, 0.0, true, "0 when storage.kind is \"none\""});
    }
    for (const char* key : {"mixed_read_GBps", "mixed_write_GBps"}) {
      if (o.has(key)) throw ConfigError(o.source(), o.path_of(key), "no mixed figure when storage.kind is \"none\"", describe_json(o.raw(key)));
    }
  } else {
    s.count = static_cast<int>(ranged_integer(o, "count"));
    s.capacity_TB = ranged_number(o, "capacity_TB");
    s.read_GBps = ranged_number(o, "read_GBps");
    s.write_GBps = ranged_number(o, "write_GBps");
    const auto mixed_read = optional_ranged_number(o, "mixed_read_GBps");
    const auto mixed_write = optional_ranged_number(o, "mixed_write_GBps");
    if (mixed_read.has_value() != mixed_write.has_value()) {
      throw ConfigError(o.source(), o.path_of(mixed_read ? "mixed_write_GBps" : "mixed_read_GBps"),
                        "storage.mixed_read_GBps and storage.mixed_write_GBps together (both measured by one bench), or neither",
                        "only " + o.path_of(mixed_read ? "mixed_read_GBps" : "mixed_write_GBps"));
    }
    s.mixed_read_GBps = mixed_read.value_or(0.0);
    s.mixed_write_GBps = mixed_write.value_or(0.0);
  }
  s.source = o.string("source");
  o.finish();
  return s;
}

NicSpec read_nic(StrictObject o, bool single_node) {
  NicSpec n;
  // A single node needs no NIC: a count of 0 (and a rate of 0) is allowed there.
  n.count = single_node && o.has("count") && o.raw("count") == 0 ? 0 : static_cast<int>(ranged_integer(o, "count"));
  n.link_Gbps = n.count == 0 && o.has("link_Gbps") && o.raw("link_Gbps") == 0 ? 0.0 : ranged_number(o, "link_Gbps");
  n.latency_us = ranged_number(o, "latency_us");
  n.source = o.string("source");
  o.finish();
  return n;
}

InterNodeSpec read_inter_node(StrictObject o) {
  InterNodeSpec s;
  s.topology = o.choice<InterNodeTopology>("topology", TOPOLOGY_NAMES);
  s.oversubscription = ranged_number(o, "oversubscription");
  s.latency_us = ranged_number(o, "latency_us");
  s.source = o.string("source");
  o.finish();
  return s;
}

// "2.12" or "2.12.<patch>": the releases whose tuning tables sim/engine/nccl_tuning.cpp carries
// (NVIDIA/nccl v2.12.x src/graph/tuning.cc; 2.11 and earlier price a network step of the ring's
// Simple protocol at 9.6 us instead of 28, so they are refused rather than costed as 2.12).
bool supported_nccl_version(const std::string& v) {
  if (v == "2.12") return true;
  if (v.rfind("2.12.", 0) != 0 || v.size() == 5) return false;
  for (std::size_t i = 5; i < v.size(); ++i) {
    if (v[i] < '0' || v[i] > '9') return false;
  }
  return true;
}

NcclSpec read_nccl(StrictObject o) {
  NcclSpec n;
  n.version = o.string("version");
  if (!supported_nccl_version(n.version)) {
    throw ConfigError(o.source(), o.path_of("version"), "an NCCL release whose tuning model trainsim carries: \"2.12\" or \"2.12.<patch>\"",
                      "\"" + n.version + "\"");
  }
  n.gpu_sm = o.choice<int>("gpu_arch", GPU_ARCH_NAMES);
  n.cpu_vendor = o.choice<NcclCpuVendor>("cpu_vendor", CPU_VENDOR_NAMES);
  n.source = o.string("source");
  o.finish();
  return n;
}

CostSpec read_cost(StrictObject o) {
  CostSpec c;
  c.price_per_gpu_hour_usd = ranged_number(o, "price_per_gpu_hour_usd");
  c.power_per_node_kW = ranged_number(o, "power_per_node_kW");
  c.source = o.string("source");
  o.finish();
  return c;
}

std::vector<CurvePoint> read_points(StrictObject& o) {
  std::vector<CurvePoint> points;
  double previous = 0;
  for (StrictObject p : o.objects("points")) {
    CurvePoint point{ranged_number(p, "bytes"), ranged_number(p, "GBps")};
    if (point.bytes <= previous) {
      throw ConfigError(p.source(), p.path_of("bytes"), "sizes in strictly ascending order",
                        std::to_string(point.bytes));
    }
    previous = point.bytes;
    p.finish();
    points.push_back(point);
  }
  return points;
}

std::vector<BandwidthCurve> read_curves(StrictObject& o, std::string_view key, bool grouped) {
  std::vector<BandwidthCurve> curves;
  if (!o.has(key)) return curves;
  for (StrictObject c : o.objects(key)) {
    BandwidthCurve curve;
    curve.what = c.string("what");
    curve.group_size = grouped ? static_cast<int>(ranged_integer(c, "group_size")) : 1;
    curve.points = read_points(c);
    c.finish();
    curves.push_back(std::move(curve));
  }
  return curves;
}

std::vector<GemmEfficiency> read_gemm_entries(StrictObject& o, std::string_view key) {
  std::vector<GemmEfficiency> out;
  for (StrictObject g : o.objects(key)) {
    GemmEfficiency e;
    e.precision = g.choice<ComputePrecision>("precision", PRECISION_NAMES);
    e.m = ranged_number(g, "m");
    e.n = ranged_number(g, "n");
    e.k = ranged_number(g, "k");
    e.efficiency = ranged_number(g, "efficiency");
    g.finish();
    out.push_back(e);
  }
  return out;
}

Calibration read_calibration(StrictObject o) {
  Calibration cal;
  if (o.has("gemm")) cal.gemm = read_gemm_entries(o, "gemm");
  if (auto g = o.optional_object("gemm_in_step")) {
    cal.gemm_in_step = read_gemm_entries(*g, "products");
    cal.gemm_in_step_source = g->string("source");
    g->finish();
  }
  cal.collectives = read_curves(o, "collectives", true);
  cal.copies = read_curves(o, "copies", false);
  cal.kernels = read_curves(o, "kernels", false);
  cal.cpu_adam_params_per_s = optional_ranged_number(o, "cpu_adam_params_per_s");
  read_calibration_extras(o, cal);
  o.finish();
  return cal;
}

}  // namespace

std::string_view to_string(ComputePrecision p) { return name_of(p, PRECISION_NAMES); }
std::string_view to_string(IntraNodeFabric f) { return name_of(f, FABRIC_NAMES); }
std::string_view to_string(InterNodeTopology t) { return name_of(t, TOPOLOGY_NAMES); }
std::string_view to_string(StorageKind k) { return name_of(k, STORAGE_NAMES); }
std::string_view to_string(NcclCpuVendor v) { return name_of(v, CPU_VENDOR_NAMES); }
std::string_view gpu_arch_name(int sm) { return name_of(sm, GPU_ARCH_NAMES); }

double ClusterProfile::gpu_memory_bytes() const { return gpu.memory_GiB * 1073741824.0; }
double ClusterProfile::gpu_usable_bytes() const { return (gpu.memory_GiB - gpu.reserved_GiB) * 1073741824.0; }
double ClusterProfile::host_memory_bytes() const { return host.memory_GiB * 1073741824.0; }
double ClusterProfile::storage_capacity_bytes() const { return storage.count * storage.capacity_TB * 1e12; }

ClusterProfile load_profile(const JsonDocument& doc) {
  StrictObject root(doc.json, doc.source, "");
  const auto version = root.integer("schema_version", 1, 1000);
  if (version != PROFILE_SCHEMA_VERSION) {
    throw ConfigError(doc.source, "schema_version", "schema version " + std::to_string(PROFILE_SCHEMA_VERSION),
                      std::to_string(version));
  }
  ClusterProfile p;
  p.origin = doc.source;
  p.name = root.string("name");
  p.description = root.string("description");
  p.node_count = static_cast<int>(ranged_integer(root, "node_count"));
  p.gpu = read_gpu(root.object("gpu"));
  p.intra_node = read_intra_node(root.object("intra_node"), p.gpu.count_per_node);
  p.pcie = read_pcie(root.object("pcie"), p.gpu.count_per_node);
  p.host = read_host(root.object("host"));
  p.storage = read_storage(root.object("storage"));
  p.inter_node = read_inter_node(root.object("inter_node"));
  const bool single = p.inter_node.topology == InterNodeTopology::SINGLE_NODE;
  if (single && p.node_count != 1) {
    throw ConfigError(doc.source, "inter_node.topology", "\"fat_tree\" or \"rail_optimized\" when node_count > 1",
                      "\"single_node\"");
  }
  p.nic = read_nic(root.object("nic"), single);
  p.cost = read_cost(root.object("cost"));
  if (auto n = root.optional_object("nccl")) p.nccl = read_nccl(*n);
  if (auto cal = root.optional_object("calibration")) p.calibration = read_calibration(*cal);
  p.provenance = root.raw("provenance");
  if (!p.provenance.is_object()) {
    throw ConfigError(doc.source, "provenance", "an object (who compiled or measured the profile, when, how)",
                      describe_json(p.provenance));
  }
  root.finish();
  return p;
}

ClusterProfile load_profile_file(const std::string& path) { return load_profile(parse_json_file(path)); }

ClusterProfile builtin_profile(const std::string& name) {
  for (const auto& file : builtin_profile_files()) {
    if (file.name == name) {
      ClusterProfile p = load_profile(parse_json_text(file.text, "hwprofiles/" + name + ".json"));
      p.origin = "built-in";
      return p;
    }
  }
  std::vector<std::string_view> names;
  for (const auto& file : builtin_profile_files()) names.push_back(file.name);
  throw ConfigError("built-in profiles", name, "one of " + join_names(names) + " or a path to a profile .json",
                    "\"" + name + "\"" + did_you_mean(name, names));
}

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> names;
  for (const auto& file : builtin_profile_files()) names.emplace_back(file.name);
  return names;
}

ClusterProfile resolve_profile(const std::string& name_or_path, const std::string& flag) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 && name_or_path.ends_with(".json"));
  if (is_path) return load_profile_file(name_or_path);
  for (const auto& file : builtin_profile_files()) {
    if (file.name == name_or_path) return builtin_profile(name_or_path);
  }
  std::vector<std::string_view> names;
  for (const auto& file : builtin_profile_files()) names.push_back(file.name);
  throw ConfigError(flag, flag, "a built-in cluster (" + join_names(names) + ") or a path to a profile .json",
                    "\"" + name_or_path + "\"" + did_you_mean(name_or_path, names));
}

}  // namespace trainsim::hw
