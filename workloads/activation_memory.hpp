#pragma once
// Activation memory of one transformer layer for one micro-batch, tensor by tensor, after
// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// Sec. 4.1-4.2 and Table 2. With 16-bit activations, dropout and a GELU MLP of 4h the terms add
// up to their closed forms: sbh(34 + 5as/h) with no parallelism, sbh(10 + 24/t + 5as/(ht)) with
// tensor parallelism, sbh(34/t + 5as/(ht)) with sequence parallelism, sbh(10 + 24/t) and
// sbh(34/t) with selective recompute, and 2sbh with full recompute.

#include <cstdint>

#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::wl {

struct ActivationShape {
  std::int64_t seq = 0;          // s
  std::int64_t micro_batch = 0;  // b
  int tp = 1;                    // t
  bool sp = false;
  Recompute recompute = Recompute::NONE;
};

// Bytes per layer and micro-batch, by lifetime.
struct LayerActivations {
  double stored = 0;   // kept from forward to backward under the recompute policy
  double full = 0;     // every tensor backward needs: re-materialized one layer at a time
                       // under full recompute (the working set of the layer being recomputed)
};

LayerActivations layer_activation_bytes(const ModelSpec& m, const ActivationShape& shape);

// Stored by the first pipeline stage besides its layers: the embedding dropout mask.
double embedding_activation_bytes(const ModelSpec& m, const ActivationShape& shape);
// Stored by the last stage: the final norm's input and output (Korthikanti Sec. 4.3: 4sbh/t).
double output_norm_activation_bytes(const ModelSpec& m, const ActivationShape& shape);
// fp32 logits kept for the cross-entropy backward (Korthikanti Sec. 4.3: 4sbv/t).
double logits_bytes(const ModelSpec& m, const ActivationShape& shape);

// Bytes per element of an activation under the model's numerics.
double activation_element_bytes(Numerics n);
// Bytes per element of the residual stream: fp32 where the model keeps it so (Megatron's
// --fp32-residual-connection; PyTorch autocast, whose residual adds promote), else as above.
double residual_element_bytes(const ModelSpec& m);
// One [micro_batch, seq, hidden] tensor of the residual stream, whole (no tensor-parallel split).
double residual_tensor_bytes(const ModelSpec& m, std::int64_t micro_batch, std::int64_t seq);

}  // namespace trainsim::wl
