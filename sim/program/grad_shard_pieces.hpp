#pragma once
// A unit's reduced gradient shard as the tensors a per-parameter framework copies one by one
// (FSDP2 offloads each parameter's shard with its own `.to("cpu")`, workloads/stacks/training_stacks.md,
// "FSDP2"): the rate of a host copy depends on the size of each copy (cost_model.hpp, copy_cap),
// so the copies are grouped by size rather than merged into one.

#include <vector>

#include "model.hpp"
#include "unit_costs.hpp"

namespace trainsim::sim {

// ShardPiece: cost_model.hpp (the CPU AdamW costs a shard's tensors by size too).

// The shards (1/dp of each tensor, rounded up to whole elements) of the parameter tensors of
// `units` on one tensor-parallel rank, `bytes_per_param` each, grouped by size in ascending order.
std::vector<ShardPiece> grad_shard_pieces(const wl::ModelSpec& m, const std::vector<const UnitCost*>& units, int tp, int dp,
                                          double bytes_per_param);

}  // namespace trainsim::sim
