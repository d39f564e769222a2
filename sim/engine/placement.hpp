#pragma once
// Where each rank runs, which groups it belongs to, and which ranks the replay simulates.
//
// Ranks are laid out as Megatron-LM lays them out (megatron/core/parallel_state.py, order
// "tp-dp-pp"): tensor-parallel index innermost, then data-parallel, then pipeline stage, so
// rank = tp + TP * (dp + DP * pp) and consecutive ranks fill a node's GPUs. "tp-pp-dp" puts the
// pipeline stage before the data-parallel index.
//
// Folding. Ranks that differ only in their tensor- or data-parallel index run the same program
// at the same time (the same stage's layers, the same collectives), so the replay simulates one
// representative per pipeline stage: the rank with tp = 0 and dp = 0. Each representative stands
// for the identical ranks of its own node (its copies), whose use of shared resources (the host
// memory path, PCIe switches, NICs, storage, the CPU) the platform counts by giving the
// representative's routes those links once per copy that uses them; nodes that hold only other
// data-parallel replicas are mirrors of a simulated node, and a collective that reaches them
// leaves and re-enters through the simulated node's NICs (exact on a symmetric fabric). The
// unfolded placement simulates every rank; tests replay small configurations both ways.

#include <string>
#include <vector>

#include "program.hpp"

namespace trainsim::sim {

enum class RankOrder { TP_DP_PP, TP_PP_DP };
std::string_view to_string(RankOrder o);

struct RankCoord {
  int tp = 0;
  int dp = 0;
  int pp = 0;
  bool operator==(const RankCoord&) const = default;
};

struct GpuLocation {
  int node = 0;
  int gpu = 0;  // index within the node
  bool operator==(const GpuLocation&) const = default;
};

class Placement {
 public:
  Placement(int tp, int dp, int pp, int gpus_per_node, RankOrder order = RankOrder::TP_DP_PP);

  int tp() const { return tp_; }
  int dp() const { return dp_; }
  int pp() const { return pp_; }
  int world() const { return tp_ * dp_ * pp_; }
  int gpus_per_node() const { return gpus_per_node_; }
  int nodes() const { return (world() + gpus_per_node_ - 1) / gpus_per_node_; }
  RankOrder order() const { return order_; }

  RankCoord coord(int rank) const;
  int rank_of(const RankCoord& c) const;
  GpuLocation location(int rank) const { return {rank / gpus_per_node_, rank % gpus_per_node_}; }
  // The ranks of `rank`'s group of `kind`, in ring order (by the varying index). EMBEDDING is the
  // first and last pipeline stage of the same (tp, dp): the tied word embedding's gradients.
  std::vector<int> group(int rank, GroupKind kind) const;

 private:
  int tp_, dp_, pp_, gpus_per_node_;
  RankOrder order_;
};

// A rank the replay simulates, and what it stands for.
struct ExplicitRank {
  int rank = 0;
  RankCoord coord;
  GpuLocation location;
  int copies = 1;  // identical ranks on its node it represents (itself included)
  // Node-local GPUs of those copies, itself first, then by (dp, tp): copy j of one stage sends to
  // copy j of the next.
  std::vector<int> copy_gpus;
};

struct FoldPlan {
  bool folded = false;
  std::vector<ExplicitRank> ranks;  // by stage when folded; every rank otherwise
  std::vector<int> nodes;           // the nodes simulated, ascending
  std::string description;          // what was folded, for every result
  // The explicit rank of (stage, tp, dp); -1 when that rank is folded into another.
  int explicit_index(const Placement& p, int rank) const;
};

FoldPlan plan_fold(const Placement& placement, bool fold);

}  // namespace trainsim::sim
