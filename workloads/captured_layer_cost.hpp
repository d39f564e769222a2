#pragma once
// A capture's ops as the hardware-free costs of layer_costs.hpp, for one micro-batch on one
// tensor-parallel rank: what CostModel::pass_seconds turns into seconds. Per op class
// (SCHEMA.md, "Op classes"):
//   gemm, batched_gemm      -> wl::Gemm{m, n, k, batch}, named by class; a weight's GEMM divides
//                              its gemm.tp.split dimension by tp (SCHEMA.md, "Tensor parallelism");
//                              fp32 where gemm.dtype is f32
//   attention_fwd/_bwd      -> flash: FlashWork (fused_attention) plus the products as Gemm
//                              entries "attention_scores"/"attention_context" (FLOP counts; the cost
//                              model skips them where it times flash); other backends: those
//                              products as batched GEMMs only
//   every other op with kernels -> wl::MemoryKernel{class name, bytes_read + bytes_written}
// PassCost::launches is the captured kernel count of the phase (SCHEMA.md, "Kernels").
//
// Usage (see capture_document.hpp for loading and scaling):
//     CapturedCosts c = captured_costs(load_capture(path), tp);
//     c.layers.at(kind).cost.forward / .backward, c.layers.at(kind).recompute,
//     c.embedding (embed.forward / embed.backward), c.head (head.forward / head.backward)
// For another size: captured_costs(scale_capture(doc, changes), tp), where the changes come from
// symbols or from capture_changes_for(doc, symbols_of_model(hf_model, micro_batch, seq)).

#include <map>
#include <string>

#include "capture_document.hpp"
#include "layer_costs.hpp"

namespace trainsim::wl {

struct CapturedLayerCost {
  std::string kind;
  std::int64_t count = 0;  // layers of this kind in the full model
  LayerCost cost;          // forward, backward (without the recompute)
  PassCost recompute;      // activation checkpointing's recompute, run inside the backward
};

struct CapturedCosts {
  std::map<std::string, CapturedLayerCost> layers;  // by layer kind
  LayerCost embedding;                              // embed.forward, embed.backward
  LayerCost head;                                   // head.forward (final norm, LM head, loss), head.backward
};

// The cost of one phase's ops on one of tp ranks. Throws ConfigError (naming the capture) for
// tp < 1, or for a split dimension or a head count that tp does not divide.
PassCost captured_pass_cost(const CaptureDocument& doc, const CapturedPhase& phase, std::int64_t tp);
CapturedCosts captured_costs(const CaptureDocument& doc, std::int64_t tp);

}  // namespace trainsim::wl
