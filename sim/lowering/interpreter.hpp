#pragma once
// The lowering as an interpreter: programs (program/program.hpp) x placement x costs -> the task
// graph the engine replays, and the platform it needs (the simulated GPUs, the rings of their
// collectives, the routes of their transfers). One handler per instruction kind; no handler asks
// which strategy it is lowering.
//
// Each simulated rank runs the program of its pipeline stage. Instructions of one stream chain in
// program order; `after` lists the rest. A COLLECTIVE becomes one op shared by the simulated
// members of its group instance (matched by position in their program, or by tag across stages);
// a SEND becomes a transfer op that the matching RECV waits for. Memory effects on the host and
// storage tiers count once per copy the simulated rank stands for (its copies share the node).

#include <vector>

#include "cost_model.hpp"
#include "engine.hpp"
#include "placement.hpp"
#include "platform.hpp"
#include "program.hpp"

namespace trainsim::sim {

struct SimulatedGpu {
  ExplicitRank rank;
  int node_index = 0;  // position of its node among the simulated nodes
};

struct LoweredPrograms {
  std::unique_ptr<TaskGraph> graph;
  RateCaps caps;
  PlatformSpec platform;
  std::vector<SimulatedGpu> gpus;         // by simulated GPU index
  int simulated_nodes = 0;
  std::vector<std::vector<OpId>> step_ends;  // per step: the ops that end it (all simulated ranks)
  int steps = 1;
  int measured_steps = 1;  // ProgramSet::measured_steps
};

LoweredPrograms interpret(const ProgramSet& programs, const Placement& placement, const FoldPlan& fold,
                          const CostModel& costs, const hw::ClusterProfile& profile);

}  // namespace trainsim::sim
