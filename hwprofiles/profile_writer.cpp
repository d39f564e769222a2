#include "profile_loader.hpp"

#include <nlohmann/json.hpp>

#include "calibration_extras.hpp"

// A profile in its JSON form (hwprofiles/README.md), the loader's inverse: a profile written here
// and read back is the same profile (tests/hwprofiles/profile_loader_test.cpp).
namespace trainsim::hw {

namespace {
nlohmann::ordered_json gemm_entries_to_json(const std::vector<GemmEfficiency>& entries) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const auto& g : entries) {
    a.push_back({{"precision", to_string(g.precision)}, {"m", g.m}, {"n", g.n}, {"k", g.k}, {"efficiency", g.efficiency}});
  }
  return a;
}

nlohmann::ordered_json curves_to_json(const std::vector<BandwidthCurve>& curves, bool grouped) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& c : curves) {
    nlohmann::ordered_json jc;
    jc["what"] = c.what;
    if (grouped) jc["group_size"] = c.group_size;
    jc["points"] = nlohmann::ordered_json::array();
    for (const auto& p : c.points) jc["points"].push_back({{"bytes", p.bytes}, {"GBps", p.value}});
    out.push_back(jc);
  }
  return out;
}
}  // namespace

nlohmann::ordered_json profile_to_json(const ClusterProfile& p) {
  nlohmann::ordered_json j;
  j["schema_version"] = PROFILE_SCHEMA_VERSION;
  j["name"] = p.name;
  j["description"] = p.description;
  j["node_count"] = p.node_count;
  nlohmann::ordered_json peaks;
  for (const auto& [precision, tflops] : p.gpu.peak_TFLOPs) peaks[std::string(to_string(precision))] = tflops;
  j["gpu"] = {{"model", p.gpu.model},       {"count_per_node", p.gpu.count_per_node},
              {"memory_GiB", p.gpu.memory_GiB}, {"reserved_GiB", p.gpu.reserved_GiB},
              {"peak_TFLOPs", peaks},       {"hbm_GBps", p.gpu.hbm_GBps},
              {"source", p.gpu.source}};
  j["intra_node"] = {{"fabric", to_string(p.intra_node.fabric)},
                     {"link_GBps", p.intra_node.link_GBps},
                     {"latency_us", p.intra_node.latency_us},
                     {"source", p.intra_node.source}};
  j["pcie"] = {{"link_GBps", p.pcie.link_GBps},
               {"latency_us", p.pcie.latency_us},
               {"gpus_per_switch", p.pcie.gpus_per_switch},
               {"switch_uplink_GBps", p.pcie.switch_uplink_GBps},
               {"host_aggregate_GBps", p.pcie.host_aggregate_GBps},
               {"source", p.pcie.source}};
  j["host"] = {{"cpu", p.host.cpu},           {"sockets", p.host.sockets},
               {"cores", p.host.cores},       {"memory_GiB", p.host.memory_GiB},
               {"memory_GBps", p.host.memory_GBps}, {"source", p.host.source}};
  j["storage"] = {{"kind", to_string(p.storage.kind)}, {"count", p.storage.count},
                  {"capacity_TB", p.storage.capacity_TB}, {"read_GBps", p.storage.read_GBps},
                  {"write_GBps", p.storage.write_GBps}};
  if (p.storage.mixed_read_GBps > 0) {
    j["storage"]["mixed_read_GBps"] = p.storage.mixed_read_GBps;
    j["storage"]["mixed_write_GBps"] = p.storage.mixed_write_GBps;
  }
  j["storage"]["source"] = p.storage.source;
  j["inter_node"] = {{"topology", to_string(p.inter_node.topology)},
                     {"oversubscription", p.inter_node.oversubscription},
                     {"latency_us", p.inter_node.latency_us},
                     {"source", p.inter_node.source}};
  j["nic"] = {{"count", p.nic.count},
              {"link_Gbps", p.nic.link_Gbps},
              {"latency_us", p.nic.latency_us},
              {"source", p.nic.source}};
  if (p.nccl) {
    j["nccl"] = {{"version", p.nccl->version},
                 {"gpu_arch", std::string(gpu_arch_name(p.nccl->gpu_sm))},
                 {"cpu_vendor", std::string(to_string(p.nccl->cpu_vendor))},
                 {"source", p.nccl->source}};
  }
  j["cost"] = {{"price_per_gpu_hour_usd", p.cost.price_per_gpu_hour_usd},
               {"power_per_node_kW", p.cost.power_per_node_kW},
               {"source", p.cost.source}};
  if (!p.calibration.empty()) {
    nlohmann::ordered_json cal;
    if (!p.calibration.gemm.empty()) cal["gemm"] = gemm_entries_to_json(p.calibration.gemm);
    if (!p.calibration.gemm_in_step.empty()) {
      cal["gemm_in_step"] = {{"products", gemm_entries_to_json(p.calibration.gemm_in_step)},
                             {"source", p.calibration.gemm_in_step_source}};
    }
    if (!p.calibration.collectives.empty()) cal["collectives"] = curves_to_json(p.calibration.collectives, true);
    if (!p.calibration.copies.empty()) cal["copies"] = curves_to_json(p.calibration.copies, false);
    if (!p.calibration.kernels.empty()) cal["kernels"] = curves_to_json(p.calibration.kernels, false);
    if (p.calibration.cpu_adam_params_per_s) cal["cpu_adam_params_per_s"] = *p.calibration.cpu_adam_params_per_s;
    calibration_extras_to_json(p.calibration, cal);
    j["calibration"] = cal;
  }
  j["provenance"] = p.provenance;
  return j;
}

}  // namespace trainsim::hw
