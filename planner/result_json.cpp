#include "result_json.hpp"

#include <cmath>

namespace trainsim::planner {
namespace {

// Whole byte counts as integers (they are, almost always), anything else as the double itself.
nlohmann::ordered_json exact_bytes(double bytes) {
  if (std::floor(bytes) == bytes && std::fabs(bytes) < 9007199254740992.0) return static_cast<std::int64_t>(bytes);
  return bytes;
}

double number(const nlohmann::json& j, const char* key) {
  const auto& v = j.at(key);
  return v.is_null() ? 0.0 : v.get<double>();
}

}  // namespace

nlohmann::ordered_json result_json(const sim::SimResult& r) {
  nlohmann::ordered_json j;
  auto number_or_null = [&](double v) { return r.simulated ? nlohmann::ordered_json(v) : nlohmann::ordered_json(); };
  auto bytes_or_null = [&](double v) { return r.simulated ? exact_bytes(v) : nlohmann::ordered_json(); };
  j["step_time_s"] = number_or_null(r.step_time_s);
  j["tflops_per_gpu"] = number_or_null(r.tflops_per_gpu);
  j["hardware_tflops_per_gpu"] = number_or_null(r.hardware_tflops_per_gpu);
  j["tokens_per_s"] = number_or_null(r.tokens_per_s);
  j["samples_per_s"] = number_or_null(r.samples_per_s);
  j["bubble_fraction"] = number_or_null(r.bubble_fraction);
  j["peak_memory_bytes"] = bytes_or_null(r.peak_memory_bytes);
  j["peak_reserved_bytes"] = bytes_or_null(r.peak_reserved_bytes);
  j["per_gpu"] = nlohmann::ordered_json::array();
  for (std::size_t g = 0; g < r.per_gpu.size(); ++g) {
    const auto& x = r.per_gpu[g];
    nlohmann::ordered_json transient = nlohmann::ordered_json::object();
    for (const auto& [cls, bytes] : x.at_peak) transient[cls] = exact_bytes(bytes);
    j["per_gpu"].push_back({{"gpu", g},
                            {"stage", x.stage},
                            {"ranks", x.copies},
                            {"peak_memory_bytes", exact_bytes(x.peak_memory_bytes)},
                            {"peak_reserved_bytes", exact_bytes(x.peak_reserved_bytes)},
                            {"memory_at_peak", {{"resident_bytes", exact_bytes(x.baseline_bytes)}, {"transient_bytes", transient}}},
                            {"busy_s",
                             {{"compute", x.compute_s},
                              {"exposed_communication", x.exposed_communication_s},
                              {"exposed_offload_io", x.exposed_offload_io_s},
                              {"optimizer", x.optimizer_s},
                              {"idle", x.idle_s}}},
                            {"hardware_flops", x.hardware_flops}});
  }
  j["host_peak_bytes"] = bytes_or_null(r.host_peak_bytes);
  j["storage_peak_bytes"] = bytes_or_null(r.storage_peak_bytes);
  j["model_flops_per_step"] = number_or_null(r.model_flops_per_step);
  j["fits"] = r.fits;
  j["infeasible_reason"] = r.infeasible_reason ? nlohmann::ordered_json(*r.infeasible_reason) : nlohmann::ordered_json();
  j["simulation"] = {{"simulated", r.simulated},
                     {"simulated_gpus", r.simulated_gpus},
                     {"simulated_nodes", r.simulated_nodes},
                     {"ops", r.ops},
                     {"activities", r.activities},
                     {"steps_simulated", r.steps_simulated},
                     {"folding", r.folding},
                     {"notes", r.notes}};
  j["assumptions"] = r.assumptions;
  return j;
}

sim::SimResult result_from_json(const nlohmann::json& j) {
  sim::SimResult r;
  const auto& sim = j.at("simulation");
  r.simulated = sim.at("simulated").get<bool>();
  r.step_time_s = number(j, "step_time_s");
  r.tflops_per_gpu = number(j, "tflops_per_gpu");
  r.hardware_tflops_per_gpu = number(j, "hardware_tflops_per_gpu");
  r.tokens_per_s = number(j, "tokens_per_s");
  r.samples_per_s = number(j, "samples_per_s");
  r.bubble_fraction = number(j, "bubble_fraction");
  r.peak_memory_bytes = number(j, "peak_memory_bytes");
  r.peak_reserved_bytes = number(j, "peak_reserved_bytes");
  for (const auto& g : j.at("per_gpu")) {
    sim::GpuResult x;
    x.stage = g.at("stage").get<int>();
    x.copies = g.at("ranks").get<int>();
    x.peak_memory_bytes = g.at("peak_memory_bytes").get<double>();
    x.peak_reserved_bytes = g.at("peak_reserved_bytes").get<double>();
    x.baseline_bytes = g.at("memory_at_peak").at("resident_bytes").get<double>();
    for (const auto& [cls, bytes] : g.at("memory_at_peak").at("transient_bytes").items()) x.at_peak.emplace_back(cls, bytes.get<double>());
    const auto& b = g.at("busy_s");
    x.compute_s = b.at("compute").get<double>();
    x.exposed_communication_s = b.at("exposed_communication").get<double>();
    x.exposed_offload_io_s = b.at("exposed_offload_io").get<double>();
    x.optimizer_s = b.at("optimizer").get<double>();
    x.idle_s = b.at("idle").get<double>();
    x.hardware_flops = g.at("hardware_flops").get<double>();
    r.per_gpu.push_back(std::move(x));
  }
  r.host_peak_bytes = number(j, "host_peak_bytes");
  r.storage_peak_bytes = number(j, "storage_peak_bytes");
  r.model_flops_per_step = number(j, "model_flops_per_step");
  r.fits = j.at("fits").get<bool>();
  if (!j.at("infeasible_reason").is_null()) r.infeasible_reason = j.at("infeasible_reason").get<std::string>();
  r.simulated_gpus = sim.at("simulated_gpus").get<int>();
  r.simulated_nodes = sim.at("simulated_nodes").get<int>();
  r.ops = sim.at("ops").get<std::size_t>();
  r.activities = sim.at("activities").get<std::size_t>();
  r.steps_simulated = sim.at("steps_simulated").get<int>();
  r.folding = sim.at("folding").get<std::vector<std::string>>();
  r.notes = sim.at("notes").get<std::vector<std::string>>();
  r.assumptions = j.at("assumptions").get<std::vector<std::string>>();
  return r;
}

Breakdown average_breakdown(const sim::SimResult& r) {
  Breakdown b;
  double weight = 0;
  for (const auto& g : r.per_gpu) {
    const double w = g.copies;
    b.compute_s += w * g.compute_s;
    b.exposed_communication_s += w * g.exposed_communication_s;
    b.exposed_offload_io_s += w * g.exposed_offload_io_s;
    b.optimizer_s += w * g.optimizer_s;
    b.idle_s += w * g.idle_s;
    weight += w;
  }
  if (weight > 0) {
    b.compute_s /= weight;
    b.exposed_communication_s /= weight;
    b.exposed_offload_io_s /= weight;
    b.optimizer_s /= weight;
    b.idle_s /= weight;
  }
  return b;
}

}  // namespace trainsim::planner
