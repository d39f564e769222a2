// The simulate result's one JSON encoding (simulator.hpp: to_json, sim_result_from_json): what a
// replay's child process sends back, what the results cache stores, and the `result` object of
// the CLI's JSON answers.
#include <nlohmann/json.hpp>

#include "simulator.hpp"

namespace trainsim::sim {

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
  j["peak_reserved_bytes"] = r.peak_reserved_bytes;
  j["host_peak_bytes"] = r.host_peak_bytes;
  j["storage_peak_bytes"] = r.storage_peak_bytes;
  j["per_gpu"] = nlohmann::ordered_json::array();
  for (const auto& g : r.per_gpu) {
    nlohmann::ordered_json at_peak = nlohmann::ordered_json::object();
    for (const auto& [cls, bytes] : g.at_peak) at_peak[cls] = bytes;
    j["per_gpu"].push_back({{"stage", g.stage},
                            {"copies", g.copies},
                            {"peak_memory_bytes", g.peak_memory_bytes},
                            {"peak_reserved_bytes", g.peak_reserved_bytes},
                            {"baseline_bytes", g.baseline_bytes},
                            {"at_peak", at_peak},
                            {"busy_s",
                             {{"compute", g.compute_s},
                              {"exposed_communication", g.exposed_communication_s},
                              {"exposed_offload_io", g.exposed_offload_io_s},
                              {"optimizer", g.optimizer_s},
                              {"idle", g.idle_s},
                              {"call_span_compute", g.call_span_compute_s},
                              {"call_span_optimizer", g.call_span_optimizer_s}}},
                            {"kernel_s",
                             {{"gemm", g.gemm_kernel_s},
                              {"attention", g.attention_kernel_s},
                              {"other", g.other_kernel_s},
                              {"optimizer", g.optimizer_kernel_s}}},
                            {"hardware_flops", g.hardware_flops}});
  }
  j["simulated_gpus"] = r.simulated_gpus;
  j["simulated_nodes"] = r.simulated_nodes;
  j["ops"] = r.ops;
  j["activities"] = r.activities;
  j["steps_simulated"] = r.steps_simulated;
  j["folding"] = r.folding;
  j["notes"] = r.notes;
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
  r.peak_reserved_bytes = j.at("peak_reserved_bytes").get<double>();
  r.host_peak_bytes = j.at("host_peak_bytes").get<double>();
  r.storage_peak_bytes = j.at("storage_peak_bytes").get<double>();
  for (const auto& g : j.at("per_gpu")) {
    GpuResult gr;
    gr.stage = g.at("stage").get<int>();
    gr.copies = g.at("copies").get<int>();
    gr.peak_memory_bytes = g.at("peak_memory_bytes").get<double>();
    gr.peak_reserved_bytes = g.at("peak_reserved_bytes").get<double>();
    gr.baseline_bytes = g.at("baseline_bytes").get<double>();
    for (const auto& [cls, bytes] : g.at("at_peak").items()) gr.at_peak.emplace_back(cls, bytes.get<double>());
    const auto& b = g.at("busy_s");
    gr.compute_s = b.at("compute").get<double>();
    gr.exposed_communication_s = b.at("exposed_communication").get<double>();
    gr.exposed_offload_io_s = b.at("exposed_offload_io").get<double>();
    gr.optimizer_s = b.at("optimizer").get<double>();
    gr.idle_s = b.at("idle").get<double>();
    gr.call_span_compute_s = b.at("call_span_compute").get<double>();
    gr.call_span_optimizer_s = b.at("call_span_optimizer").get<double>();
    const auto& k = g.at("kernel_s");
    gr.gemm_kernel_s = k.at("gemm").get<double>();
    gr.attention_kernel_s = k.at("attention").get<double>();
    gr.other_kernel_s = k.at("other").get<double>();
    gr.optimizer_kernel_s = k.at("optimizer").get<double>();
    gr.hardware_flops = g.at("hardware_flops").get<double>();
    r.per_gpu.push_back(gr);
  }
  r.simulated_gpus = j.at("simulated_gpus").get<int>();
  r.simulated_nodes = j.at("simulated_nodes").get<int>();
  r.ops = j.at("ops").get<std::size_t>();
  r.activities = j.at("activities").get<std::size_t>();
  r.steps_simulated = j.at("steps_simulated").get<int>();
  r.folding = j.at("folding").get<std::vector<std::string>>();
  r.notes = j.at("notes").get<std::vector<std::string>>();
  r.assumptions = j.at("assumptions").get<std::vector<std::string>>();
  return r;
}

}  // namespace trainsim::sim
