#pragma once
// The cross-field rules a strategy must satisfy, as data. validate() checks every rule and
// returns every violation (the planner counts them by rule; it enumerates strategies and needs
// all reasons, not the first); resolve_inputs() throws the first one as a ConfigError naming the
// flag or file key of the field at fault. One list of rules, so the CLI and the planner can never
// disagree about what is legal.
//
// Two scopes: STRATEGY rules make a strategy malformed (DeepSpeed or Megatron-LM would refuse
// it; DESIGN.md: cross-field checks), REPLAY rules are what the simulator does not replay (the
// stacks do not run those combinations either, e.g. ZeRO-Offload under a pipeline).

#include <string>
#include <string_view>
#include <vector>

#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::wl {

// The strategy field a rule blames: resolve_inputs turns it into the flag or file key that set it.
enum class Field {
  GPUS, DP, TP, PP, VPP, FIRST_STAGE_LAYERS, SP, SCHEDULE, ZERO, OFFLOAD_PARAMS, OFFLOAD_OPTIMIZER,
  OFFLOAD_ACTIVATIONS, RECOMPUTE, L2L, DELAYED_UPDATE, SHARDS, MICRO_BATCH, GLOBAL_BATCH, SEQ, MODEL
};
std::string_view to_string(Field f);

enum class RuleScope { STRATEGY, REPLAY };

struct RuleViolation {
  std::string rule;  // stable id, e.g. "tp-divides-heads": the planner counts by it
  RuleScope scope = RuleScope::STRATEGY;
  Field field = Field::MODEL;
  std::string expected;  // "a divisor of the attention heads (96) of gpt3-175b"
  std::string got;       // "5"
  // "tp: expected a divisor of the attention heads (96) of gpt3-175b, got 5"
  std::string message() const;
};

// Every violated rule of `scope` (and of STRATEGY when scope is REPLAY: a replayed strategy must
// be well formed first), in the order of the list in strategy_rules.cpp.
std::vector<RuleViolation> validate(const ModelSpec& m, const Strategy& s, RuleScope scope = RuleScope::STRATEGY);

// The rule ids with one-line descriptions, in order (for documentation and tests).
struct RuleInfo {
  std::string_view id;
  RuleScope scope;
  std::string_view description;
};
const std::vector<RuleInfo>& strategy_rules();

}  // namespace trainsim::wl
