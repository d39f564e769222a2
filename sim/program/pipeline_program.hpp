#pragma once
// Programs of the pipelined strategies (GPipe, 1F1B, interleaved 1F1B, PipeDream, PipeDream-2BW;
// Megatron-LM's 3D parallelism), one per pipeline stage: the stage's schedule (schedules/) with
// each pass expanded into its layers (program/unit_work.hpp, tensor and sequence parallelism
// inside), the sends and receives between adjacent virtual stages, the data-parallel gradient
// reduction (all-reduce, or ZeRO-1's reduce-scatter and all-gather: Megatron-LM's distributed
// optimizer), the tied embedding's all-reduce between the first and last stage, the optimizer
// step, and the model states and weight versions as allocations.

#include "cost_model.hpp"
#include "memory_model.hpp"
#include "model.hpp"
#include "program.hpp"
#include "stage_partition.hpp"
#include "strategy.hpp"

namespace trainsim::sim {

struct PipelineBuild {
  ProgramSet programs;
  wl::StagePartition partition;
};

// `micro_batches` overrides the strategy's per-step count (the simulator replays fewer and folds
// the rest, simulator.cpp); 0 keeps the strategy's. `trailing`: whether the asynchronous
// schedules' steady state ends with its trailing step (program.hpp).
PipelineBuild build_pipeline_programs(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& costs,
                                      const wl::MemoryEstimate& memory, int micro_batches = 0,
                                      TrailingStep trailing = TrailingStep::SIMULATE);

}  // namespace trainsim::sim
