#pragma once
// A user's question in resolved form: model, strategy and cluster, from any mix of sources
// (flags, strategy JSON, DeepSpeed config, Megatron-LM arguments, Hugging Face config.json).
// Every command (memory, simulate, ...) starts here, so every command validates alike.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cluster_profile.hpp"
#include "memory_fit.hpp"
#include "strategy_input.hpp"

namespace trainsim::planner {

// The inputs as the command line gives them; a flag not given stays empty.
struct InputFlags {
  std::string model;                 // --model: built-in name or path
  std::optional<double> params;      // --params
  std::string hw = "dgx2";           // --hw: built-in name or path
  std::string strategy_file;         // --strategy
  std::string deepspeed_file;        // --deepspeed
  std::string megatron_args;         // --megatron-args
  std::string capture_file;          // --capture: the user's layer, captured (captured_model.hpp)
  std::optional<int> gpus, nodes, dp, tp, pp, vpp, zero, first_stage_layers, last_stage_layers, shards;
  std::optional<bool> sp, l2l, delayed_update;
  std::optional<std::string> schedule, offload_params, offload_optimizer, offload_activations, recompute,
      precision, attention, stack;
  std::optional<std::int64_t> micro_batch, global_batch, seq;
  std::optional<double> memory_headroom;  // --memory-headroom (memory_fit.hpp)
  // A strategy already read (a measured run's), merged first: files and flags override it.
  std::optional<wl::StrategyInput> base_strategy;
};

struct Request {
  wl::ResolvedInputs inputs;
  hw::ClusterProfile profile;
  std::optional<std::string> infeasible_reason;
  double memory_headroom = DEFAULT_MEMORY_HEADROOM;  // memory_fit.hpp
};

// Throws ConfigError for malformed or contradictory inputs.
Request resolve_request(const InputFlags& flags);

nlohmann::ordered_json inputs_json(const Request& r);
// A training stack as the strategy file's "stack" object writes it (its name and the options that
// stack has).
nlohmann::ordered_json stack_json(const wl::TrainingStack& stack);
nlohmann::ordered_json provenance_json(const Request& r, std::string_view command);
// What every result file starts with: schema_version, kind ("trainsim.<command>"), provenance
// and the resolved inputs.
nlohmann::ordered_json result_header(const Request& r, std::string_view command, int schema_version);

// "1.008T", "7.50B", "340M": parameter counts for people.
std::string human_count(double n);

}  // namespace trainsim::planner
