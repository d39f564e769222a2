#include "profile_writer.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "config_error.hpp"
#include "errors.hpp"
#include "profile_loader.hpp"
#include "reference_kernel_table.hpp"
#include "strict_json.hpp"

namespace trainsim::calibrate {
namespace {

constexpr double GiB = 1073741824.0;

std::string g4(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

double round2(double v) { return std::round(v * 100) / 100; }

// Measured figures are written with 4 significant digits: their run-to-run spread is larger than
// that, and the profile stays small enough to be compiled in as a built-in.
double sig4(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * scale) / scale;
}

bool is(const nlohmann::ordered_json& p, const char* key, double value) {
  const auto it = p.find(key);
  return it != p.end() && it->is_number() && it->get<double>() == value;
}

// A bandwidth curve from one series: x from `key`, value the median; ascending, one point per x.
hw::BandwidthCurve curve(const Results& r, const std::string& bench, const std::string& what, const std::string& name,
                         const char* key, const std::function<bool(const nlohmann::ordered_json&)>& keep) {
  std::map<double, double> points;
  for (const auto* m : r.select(bench, what)) {
    if (keep(m->params)) points.emplace(param_number(m->params, key), sig4(m->stats.median));
  }
  hw::BandwidthCurve c;
  c.what = name;
  for (const auto& [x, v] : points) c.points.push_back({x, v});
  return c;
}

const Measurement* best(const Results& r, const char* bench, const char* what) {
  const Measurement* b = nullptr;
  for (const auto* m : r.select(bench, what)) {
    if (b == nullptr || m->stats.median > b->stats.median) b = m;
  }
  return b;
}

hw::Calibration calibration(const ProfileInputs& in, std::vector<std::string>& notes) {
  const Results& r = in.results;
  hw::Calibration cal;
  const std::map<std::string, hw::ComputePrecision> precisions{{"bf16", hw::ComputePrecision::BF16},
                                                                {"fp16", hw::ComputePrecision::FP16},
                                                                {"tf32", hw::ComputePrecision::TF32},
                                                                {"fp32", hw::ComputePrecision::FP32}};
  for (const auto& [name, precision] : precisions) {
    const auto peak = in.base.gpu.peak_TFLOPs.find(precision);
    const auto ms = r.select("gemm", name);
    if (ms.empty()) continue;
    if (peak == in.base.gpu.peak_TFLOPs.end()) {
      notes.push_back("gemm " + name + ": no efficiency written, the base profile has no " + name + " peak");
      continue;
    }
    // One entry per (m, n, k): the first measured (the forward layout where layouts share a shape).
    std::set<std::tuple<double, double, double>> seen;
    int implausible = 0;
    for (const auto* m : ms) {
      const double mm = param_number(m->params, "m"), nn = param_number(m->params, "n"), kk = param_number(m->params, "k");
      if (!seen.insert({mm, nn, kk}).second) continue;
      const double efficiency = sig4(m->stats.median / peak->second);
      // Above 1.5x the base's peak the base must describe another GPU: such an entry would be
      // wrong (and the strict loader rejects it), so it is left out and said so.
      if (!(efficiency > 0 && efficiency <= 1.5)) {
        ++implausible;
        continue;
      }
      cal.gemm.push_back({precision, mm, nn, kk, efficiency});
    }
    if (implausible > 0) {
      notes.push_back("gemm " + name + ": " + std::to_string(implausible) + " entries left out, their efficiency against " +
                      "the base's peak of " + g4(peak->second) + " TFLOP/s is above 1.5 (does the base describe this GPU?)");
    }
  }
  std::set<std::pair<std::string, int>> groups;
  for (const auto& m : r.all()) {
    if (m.bench == "nccl") groups.insert({m.what, static_cast<int>(param_number(m.params, "group_size"))});
  }
  for (const auto& [what, g] : groups) {
    auto c = curve(r, "nccl", what, what, "bytes", [g = g](const auto& p) { return is(p, "group_size", g); });
    c.group_size = g;
    cal.collectives.push_back(std::move(c));
  }
  auto one_gpu = [](const auto& p) { return is(p, "gpus", 1); };
  auto any = [](const auto&) { return true; };
  for (const char* what : {"h2d_pinned", "d2h_pinned", "bidir_pinned", "h2d_pageable", "d2h_pageable", "bidir_pageable"}) {
    auto c = curve(r, "host_copy", what, what, "bytes", one_gpu);
    if (!c.points.empty()) cal.copies.push_back(std::move(c));
  }
  for (auto [bench, what, name] : {std::tuple{"kernels", "copy", "d2d"}, std::tuple{"p2p", "unidir", "p2p"},
                                   std::tuple{"p2p", "bidir", "p2p_bidir"}}) {
    auto c = curve(r, bench, what, name, "bytes", any);
    if (!c.points.empty()) cal.copies.push_back(std::move(c));
  }
  // Storage curves by request size, each at the queue depth that served it best.
  for (const char* op : {"read", "write"}) {
    std::map<double, double> by_block;
    for (const auto* m : r.select("storage", op)) {
      double& v = by_block[param_number(m->params, "block_bytes")];
      v = std::max(v, m->stats.median);
    }
    hw::BandwidthCurve c;
    c.what = std::string("storage_") + op;
    for (const auto& [b, v] : by_block) c.points.push_back({b, sig4(v)});
    if (!c.points.empty()) cal.copies.push_back(std::move(c));
  }
  if (auto c = curve(r, "storage_gpu", "storage_to_gpu", "storage_to_gpu", "block_bytes", any); !c.points.empty()) {
    cal.copies.push_back(std::move(c));
  }
  for (const char* what : {"copy", "layernorm", "gelu", "softmax"}) {
    auto c = curve(r, "kernels", what, what, "bytes", any);
    if (!c.points.empty()) cal.kernels.push_back(std::move(c));
  }
  // The reference's kernels: shapes of one class that move the same bytes (a transpose of 16
  // heads of 64 or 8 of 128) share a point, their median.
  for (std::string_view what : hw::REFERENCE_KERNEL_CLASSES) {
    std::map<double, std::vector<double>> by_bytes;
    for (const auto* m : r.select("reference_kernels", what)) {
      by_bytes[param_number(m->params, "bytes")].push_back(m->stats.median);
    }
    hw::BandwidthCurve c;
    c.what = what;
    for (auto& [b, v] : by_bytes) {
      std::sort(v.begin(), v.end());
      const std::size_t n = v.size();
      c.points.push_back({b, sig4(n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]))});
    }
    if (!c.points.empty()) cal.reference_kernels.push_back(std::move(c));
  }
  if (!cal.reference_kernels.empty()) {
    cal.reference_kernels_source =
        "trainsim-calibrate --only reference_kernels: the reference's own kernels (calibrate/cuda/ref_kernels.cu) timed "
        "with CUDA events, bytes per launch as workloads/stacks/reference_kernels.hpp counts them, median GB/s by size";
  }
  double params = 0, threads = 0;
  for (const auto* m : r.select("cpu_adam", "bf16")) {
    params = std::max(params, param_number(m->params, "params"));
    threads = std::max(threads, param_number(m->params, "threads"));
  }
  if (const auto* m = r.find("cpu_adam", "bf16", [&](const auto& p) { return is(p, "params", params) && is(p, "threads", threads); })) {
    cal.cpu_adam_params_per_s = sig4(m->stats.median);
  }
  // Interference: one point per measured cell, both directions (calibrate/cuda/interference_bench.cpp).
  const auto beside = r.select("interference", "collective_beside_gemm");
  const auto gemm_beside = r.select("interference", "gemm_beside_collective");
  if (!beside.empty()) {
    hw::Interference inter;
    for (const auto* m : beside) {
      const auto& p = m->params;
      const auto same = [&](const nlohmann::ordered_json& q) {
        for (const char* key : {"collective", "bytes", "gemm_m", "gemm_n", "gemm_k"}) {
          if (q.value(key, nlohmann::ordered_json()) != p.value(key, nlohmann::ordered_json())) return false;
        }
        return true;
      };
      const auto g = std::find_if(gemm_beside.begin(), gemm_beside.end(), [&](const auto* x) { return same(x->params); });
      if (g == gemm_beside.end()) continue;
      hw::InterferencePoint e;
      e.collective = p.value("collective", "");
      e.bytes = param_number(p, "bytes");
      e.gemm_m = param_number(p, "gemm_m");
      e.gemm_n = param_number(p, "gemm_n");
      e.gemm_k = param_number(p, "gemm_k");
      e.gemm_alone_us = sig4(param_number(p, "gemm_alone_s_median") * 1e6);
      e.collective_alone_us = sig4(param_number(p, "alone_s_median") * 1e6);
      // A median beside below alone is noise (nothing runs faster beside other work): kept at alone.
      e.collective_beside_us = std::max(e.collective_alone_us, sig4(m->stats.median * 1e6));
      e.compute_slowdown = std::max(1.0, sig4((*g)->stats.median));
      inter.points.push_back(e);
    }
    inter.source =
        "measured by trainsim-calibrate (interference part, calibrate/cuda/interference_bench.cpp): bf16 GEMMs "
        "(gemm_m x gemm_n x gemm_k) and NCCL collectives (all_reduce fp32, all_gather bf16, reduce_scatter fp32; bytes "
        "as nccl-tests' size) on all GPUs, the GEMMs on one stream and the collectives on another; "
        "collective_beside_us = a collective's time back to back while back-to-back GEMMs run, compute_slowdown = a "
        "GEMM's time while back-to-back collectives run over its time alone; the slowest GPU's median";
    if (!inter.points.empty()) cal.interference = std::move(inter);
  }
  const auto launch = r.select("host_dispatch", "kernel_launch");
  const auto gpu_kernel = r.select("host_dispatch", "gpu_kernel");
  if (!launch.empty() || !gpu_kernel.empty()) {
    hw::HostDispatch h;
    if (!launch.empty()) h.kernel_launch_us = sig4(launch.front()->stats.median);
    if (!gpu_kernel.empty()) h.gpu_kernel_us = sig4(gpu_kernel.front()->stats.median);
    h.source =
        "measured by trainsim-calibrate (host_dispatch part): kernel_launch_us = host time of one cudaLaunchKernel of "
        "an empty kernel, 2000 back to back; gpu_kernel_us = GPU time per empty kernel queued back to back behind a "
        "spinning one";
    cal.host_dispatch = h;
  }
  return cal;
}

}  // namespace

