#pragma once
// The command-line flag that sets each strategy field, for messages that name what to change.

#include <string>

#include "strategy_rules.hpp"

namespace trainsim::planner {

inline std::string flag_of(wl::Field f) {
  switch (f) {
    case wl::Field::GPUS: return "--gpus";
    case wl::Field::DP: return "--dp";
    case wl::Field::TP: return "--tp";
    case wl::Field::PP: return "--pp";
    case wl::Field::VPP: return "--vpp";
    case wl::Field::FIRST_STAGE_LAYERS: return "--first-stage-layers";
    case wl::Field::SP: return "--sp";
    case wl::Field::SCHEDULE: return "--schedule";
    case wl::Field::ZERO: return "--zero";
    case wl::Field::OFFLOAD_PARAMS: return "--offload-params";
    case wl::Field::OFFLOAD_OPTIMIZER: return "--offload-optimizer";
    case wl::Field::OFFLOAD_ACTIVATIONS: return "--offload-activations";
    case wl::Field::RECOMPUTE: return "--recompute";
    case wl::Field::L2L: return "--l2l";
    case wl::Field::DELAYED_UPDATE: return "--dpu";
    case wl::Field::SHARDS: return "--shards";
    case wl::Field::MICRO_BATCH: return "--micro-batch";
    case wl::Field::GLOBAL_BATCH: return "--global-batch";
    case wl::Field::SEQ: return "--seq";
    case wl::Field::MODEL: return "--params";
  }
  return "--strategy";
}

}  // namespace trainsim::planner
