#pragma once
// One training stack as the rest of trainsim sees it: the facts it states and the behaviours it
// supplies where it departs from the papers' accounting. Each stack fills one StackModel in a file
// of its own (idealized_stack.cpp, megatron_stack.cpp, deepspeed_stack.cpp, pytorch_stack.cpp,
// pytorch_ddp_stack.cpp, pytorch_fsdp_stack.cpp, pytorch_pipelining_stack.cpp,
// trainsim_reference_stack.cpp), citing the row of training_stacks.md behind every value; the memory
// model, the costs, the replay and the planner read these fields and never compare a stack's kind
// (DESIGN.md, "one module per stack; nothing else branches on the stack").

#include <cstdint>
#include <functional>
#include <string>

#include "activation_memory.hpp"
#include "layer_costs.hpp"
#include "memory_model.hpp"
#include "model.hpp"
#include "strategy.hpp"
#include "training_stack.hpp"

namespace trainsim::wl {

// The kernel an optimizer step on the GPU runs.
enum class GpuOptimizer {
  PROFILE_ADAM,       // the profile's Adam rate in the run's numerics (the papers' fused Adam)
  TORCH_FUSED_ADAMW,  // torch.optim.AdamW(fused=True) over fp32 parameters, gradients and moments
  REFERENCE_ADAM,     // trainsim-calibrate's reference Adam kernel (calibrate/cuda/ref_kernels.cu)
};

// Saved tensors of one stage, where a stack's code keeps other tensors than the papers count:
// per layer (stored until its backward; full while it runs), per layer autocast's weight cache,
// the stage ends, and the loss's tensors per micro-batch in flight plus the extra alive in the
// backward of log_softmax. Filled with the papers' values (activation_memory.hpp) first.
struct StackActivations {
  double stored = 0, full = 0;
  double autocast_cache = 0;
  double embedding = 0, output = 0;
  double logits_kept = 0, logits_backward = 0;
  bool head_once = false;  // the head's buffers exist once, not per micro-batch in flight
};

// A condition the stack needs of a strategy: `ok`, else refused as expected `what`, got `got`.
using StackNeed = std::function<void(bool ok, const std::string& what, const std::string& got)>;

struct StackModel {
  StackKind kind = StackKind::IDEALIZED;

  // Facts.
  bool pytorch_eager = false;        // PyTorch eager code: captures apply, every kernel pays its launch
  bool autocast = false;             // torch.autocast: fp32 parameters cast to 16 bits in every forward, the
                                     // residual stream left in fp32 (a pipeline stage sends it so)
  bool caching_allocator = false;    // allocates through PyTorch's CUDA caching allocator
  bool fully_shard = false;          // FSDP2's fully_shard: whole-layer units gathered in param_dtype
  bool torch_cpu_adam = false;       // an offloaded optimizer runs torch's CPU AdamW, not DeepSpeed's CPU-Adam
  bool gemm_in_step_table = true;    // its GEMMs are costed from the products timed inside training steps
  bool reference_kernels = false;    // its memory-bound kernels are trainsim's reference kernels
  bool plannable = true;             // `plan` may search it (the reference is our own step: simulate only)
  bool measurable = true;            // a real run runs it (the idealized stack is the papers' accounting, no code)
  bool runs_megatron_model = false;  // may run Megatron-LM's model and its mpu (Megatron-DeepSpeed)
  bool bucket_view_option = false;   // takes DDP's gradient_as_bucket_view
  bool mixed_precision_policy = false;  // takes FSDP2's param_dtype and reduce_dtype
  bool bf16_mixed_only = false;      // modeled only under bf16-mixed (its layer tables are autocast's)
  GpuOptimizer gpu_optimizer = GpuOptimizer::PROFILE_ADAM;
  // Its layer computes on param_dtype parameters with no autocast (FSDP2's MixedPrecisionPolicy): a
  // capture of it is one recorded in pure param_dtype, whatever numerics the run trains in.
  bool layer_in_param_dtype = false;

  // Behaviours (nullptr: the papers' accounting applies).
  // The bytes it keeps per parameter: fills `st`, whose sharding is already the ZeRO stage's.
  void (*states)(const TrainingStack& s, Numerics n, int zero_stage, std::int64_t grad_accum, StackStates& st) = nullptr;
  // What it cannot run: calls `need` once per condition (stack_capabilities.hpp).
  void (*refusals)(const Strategy& s, const ModelSpec& m, const StackNeed& need) = nullptr;
  // Its entry in a profile's host-dispatch calibration; nullptr: no host time is modeled.
  std::string (*dispatch_key)(const Strategy& s) = nullptr;
  // A family planned as one (`--stack pytorch`): the stack each candidate's shape is run by.
  StackKind (*wrapper_for)(const Strategy& s) = nullptr;
  LayerCost (*layer_cost)(const ModelSpec& m, const Strategy& s) = nullptr;
  LayerCost (*output_cost)(const ModelSpec& m, const Strategy& s) = nullptr;
  LayerCost (*embedding_cost)(const ModelSpec& m, const Strategy& s) = nullptr;
  // The forward a checkpointed layer's backward runs again, where it is not the layer's forward.
  PassCost (*recompute_cost)(const ModelSpec& m, const Strategy& s) = nullptr;
  void (*activations)(const ModelSpec& m, const Strategy& s, StackActivations& a) = nullptr;
  // Its own GPU buffers on a stage whose activations are modeled (after the papers' buffers).
  void (*buffers)(const ModelSpec& m, const Strategy& s, const StageMemory& st, BufferMemory& buf) = nullptr;
};

const StackModel& stack_model(StackKind kind);
inline const StackModel& stack_model(const Strategy& s) { return stack_model(s.stack.kind); }

// The saved tensors of one layer and of the stage ends under the strategy's stack.
StackActivations stack_activations(const ModelSpec& m, const Strategy& s);

}  // namespace trainsim::wl