std::string gpu_family(const std::string& model) {
  for (std::size_t i = 0; i + 4 <= model.size(); ++i) {
    const bool letter = model[i] >= 'A' && model[i] <= 'Z' && (i == 0 || !std::isalnum(static_cast<unsigned char>(model[i - 1])));
    if (letter && std::isdigit(static_cast<unsigned char>(model[i + 1])) && std::isdigit(static_cast<unsigned char>(model[i + 2])) &&
        std::isdigit(static_cast<unsigned char>(model[i + 3])) &&
        (i + 4 == model.size() || !std::isalnum(static_cast<unsigned char>(model[i + 4])))) {
      return model.substr(i, 4);
    }
  }
  return "";
}

hw::ClusterProfile build_profile(const ProfileInputs& in) {
  const Results& r = in.results;
  const hw::ClusterProfile& base = in.base;
  const std::string where = "measured by trainsim-calibrate on " + in.host.hostname + " " + in.host.date_day;
  const std::string from_base = "copied from base profile " + in.base_name;
  hw::ClusterProfile p;
  p.name = in.options.name;
  p.node_count = 1;
  std::vector<std::string> notes;
  p.calibration = calibration(in, notes);

  // GPU: what CUDA reports is measured; peaks are datasheet figures from the base.
  p.gpu = base.gpu;
  const bool gpu = in.gpu.available && !in.gpu.devices.empty();
  if (gpu) {
    p.gpu.model = in.gpu.devices.front().name;
    p.gpu.count_per_node = static_cast<int>(in.gpu.devices.size());
    p.gpu.memory_GiB = round2(in.gpu.devices.front().memory_GiB);
    if (p.gpu.reserved_GiB >= p.gpu.memory_GiB) p.gpu.reserved_GiB = round2(in.gpu.context_GiB);
  }
  const Measurement* copy = r.find("kernels", "copy", [](const auto& q) { return is(q, "bytes", GiB); });
  if (gpu) {
    p.gpu.source = "model, count_per_node and memory_GiB " + where + " (cudaGetDeviceProperties); peak_TFLOPs, hbm_GBps " +
                   "and reserved_GiB " + from_base + " (datasheet peaks; a fresh CUDA context held " +
                   g4(in.gpu.context_GiB) + " GiB here)" +
                   (copy ? "; measured device copy of 1 GiB: " + g4(copy->stats.median) +
                               " GB/s read + written (calibration.kernels copy)"
                         : "") +
                   ". Base source: " + base.gpu.source;
    if (gpu_family(p.gpu.model) != gpu_family(base.gpu.model)) {
      p.gpu.source += " CAUTION: the base describes " + base.gpu.model + ", not the " + p.gpu.model +
                      " measured here; its datasheet figures may not apply to this GPU.";
    }
  } else {
    p.gpu.source = from_base + " (no GPU measured in this run). Base source: " + base.gpu.source;
  }

  // Intra-node fabric: NVML says what the links reach, a peer copy says how fast.
  p.intra_node = base.intra_node;
  const Measurement* p2p = nullptr;
  for (const auto* m : r.select("p2p", "unidir")) {
    if (p2p == nullptr || param_number(m->params, "bytes") > param_number(p2p->params, "bytes")) p2p = m;
  }
  const Measurement* p2p_lat = r.find("p2p", "latency", [](const auto&) { return true; });
  if (gpu && p.gpu.count_per_node == 1) {
    p.intra_node.link_GBps = 0;
    p.intra_node.latency_us = 0;
    p.intra_node.source = "one GPU: no GPU-to-GPU fabric to measure; fabric " + from_base;
  } else if (p2p != nullptr) {
    if (in.gpu.nvlink_remote == "switch") p.intra_node.fabric = hw::IntraNodeFabric::NVSWITCH;
    if (in.gpu.nvlink_remote == "gpu") p.intra_node.fabric = hw::IntraNodeFabric::NVLINK_MESH;
    if (in.gpu.nvlink_remote == "none") p.intra_node.fabric = hw::IntraNodeFabric::PCIE_ONLY;
    p.intra_node.link_GBps = sig4(p2p->stats.median);
    if (p2p_lat) p.intra_node.latency_us = sig4(p2p_lat->stats.median);
    p.intra_node.source = "link_GBps " + where + ": GPU 0 -> GPU 1 cudaMemcpyPeerAsync of " +
                          g4(param_number(p2p->params, "bytes") / GiB) + " GiB (one direction)" +
                          (p2p_lat ? "; latency_us: 8-byte peer copy + synchronize as seen by the host" : "") +
                          "; fabric from NVML: " + std::to_string(in.gpu.nvlinks_per_gpu) + " active NVLinks reaching '" +
                          in.gpu.nvlink_remote + "'" + (in.gpu.nvlink_remote == "unknown" ? " (fabric " + from_base + ")" : "");
  } else {
    p.intra_node.source = from_base + " (not measured in this run). Base source: " + base.intra_node.source;
  }

  // PCIe: one GPU's pinned copies, then all GPUs at once to see whether they share an uplink.
  p.pcie = base.pcie;
  auto copy_at = [&](const char* what, int gpus) {
    return r.find("host_copy", what, [gpus](const auto& q) { return is(q, "bytes", GiB) && is(q, "gpus", gpus); });
  };
  const Measurement* h2d = copy_at("h2d_pinned", 1);
  const Measurement* d2h = copy_at("d2h_pinned", 1);
  const int n = p.gpu.count_per_node;
  if (gpu && h2d && d2h) {
    const Measurement* all = copy_at("h2d_pinned", n);
    const Measurement* lat = r.find("host_copy", "latency_h2d_pinned", [](const auto&) { return true; });
    p.pcie.link_GBps = sig4(std::min(h2d->stats.median, d2h->stats.median));
    if (lat) p.pcie.latency_us = sig4(lat->stats.median);
    p.pcie.host_aggregate_GBps = all ? sig4(all->stats.median) : p.pcie.link_GBps;
    // Concurrent copies that gain less than half a link per extra GPU share one uplink.
    const bool shared = n > 1 && all && all->stats.median < p.pcie.link_GBps * (1 + 0.5 * (n - 1));
    p.pcie.gpus_per_switch = shared ? n : 1;
    p.pcie.switch_uplink_GBps = shared ? sig4(all->stats.median) : p.pcie.link_GBps;
    p.pcie.source = "link_GBps " + where + ": the lower of pinned host-to-device (" + g4(h2d->stats.median) +
                    ") and device-to-host (" + g4(d2h->stats.median) + ") GB/s for 1 GiB on one GPU; host_aggregate_GBps: " +
                    "pinned host-to-device on all " + std::to_string(n) + " GPUs at once; gpus_per_switch and " +
                    "switch_uplink_GBps inferred from that aggregate (" + (shared ? "shared" : "not shared") +
                    "); latency_us: 8-byte pinned copy + synchronize as seen by the host";
  } else {
    if (n % p.pcie.gpus_per_switch != 0) p.pcie.gpus_per_switch = 1;
    p.pcie.source = from_base + " (not measured in this run). Base source: " + base.pcie.source;
  }

  // Host: the operating system's view, plus the measured copy bandwidth.
  p.host = base.host;
  // Facts /proc did not give (an empty model, zero cores) stay the base's rather than break the profile.
  if (!in.host.cpu_model.empty()) p.host.cpu = in.host.cpu_model;
  if (in.host.sockets >= 1) p.host.sockets = in.host.sockets;
  if (in.host.physical_cores >= 1) p.host.cores = in.host.physical_cores;
  if (in.host.memory_GiB > 0) p.host.memory_GiB = round2(in.host.memory_GiB);
  const Measurement* mem = r.find("host_memory", "copy", [](const auto&) { return true; });
  if (mem) p.host.memory_GBps = sig4(mem->stats.median);
  p.host.source = "cpu, sockets, cores (distinct physical cores) and memory_GiB (MemTotal) " + where + " from /proc; " +
                  (mem ? "memory_GBps: parallel memcpy of 1 GiB on " + g4(param_number(mem->params, "threads")) +
                             " threads, bytes read + written"
                       : "memory_GBps " + from_base);

  // Storage: the device holding --storage-dir.
  p.storage = base.storage;
  const Measurement* rd = best(r, "storage", "read_confirm");
  const Measurement* wr = best(r, "storage", "write_confirm");
  if (rd == nullptr) rd = best(r, "storage", "read");
  if (wr == nullptr) wr = best(r, "storage", "write");
  if (rd && wr && in.storage) {
    std::string kind = in.options.storage_kind.value_or(in.storage->kind);
    const std::map<std::string, hw::StorageKind> kinds{{"nvme", hw::StorageKind::NVME}, {"virtio", hw::StorageKind::VIRTIO},
                                                        {"sata_ssd", hw::StorageKind::SATA_SSD}, {"hdd", hw::StorageKind::HDD}};
    const bool known = kinds.contains(kind);
    if (known) p.storage.kind = kinds.at(kind);
    p.storage.count = 1;
    p.storage.capacity_TB = std::max(0.001, std::round(in.storage->capacity_TB * 1000) / 1000);
    p.storage.read_GBps = sig4(rd->stats.median);
    p.storage.write_GBps = sig4(wr->stats.median);
    p.storage.source = "read_GBps and write_GBps " + where + ": O_DIRECT sequential, best block size and queue depth of the sweep, re-measured with fresh samples (read " +
                       g4(param_number(rd->params, "block_bytes") / 1024) + " KiB x " + g4(param_number(rd->params, "depth")) +
                       ", write " + g4(param_number(wr->params, "block_bytes") / 1024) + " KiB x " +
                       g4(param_number(wr->params, "depth")) + ", write timing includes fdatasync) on the " +
                       in.storage->filesystem + " filesystem of /dev/" + in.storage->device + "; kind " +
                       (in.options.storage_kind ? "given with --storage-kind" : known ? "detected from /sys/block" : from_base + " (not detected)") +
                       "; count 1 and capacity_TB (that filesystem's size) describe only that device";
    // Reads and writes in flight together (storage_mixed): the record with the highest combined rate
    // over its stream counts, a ceiling the replay applies while reads and writes overlap, so the
    // highest the device reached is the one that does not slow the replay below what was measured.
    p.storage.mixed_read_GBps = p.storage.mixed_write_GBps = 0;  // the base's were another device's
    if (const Measurement* mixed = best(r, "storage_mixed", "combined")) {
      const auto same = [&](const char* what) {
        return r.find("storage_mixed", what, [&](const nlohmann::ordered_json& q) { return q == mixed->params; });
      };
      const Measurement* mr = same("read");
      const Measurement* mw = same("write");
      if (mr != nullptr && mw != nullptr) {
        p.storage.mixed_read_GBps = sig4(mr->stats.median);
        p.storage.mixed_write_GBps = sig4(mw->stats.median);
        p.storage.source += "; mixed_read_GBps and mixed_write_GBps: reads and writes in flight together (storage_mixed: " +
                            g4(param_number(mixed->params, "streams")) + " stream(s), each one " +
                            g4(param_number(mixed->params, "chunk_bytes") / 1048576) + " MiB chunk read and one written at once in " +
                            g4(param_number(mixed->params, "request_bytes") / 1048576) +
                            " MiB O_DIRECT requests, fdatasync inside the timing; medians, the best combined rate)";
      }
    }
  } else {
    p.storage.source = from_base + " (not measured in this run). Base source: " + base.storage.source;
  }

  p.nic = {0, 0, 0, "single-node calibration: no NICs measured or modelled (node_count 1)"};
  p.inter_node = {hw::InterNodeTopology::SINGLE_NODE, 1.0, 0.0, "single node: no inter-node fabric"};
  p.cost = base.cost;
  p.cost.source = from_base + " (a benchmark cannot measure price or power; the base describes its own node). Base source: " +
                  base.cost.source;
  p.description = "Measured by trainsim-calibrate on " + in.host.hostname + " (" + in.host.date_day + "): " +
                  (gpu ? std::to_string(n) + " x " + p.gpu.model + ", " : "") + in.host.cpu_model + "; one node.";
  p.provenance = in.provenance;
  for (const auto& note : notes) p.provenance["notes"].push_back(note);
  return p;
}

