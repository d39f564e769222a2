#pragma once
// A second, tighter lower bound on the step the replay answers, for the planner to prune with
// after the closed forms of step_bound.hpp: the data-parallel family's real program (the one the
// replay lowers, program/data_parallel_program.hpp) walked once in program order with no
// contention at all. Milliseconds per configuration instead of the replay's tenths of a second.
//
// Why it is a lower bound of the replay (engine.cpp, task_graph.cpp):
// - the replay starts an instruction no earlier than the ends of the instructions it waits for
//   and, on every stream but the node's, the end of the stream's previous instruction: the walk
//   uses exactly these dependencies and nothing else (the host's dispatch stream, which only
//   delays, is left out);
// - no instruction runs faster than it would alone: computes take their seconds (interference
//   only slows them); collectives their ring latency plus the hop bytes at no more than the
//   GPU's port, or, for a ring that leaves the node, the node's NICs shared by the rings of the
//   simulated rank's copies (the folded platform routes each copy's ring over them:
//   placement.hpp); copies and storage the bytes of every copy of the rank over the node's host
//   memory path, drives and CPU that they share, and no more than a GPU's own PCIe link or the
//   calibrated copy cap.
// What it does not prove: with several simulated steps (the delayed update) the step is the
// difference of two step ends, and the walk bounds each end, not their difference; the planner's
// bound tests replay such configurations against it (tests/planner/bound_test.cpp).
//
// The closed forms miss what this walk sees: a ZeRO-3 gather issued one compute ahead that
// takes longer than that compute stays exposed, however short the sum of the computes.

#include <optional>

#include "cluster_profile.hpp"
#include "memory_model.hpp"
#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::sim {

// The data-parallel family (pp = 1, not Hydra); nullopt for the others. `memory` is the memory
// model's estimate the replay is given (buffers, parameters per rank).
std::optional<double> contention_free_step_s(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                                             const wl::MemoryEstimate& memory);

}  // namespace trainsim::sim
