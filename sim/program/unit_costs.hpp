#pragma once
// The units a data-parallel step computes (whole layers, or ZeRO-3's gather units) with their
// parameters and their compute time on one rank, cut where tensor parallelism places its
// all-reduces (after the attention and after the MLP in the forward, Shoeybi et al. 2019 Fig. 3,
// and after the MLP-input and QKV input gradients in the backward).

#include <vector>

#include "cost_model.hpp"
#include "model.hpp"
#include "small_vector.hpp"
#include "strategy.hpp"

namespace trainsim::sim {

struct Segment {
  double seconds = 0;
  double flops = 0;
  bool tp_allreduce_after = false;
  // Of `seconds`, the GEMMs', attention's and the gaps between kernels (CostModel::pass_classes);
  // the rest is memory-bound kernels.
  double gemm_seconds = 0, attention_seconds = 0, gap_seconds = 0;
};

// A pass's segments: one, or two with tensor parallelism, kept inline (small_vector.hpp): the
// planner's bounds build a unit list for every candidate, a heap list per pass cost most of it.
using Segments = SmallVector<Segment, 2>;

struct UnitCost {
  int layer = 0;           // -1 embedding, model.layers head (ZeRO-3 units); else a layer
  const char* name = "";
  double params = 0;       // on one tensor-parallel rank
  Segments forward;
  Segments backward;
  Segments full_recompute;       // the layer's own forward again (no embedding or head)
  Segments selective_recompute;  // empty unless this unit holds the attention core
  bool holds_embedding = false;  // the embedding's activations start here
  bool holds_head = false;       // the output layer's activations and logits live here
};

// ZeRO-3 gather units when `per_operator`, else the embedding, one unit per layer and the head.
std::vector<UnitCost> unit_costs(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& c, bool per_operator);

// The parameters a unit owns (holds, and whose gradients it reduces): its own, less the word
// embedding that ZeRO-3's head unit gathers because it is tied to it (`head_gathers_tied`:
// wl::StackStates::head_gathers_tied_embedding); that tensor is held once, with the embedding.
double owned_params(const UnitCost& u, const wl::ModelSpec& m, const wl::Strategy& s, bool head_gathers_tied);

}  // namespace trainsim::sim
