#pragma once
// The program of Hydra's spilled execution (Nagrecha & Kumar 2021, "model spilling"): each GPU
// keeps its whole model in host memory, cut into shards of consecutive layers, and runs it shard
// by shard (schedules/hydra_schedule.cpp): a shard is promoted to the GPU (copied in), computes,
// and is demoted (copied out). Two shard buffers on the GPU let the next shard's promotion run
// while the current one computes (Hydra's double buffering). A forward keeps only each shard's
// output, in host memory; a backward visit brings the shard's input back, reruns the shard's
// forward, and differentiates it, so one shard's activations are on the GPU at a time. The
// shard's optimizer step runs on the GPU while it is promoted.

#include "cost_model.hpp"
#include "memory_model.hpp"
#include "model.hpp"
#include "program.hpp"
#include "strategy.hpp"

namespace trainsim::sim {

// `micro_batches` overrides the strategy's per-step count (0 keeps it; simulator.cpp folds).
ProgramSet build_hydra_program(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& costs,
                               const wl::MemoryEstimate& memory, int micro_batches = 0);

}  // namespace trainsim::sim
