#pragma once
// The program of the data-parallel family (plain DP, ZeRO-1/2/3, ZeRO-Offload with or without the
// delayed parameter update, ZeRO-Infinity on CPU or NVMe, L2L; with full or selective recompute,
// activation checkpoints offloaded to the host, and tensor parallelism): one program every rank
// runs, from the family's pure schedule (schedules/data_parallel_schedule.hpp), each of its
// instructions made into typed instructions with their payload: which tier a fetch reads, which
// collective over which group with how many bytes, where the optimizer runs.

#include "cost_model.hpp"
#include "memory_model.hpp"
#include "model.hpp"
#include "program.hpp"
#include "strategy.hpp"

namespace trainsim::sim {

// `gpus_per_node`: L2L shares one copy of the model states per node among its ranks.
// `micro_batches` overrides the strategy's per-step count (0 keeps it; simulator.cpp folds).
// `trailing`: whether the delayed update's steady state ends with its trailing step (program.hpp).
ProgramSet build_data_parallel_program(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& costs,
                                       const wl::MemoryEstimate& memory, int gpus_per_node, int micro_batches = 0,
                                       TrailingStep trailing = TrailingStep::SIMULATE);

// Whether the program's amounts differ by data-parallel rank (Instruction::by_dp_rank): DeepSpeed
// 0.3's bucket copies fall to the ranks whose partitions a bucket covers (StackStates::
// copies_by_partition_owner). Such a program is replayed with every rank simulated.
bool data_parallel_ranks_differ(const wl::ModelSpec& m, const wl::Strategy& s);

}  // namespace trainsim::sim
