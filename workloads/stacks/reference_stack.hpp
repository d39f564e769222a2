#pragma once
// The trainsim reference step as it runs (`trainsim-calibrate reference`, calibrate/cuda/ref_*):
// its own kernels with the bytes each one moves (fp32 GEMM outputs, fp32 scores of a
// materialized attention, separate bias/residual/cast kernels) and the buffers of its static
// arena (every buffer placed once at start: its peak is the sum of its buffers). Row by row from
// workloads/stacks/training_stacks.md ("trainsim-reference"); its LayerNorms, causal softmax, head
// transposes and column sums are "ref:<class>" kernels priced from calibration.reference_kernels
// (reference_kernels.hpp); the rest at the generic calibrated kernels (wl::KernelClass: activation at
// GELU's, cross_entropy at softmax's, others at the copy's).

#include "layer_costs.hpp"
#include "reference_kernels.hpp"
#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::wl {

// One launch, named "ref:" + its class: costed at its class's curve in calibration.reference_kernels,
// else at the closest generic kernel (its KernelClass).
MemoryKernel reference_kernel(ReferenceKernel k, double rows, double cols);

LayerCost reference_layer_cost(const ModelSpec& m, const Strategy& s);
LayerCost reference_output_cost(const ModelSpec& m, const Strategy& s);
LayerCost reference_embedding_cost(const ModelSpec& m, const Strategy& s);

// Per micro-batch slot: what one layer keeps from its forward to its backward (`stored`; under
// recompute only its fp32 input) and everything its backward reads (`full`: the recomputed set,
// one layer at a time); the embedding's output (the first layer input); the final LayerNorm's
// output and statistics.
struct ReferenceActivations {
  double stored = 0, full = 0, embedding = 0, output = 0;
};
ReferenceActivations reference_activations(const ModelSpec& m, const Strategy& s);

// Arena buffers that exist once per rank whatever the micro-batches in flight (ref_model.cpp
// allocate: the fp32 GEMM scratch, the scores and their gradient, backward work buffers, the
// head's logits and their gradient on the last stage; ref_param_store.cpp: the full-unit fp32
// gradient buffers and reduce-scatter/cast staging of ZeRO-3; the token buffers).
// `last_stage`: holds the LM head; `micro_batches`: token buffers held per rank.
double reference_resident_bytes(const ModelSpec& m, const Strategy& s, bool last_stage);

}  // namespace trainsim::wl
