#pragma once
// A transformer layer as a PyTorch stack runs it in eager mode: the memory-bound kernels it
// launches besides its GEMMs and flash attention (autocast's casts, fp32 LayerNorms and residual
// adds, the reshape copy, gradient casts and accumulation) and the tensors it saves for backward.
// Row by row from workloads/stacks/training_stacks.md ("autocast", "FSDP2"). Kernel names start with
// "torch:" and are costed at the bandwidth PyTorch's own kernel reached in calibration
// (calibration.kernels "torch_<name>", calibrate/scripts/torch_microbench.py).

#include "layer_costs.hpp"
#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::wl {

// The layer's GEMMs as transformer_layer_cost has them, with the stack's kernels.
LayerCost torch_layer_cost(const ModelSpec& m, const Strategy& s);
LayerCost torch_output_cost(const ModelSpec& m, const Strategy& s);
LayerCost torch_embedding_cost(const ModelSpec& m, const Strategy& s);

// The kernels a PyTorch stack launches on the compute stream for one transformer layer, as the
// validation rows' profiler traces list them per layer (reports/validation/measured/: the GPT and
// Llama layers under autocast and FSDP2; stack_layer_test.cpp holds the counts read there):
// forward, backward (the micro-batches that add into an existing gradient launch one
// AccumulateGrad add per parameter tensor more, counted at their share), and the recompute of a
// checkpointed layer (its forward with two kernels fewer, and under FSDP2 no copy-out, as the
// checkpointed rows' traces hold it). What the head, the embedding and the optimizer launch is not
// counted.
struct LayerLaunches {
  double forward = 0, backward = 0, recompute = 0;
};
LayerLaunches torch_layer_launches(const ModelSpec& m, const Strategy& s);

// Bytes one layer keeps from its forward to its backward for one micro-batch, the 16-bit weight
// copies of autocast included.
double torch_layer_saved_bytes(const ModelSpec& m, const Strategy& s);
// Activation checkpointing (torch.utils.checkpoint, non-reentrant, around each transformer layer;
// workloads/stacks/training_stacks.md, "Activation checkpointing"): what one checkpointed layer keeps from
// its forward to its backward (its input, in the residual stream's dtype), and the forward its
// backward runs again first (the layer's GEMMs and kernels, autocast's weight casts again; not
// FSDP2's gather work, whose unsharded parameters the backward's gather already holds).
double torch_layer_checkpoint_bytes(const ModelSpec& m, const Strategy& s);
// Autocast caches the 16-bit cast of every weight it casts until the autocast region (a stage's
// whole forward) exits (torch/amp/autocast_mode.py). Without checkpointing each layer saves those
// casts for its backward anyway (torch_layer_saved_bytes); with it they live only in that cache:
// one layer's casts, held from its forward to the end of the forward call (0 where nothing applies).
double torch_autocast_cache_bytes(const ModelSpec& m, const Strategy& s);
PassCost torch_recompute_cost(const ModelSpec& m, const Strategy& s);
// The loss: bytes kept from the head's forward to its backward (per micro-batch), and the extra
// alive during the backward of log_softmax.
struct TorchLossBytes {
  double kept = 0;
  double backward_extra = 0;
};
TorchLossBytes torch_loss_bytes(const ModelSpec& m, const Strategy& s);
// Linear-layer parameters of one transformer layer (weights and biases: what autocast casts).
double linear_params_per_layer(const ModelSpec& m);

}  // namespace trainsim::wl
