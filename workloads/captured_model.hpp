#pragma once
// The user's own layer (issue 39): a capture (workloads/capture/SCHEMA.md) attached to a model, so
// that the replay costs the operations the user's PyTorch code dispatches instead of trainsim's
// hand-written PyTorch layer (stack_layer.hpp). What the capture gives: each layer's forward,
// backward and recompute kernels, the embedding's and the head's (captured_layer_cost.hpp), their
// launch counts. What stays the stack's (stack_layer.hpp): gradient accumulation across
// micro-batches, the states, buckets and communication, and the activations kept for the backward.
//
// The capture is scaled once, when attached, to the model's sizes and the run's micro-batch and
// sequence (capture_scale.hpp); a layer cost asked for another micro-batch or sequence is an error
// (the planner attaches one per candidate: planner/candidate_layers.hpp).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "captured_layer_cost.hpp"
#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::wl {

struct ModelCapture {
  CaptureDocument doc;     // scaled to the model and the run
  CapturedCosts costs;     // at tp 1 (PyTorch's stacks split no layers)
  std::string id;          // the file and a hash of its bytes: what results and messages name
  std::string describe;    // for the answer's Basis line
  std::string layer_kind;  // the kind every layer is costed as (captured_model.cpp, costed_kind)
  std::int64_t layer_param_tensors = 0;  // a layer's parameter tensors (AccumulateGrad adds one kernel each)
  CapturedParamCounts params;            // the capture's parameter tensors at the model's sizes
  // One layer's buffers for one micro-batch (alloc_bytes, SCHEMA.md "Buffers and positions"):
  // kept: allocated by its forward, freed in the backward (its saved tensors, or under checkpointing
  // its input); recomputed: allocated by its recompute, freed in its backward; autocast_cache:
  // allocated by its forward, freed before the backward (autocast's weight casts under checkpointing).
  struct LayerMemory {
    double kept = 0, recomputed = 0, autocast_cache = 0;
  } layer_memory;
  // The head's buffers for one micro-batch: kept, allocated by head.forward and alive when
  // head.backward starts (log_softmax's saved output; the bf16 logits only where the user's code
  // holds them); backward_extra, the most head.backward holds above what is still kept then.
  struct HeadMemory {
    double kept = 0, backward_extra = 0;
  } head_memory;
};

// The training numerics a capture recorded (run.precision: fp32, bf16, autocast-bf16, fp16-scaler).
Numerics capture_numerics(const CaptureDocument& doc);

// The numerics a capture of the run's layer is recorded in: the run's, or where the stack computes
// the layer on its param_dtype parameters with no autocast (FSDP2), pure param_dtype; nullopt where
// no capture precision is that (fp16 parameters).
std::optional<Numerics> layer_numerics(const ModelSpec& m, const Strategy& s);


// Loads `path` (a ConfigError names the flag, the file and the key on a bad capture), checks it
// describes `m` (the same architecture: its ties hold at the model's sizes; the same parameters,
// except for a layer_from_capture model, whose parameters are the capture's) and a stack that can
// run it, and scales it to `m` and the run's micro-batch and sequence.
// `doc`: the capture already loaded from `path` (planner/request.cpp reads its numerics first).
// `shown`: the name the answer gives the capture where not its path (a committed capture's path in
// the source tree, the same on every machine).
std::shared_ptr<const ModelCapture> attach_capture(const std::string& path, CaptureDocument doc, const std::string& flag,
                                                   const ModelSpec& m, const Strategy& s, const std::string& shown = {});
std::shared_ptr<const ModelCapture> attach_capture(const std::string& path, const std::string& flag, const ModelSpec& m,
                                                   const Strategy& s, const std::string& shown = {});

// The captured costs where `m` carries a capture and `s` runs a PyTorch stack, else null.
const ModelCapture* captured_for(const ModelSpec& m, const Strategy& s);

}  // namespace trainsim::wl
