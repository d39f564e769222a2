#include "simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "cost_model.hpp"
#include "data_parallel_lowering.hpp"
#include "engine.hpp"
#include "isolation.hpp"
#include "layer_costs.hpp"
#include "memory_timeline.hpp"
#include "metrics.hpp"
#include "platform.hpp"
#include "trace_writer.hpp"

namespace trainsim::sim {
namespace {

double latest_end(const ReplayResult& replay, const std::vector<OpId>& ops) {
  double t = 0;
  for (OpId id : ops) {
    if (id != GraphBuilder::NONE) t = std::max(t, replay.timing[id].end);
  }
  return t;
}

// Runs inside the isolated child: everything that touches SimGrid.
SimResult run_replay(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                     const wl::MemoryEstimate& memory, const SimOptions& options) {
  SimResult r;
  const CostModel costs(profile, m.numerics);
  LoweredGraph lowered = lower_data_parallel(m, s, profile, costs, memory);
  const int gpus = lowered.topology.local_gpus;
  Platform platform(profile, {gpus, lowered.topology.dp_crosses_nodes}, lowered.topology.rings);
  const ReplayResult replay = sim::replay(lowered.graph, platform, lowered.caps);

  // The step: the whole replay, or with the delayed update the steady state between the ends of
  // the first and the last simulated steps.
  double from = 0, to = replay.makespan;
  int steps = 1;
  if (lowered.steps > 1) {
    from = latest_end(replay, lowered.step_ends.front());
    to = latest_end(replay, lowered.step_ends.back());
    steps = lowered.steps - 1;
  }
  r.simulated = true;
  r.steps_simulated = lowered.steps;
  r.step_time_s = (to - from) / steps;
  r.simulated_gpus = gpus;
  r.ops = boost::num_vertices(lowered.graph);
  r.activities = replay.activities;

  const MemoryTimeline timeline = build_memory_timeline(lowered.graph, replay, gpus, lowered.gpu_baseline_bytes,
                                                        lowered.host_baseline_bytes, lowered.storage_baseline_bytes);
  const std::vector<GpuBusy> busy = gpu_busy(lowered.graph, replay, gpus, from, to, lowered.steps > 1 ? 1 : 0);
  double idle = 0, hardware = 0;
  for (int g = 0; g < gpus; ++g) {
    const GpuBusy& b = busy[static_cast<std::size_t>(g)];
    GpuResult gr;
    const DeviceMemory& dm = timeline.gpus[static_cast<std::size_t>(g)];
    gr.peak_memory_bytes = dm.peak_bytes;
    gr.baseline_bytes = dm.baseline_bytes;
    for (int c = 0; c < MEM_CLASSES; ++c) {
      if (dm.at_peak[static_cast<std::size_t>(c)] != 0) {
        gr.at_peak.emplace_back(std::string(to_string(static_cast<MemClass>(c))), dm.at_peak[static_cast<std::size_t>(c)]);
      }
    }
    gr.compute_s = b.compute_s / steps;
    gr.exposed_communication_s = b.exposed_communication_s / steps;
    gr.exposed_offload_io_s = b.exposed_offload_io_s / steps;
    gr.optimizer_s = b.optimizer_s / steps;
    gr.idle_s = b.idle_s / steps;
    gr.hardware_flops = b.hardware_flops / steps;
    r.peak_memory_bytes = std::max(r.peak_memory_bytes, gr.peak_memory_bytes);
    idle += gr.idle_s;
    hardware += gr.hardware_flops;
    r.per_gpu.push_back(gr);
  }
  r.host_peak_bytes = timeline.host.peak_bytes;
  r.storage_peak_bytes = timeline.storage.peak_bytes;
  r.bubble_fraction = r.step_time_s > 0 ? idle / gpus / r.step_time_s : 0;
  r.model_flops_per_step = wl::model_flops_per_step(m, s);
  r.tflops_per_gpu = r.model_flops_per_step / r.step_time_s / s.gpus / 1e12;
  r.hardware_tflops_per_gpu = hardware / gpus / r.step_time_s / 1e12;
  r.tokens_per_s = static_cast<double>(s.global_batch * s.seq) / r.step_time_s;
  r.samples_per_s = static_cast<double>(s.global_batch) / r.step_time_s;
  r.assumptions = costs.assumptions();
  if (lowered.topology.dp_crosses_nodes) {
    r.assumptions.push_back(fmt::format(
        "one node of {} simulated in full; the other {} nodes by symmetry (identical ranks, symmetric fabric)",
        profile.name, s.nodes - 1));
  }
  if (options.trace) {
    const std::string title = fmt::format("trainsim: {} on {} x {}", m.name, s.nodes, profile.name);
    r.trace = chrome_trace(lowered.graph, replay, timeline, gpus, title);
  }
  return r;
}

}  // namespace

double estimated_replay_ops(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile) {
  // Per GPU of the simulated node, micro-batch and unit (layer or ZeRO-3 gather unit): forward,
  // recompute and backward with their fetches, gathers and copies: at most 16 ops (the 1T
  // ZeRO-Infinity step on a DGX-2 has 12); plus two steps more for the delayed update.
  const double gpus = std::min(s.gpus, profile.gpus_per_node());
  const double units = (s.zero_stage == 3 ? 4.0 : 1.0) * static_cast<double>(m.layers) + 2;
  const double steps = s.delayed_update ? 3 : 1;
  return 16.0 * gpus * units * static_cast<double>(s.micro_batches()) * steps;
}

SimResult simulate(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                   const wl::MemoryEstimate& memory, const SimOptions& options) {
  // The child sends the result's JSON, then the trace (empty when none was asked for).
  std::vector<std::string> parts = run_isolated_parts([&] {
    SimResult r = run_replay(m, s, profile, memory, options);
    return std::vector<std::string>{to_json(r).dump(), std::move(r.trace)};
  });
  if (parts.size() != 2) throw std::runtime_error("simulation: the simulator process returned an unexpected answer");
  SimResult r = sim_result_from_json(nlohmann::json::parse(parts[0]));
  r.trace = std::move(parts[1]);
  return r;
}

nlohmann::ordered_json to_json(const SimResult& r) {
  nlohmann::ordered_json j;
  j["fits"] = r.fits;
  j["infeasible_reason"] = r.infeasible_reason ? nlohmann::ordered_json(*r.infeasible_reason) : nlohmann::ordered_json();
  j["simulated"] = r.simulated;
  j["step_time_s"] = r.step_time_s;
  j["model_flops_per_step"] = r.model_flops_per_step;
  j["tflops_per_gpu"] = r.tflops_per_gpu;
  j["hardware_tflops_per_gpu"] = r.hardware_tflops_per_gpu;
  j["tokens_per_s"] = r.tokens_per_s;
  j["samples_per_s"] = r.samples_per_s;
  j["bubble_fraction"] = r.bubble_fraction;
  j["peak_memory_bytes"] = r.peak_memory_bytes;
  j["host_peak_bytes"] = r.host_peak_bytes;
  j["storage_peak_bytes"] = r.storage_peak_bytes;
  j["per_gpu"] = nlohmann::ordered_json::array();
  for (const auto& g : r.per_gpu) {
    nlohmann::ordered_json at_peak;
    for (const auto& [cls, bytes] : g.at_peak) at_peak[cls] = bytes;
    j["per_gpu"].push_back({{"peak_memory_bytes", g.peak_memory_bytes},
                            {"baseline_bytes", g.baseline_bytes},
                            {"at_peak", at_peak},
                            {"busy_s",
                             {{"compute", g.compute_s},
                              {"exposed_communication", g.exposed_communication_s},
                              {"exposed_offload_io", g.exposed_offload_io_s},
                              {"optimizer", g.optimizer_s},
                              {"idle", g.idle_s}}},
                            {"hardware_flops", g.hardware_flops}});
  }
  j["simulated_gpus"] = r.simulated_gpus;
  j["ops"] = r.ops;
  j["activities"] = r.activities;
  j["steps_simulated"] = r.steps_simulated;
  j["assumptions"] = r.assumptions;
  return j;
}

SimResult sim_result_from_json(const nlohmann::json& j) {
  SimResult r;
  r.fits = j.at("fits").get<bool>();
  if (!j.at("infeasible_reason").is_null()) r.infeasible_reason = j.at("infeasible_reason").get<std::string>();
  r.simulated = j.at("simulated").get<bool>();
  r.step_time_s = j.at("step_time_s").get<double>();
  r.model_flops_per_step = j.at("model_flops_per_step").get<double>();
  r.tflops_per_gpu = j.at("tflops_per_gpu").get<double>();
  r.hardware_tflops_per_gpu = j.at("hardware_tflops_per_gpu").get<double>();
  r.tokens_per_s = j.at("tokens_per_s").get<double>();
  r.samples_per_s = j.at("samples_per_s").get<double>();
  r.bubble_fraction = j.at("bubble_fraction").get<double>();
  r.peak_memory_bytes = j.at("peak_memory_bytes").get<double>();
  r.host_peak_bytes = j.at("host_peak_bytes").get<double>();
  r.storage_peak_bytes = j.at("storage_peak_bytes").get<double>();
  for (const auto& g : j.at("per_gpu")) {
    GpuResult gr;
    gr.peak_memory_bytes = g.at("peak_memory_bytes").get<double>();
    gr.baseline_bytes = g.at("baseline_bytes").get<double>();
    for (const auto& [cls, bytes] : g.at("at_peak").items()) gr.at_peak.emplace_back(cls, bytes.get<double>());
    const auto& b = g.at("busy_s");
    gr.compute_s = b.at("compute").get<double>();
    gr.exposed_communication_s = b.at("exposed_communication").get<double>();
    gr.exposed_offload_io_s = b.at("exposed_offload_io").get<double>();
    gr.optimizer_s = b.at("optimizer").get<double>();
    gr.idle_s = b.at("idle").get<double>();
    gr.hardware_flops = g.at("hardware_flops").get<double>();
    r.per_gpu.push_back(gr);
  }
  r.simulated_gpus = j.at("simulated_gpus").get<int>();
  r.ops = j.at("ops").get<std::size_t>();
  r.activities = j.at("activities").get<std::size_t>();
  r.steps_simulated = j.at("steps_simulated").get<int>();
  r.assumptions = j.at("assumptions").get<std::vector<std::string>>();
  return r;
}

}  // namespace trainsim::sim