namespace {
// Indented JSON, except that an object or array whose one-line form fits in 110 characters
// stays on one line: one calibration point or GEMM entry per line instead of seven.
void pretty(const nlohmann::ordered_json& j, int indent, std::string& out) {
  const std::string flat = j.dump();
  if (!j.is_structured() || j.empty() || flat.size() + static_cast<std::size_t>(indent) <= 110) {
    out += flat;
    return;
  }
  const std::string pad(static_cast<std::size_t>(indent) + 2, ' ');
  out += j.is_object() ? "{\n" : "[\n";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!first) out += ",\n";
    first = false;
    out += pad;
    if (j.is_object()) out += nlohmann::ordered_json(it.key()).dump() + ": ";
    pretty(*it, indent + 2, out);
  }
  out += "\n" + std::string(static_cast<std::size_t>(indent), ' ') + (j.is_object() ? "}" : "]");
}
}  // namespace

hw::ClusterProfile with_framework_sections(const hw::ClusterProfile& profile, const nlohmann::ordered_json& sections) {
  nlohmann::ordered_json j = hw::profile_to_json(profile);
  nlohmann::ordered_json& cal = j["calibration"];
  if (!sections.is_object() || !sections.contains("calibration") || !sections["calibration"].is_object()) {
    throw CalibrationError("the framework driver's sections have no \"calibration\" object");
  }
  for (const auto& [key, value] : sections["calibration"].items()) {
    if (key == "kernels") {
      for (const auto& curve : value) cal["kernels"].push_back(curve);
    } else if (key == "host_dispatch" && cal.contains("host_dispatch")) {
      nlohmann::ordered_json& hd = cal["host_dispatch"];
      for (const auto& [k, v] : value.items()) {
        if (k == "source") {
          hd["source"] = hd.value("source", std::string()) + (hd.contains("source") ? "; " : "") + v.get<std::string>();
        } else {
          hd[k] = v;
        }
      }
    } else {
      cal[key] = value;
    }
  }
  if (sections.contains("notes")) {
    for (const auto& n : sections["notes"]) j["provenance"]["notes"].push_back(n);
  }
  try {
    return hw::load_profile(parse_json_text(j.dump(), "profile " + profile.name + " with the framework sections"));
  } catch (const ConfigError& e) {
    throw UnloadableProfileError(std::string("the framework sections do not load in the profile: ") + e.what());
  }
}

std::string profile_text(const hw::ClusterProfile& profile) {
  std::string text;
  pretty(hw::profile_to_json(profile), 0, text);
  text += "\n";
  try {
    hw::load_profile(parse_json_text(text, "written profile " + profile.name));
  } catch (const ConfigError& e) {
    throw UnloadableProfileError(std::string("the written profile does not load back through the strict loader: ") + e.what());
  }
  return text;
}

}  // namespace trainsim::calibrate
