#pragma once
// The planner's search space as data: a list of axes (tensor, pipeline and virtual stages,
// schedule, sequence parallelism, ZeRO stage, L2L, offload targets, the delayed update,
// recompute, checkpoint offload, micro-batch), each with the values it may take given the
// choices before it. One recursive walk visits the product; adding a knob is adding an axis,
// not editing an 11-deep nest of loops (the Calculon search loop this replaces, see
// shared/notes/model-codebases.md).
//
// An axis offers only the values that mean something after the earlier choices (no schedule
// without a pipeline, no offload target without the ZeRO stage that owns it): structure, not
// rules. Whether a strategy is legal is decided by the one rule list (estimator.hpp validate,
// workloads/strategy_rules.hpp), and the planner counts what it refuses, by rule.

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "model.hpp"
#include "framework.hpp"
#include "strategy.hpp"

namespace trainsim::planner {

// What is fixed for one sweep: the model, the node count and the batch.
struct SpaceShape {
  const wl::ModelSpec* model = nullptr;
  int gpus_per_node = 1;
  int nodes = 1;
  int gpu_count = 0;  // 0: every GPU of the nodes (--gpus may leave the last node part-used)
  std::int64_t global_batch = 1;
  std::int64_t seq = 0;
  // What the user's framework runs (framework.hpp): the strategies it cannot run are not visited,
  // the others carry its stack. None: the idealized space, asynchronous schemes included.
  const Framework* framework = nullptr;
  // Pipeline degrees that do not divide the layers (stages balanced by cost) are searched too.
  bool uneven_pipelines = false;
  int gpus() const { return gpu_count > 0 ? gpu_count : nodes * gpus_per_node; }
};

struct Axis {
  std::string_view name;
  std::string_view description;
  // The values this axis may take given the strategy built so far (earlier axes applied).
  std::function<std::vector<int>(const wl::Strategy& partial, const SpaceShape& shape)> values;
  std::function<void(wl::Strategy& s, int value)> apply;
};

// The axes, in the order they are chosen.
const std::vector<Axis>& search_axes();

// Calls `visit` with every strategy of the space the framework runs, in a fixed order (the same on
// every machine).
void enumerate_space(const SpaceShape& shape, const std::function<void(const wl::Strategy&)>& visit);

// The positive divisors of n, ascending.
std::vector<int> divisors(std::int64_t n);

}  // namespace trainsim::planner
