#pragma once
// A second, tighter lower bound on the step the replay answers, for the planner to prune with
// after the closed forms of step_bound.hpp: the real programs (the ones the replay lowers,
// program/data_parallel_program.hpp, program/pipeline_program.hpp) walked in dependency order
// with no contention at all. Milliseconds per configuration instead of the replay's tenths of a
// second to seconds.
//
// Why it is a lower bound of the replay (engine.cpp, task_graph.cpp, lowering/interpreter.cpp):
// - the replay starts an instruction no earlier than the ends of the instructions it waits for,
//   the end of its stream's previous instruction (every stream but the node's), the arrival of
//   a receive's send, and the readiness of every member of a collective: the walk uses exactly
//   these dependencies and nothing else (the host's dispatch stream, which only delays, is left
//   out);
// - no instruction runs faster than it would alone: computes take their seconds (interference
//   only slows them); collectives and sends their latency plus the bytes at no more than the
//   GPU's port or, leaving the node, the node's NICs shared by the simulated rank's copies (the
//   folded platform routes every copy over them: placement.hpp), and a ring leaving the node at
//   no more than its channels, each through one GPU's PCIe link and one NIC (pcie_topology.hpp,
//   platform_links.cpp: a channel is no faster than the slower of the two); host copies, storage and
//   CPU-Adam the work of every copy over the node's host memory path, drives and CPU that they
//   share, and no faster than a GPU's own PCIe link or the calibrated copy cap.
// What it does not prove, and tests check against replays instead (tests/planner/bound_test.cpp):
// - with several simulated steps (the delayed update, PipeDream, 2BW) the step is the difference
//   of two step ends; the walk bounds each end, not their difference;
// - many micro-batches are folded as the simulator folds them (simulator.cpp): three counts
//   walked and the line extended, which assumes the replay's increment per micro-batch is no
//   smaller than the contention-free one.
//
// The closed forms miss what this walk sees: a ZeRO-3 gather issued one compute ahead that
// takes longer than that compute stays exposed; a pipeline stage waits for its neighbours'
// sends and for the schedule's order, not only for its own work.

#include <optional>

#include "cluster_profile.hpp"
#include "memory_model.hpp"
#include "model.hpp"
#include "step_bound.hpp"
#include "strategy.hpp"

namespace trainsim::sim {

// Every family but Hydra (nullopt), and nullopt where the programs are too large to walk
// cheaply. `memory` is the memory model's estimate the replay is given.
struct StepWalk {
  double step_s = 0;  // the step the walk measures, as the simulator measures the replay's
  int steps = 1;      // steps measured: more than one for the delayed update, PipeDream, 2BW
};
std::optional<StepWalk> contention_free_step(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                                             const wl::MemoryEstimate& memory);

// What the planner prunes with: the walk, less WALK_ROOM of it for the folds of micro-batches
// (the walk's and the replay's each extend a line checked to 1e-9) and for the steady state of
// several steps, which the walk does not prove (above). With the replay's trailing step
// (program/program.hpp) no replay came out below its walk by more than 1.8e-15 of it over the
// 143 multi-step candidates of gpt2-1.5b on two DGX-2 (global batch 64), nor by more than 1.6e-10
// over the 519 replays of 1T on 1..128 DGX-2 (413 of them over several steps), nor by more than
// 1.6e-10 over the 114 that search replays once the walk sees crossing rings' channels (66 over
// several steps); without it by up to 0.17%. tests/planner/bound_test.cpp and sweep_test.cpp fail
// past the room.
inline constexpr double WALK_ROOM = 1e-6;
double walk_bound_s(const StepWalk& w);

}  // namespace trainsim::sim
