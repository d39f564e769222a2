#pragma once
// The compute of one unit of the model (the embedding, a transformer layer, a ZeRO-3 gather
// unit, the head) in one pass for one micro-batch, written as program instructions: its kernels
// as COMPUTE instructions on the compute stream, cut where tensor parallelism places its
// collectives (Megatron-LM: an all-reduce after the attention and after the MLP in the forward,
// after the MLP-input and QKV input gradients in the backward, Shoeybi et al. 2019 Fig. 3; with
// sequence parallelism a reduce-scatter and an all-gather instead, Korthikanti et al. 2022
// Sec. 4.2.2), with the activation memory each pass allocates and frees (Korthikanti et al.
// Sec. 4.1, sizes from workloads/activation_memory).

#include <vector>

#include "program.hpp"
#include "strategy.hpp"
#include "unit_costs.hpp"

namespace trainsim::sim {

// Appends instructions to a program and hands back their indices.
class ProgramWriter {
 public:
  explicit ProgramWriter(Program& program) : program_(program) {}
  int add(Instruction in) {
    program_.instructions.push_back(std::move(in));
    return static_cast<int>(program_.instructions.size()) - 1;
  }
  Instruction& at(int i) { return program_.instructions[static_cast<std::size_t>(i)]; }
  int size() const { return static_cast<int>(program_.instructions.size()); }
  Program& program() { return program_; }

 private:
  Program& program_;
};

// Activation bytes of one rank (already split by tensor and sequence parallelism).
struct ActivationSizes {
  double stored = 0;    // per layer kept from forward to backward (a checkpoint under full recompute)
  double full = 0;      // per layer with every tensor (what a recompute re-materializes)
  double embedding = 0; // the embedding's dropout mask
  double output = 0;    // the final norm's activations
  double logits = 0;    // fp32 logits of the loss
  double logits_backward = 0;  // more, alive only during the head's backward (a stack's loss backward)
  double autocast_cache = 0;   // per layer: autocast's cached weight casts under checkpointing, from
                               // the layer's forward to the end of the forward call (stack_layer.hpp)
};

struct UnitWork {
  const std::vector<UnitCost>* units = nullptr;
  ActivationSizes activations;
  wl::Recompute recompute = wl::Recompute::NONE;
  int transformer_layers = 0;  // units of layers [0, this) are transformer layers
  int tp = 1;
  bool sp = false;
  double tp_bytes = 0;  // bytes of a tensor-parallel collective: micro-batch x sequence x hidden
  Dtype dtype = Dtype::FP16;

};

struct PassLabel {
  ComputePass pass = ComputePass::FORWARD;
  int micro_batch = -1;
  int chunk = 0;
  int step = 0;
};

// Emits `unit`'s work in `label.pass`; the first instruction waits for `first_after`, the last
// carries `end_effects` too (parameters freed when the compute is done). Returns the index of
// the last instruction (the one whose end is the pass's end).
int emit_unit_pass(ProgramWriter& w, const UnitWork& work, int unit, const PassLabel& label,
                   const Deps& first_after, const MemEffects& end_effects = {});

// The activation bytes of a model and strategy, per rank.
ActivationSizes activation_sizes(const wl::ModelSpec& m, const wl::Strategy& s);

// Whether unit `u` is the first of its layer's units (a layer's checkpoint is taken before it).
bool first_of_layer(const std::vector<UnitCost>& units, int u);

// The work of `units` (kept by pointer: they must outlive it) for a model and strategy: their
// activations, recompute, tensor-parallel collectives and the dtype they travel in.
UnitWork unit_work(const wl::ModelSpec& m, const wl::Strategy& s, const std::vector<UnitCost>& units);

}  // namespace trainsim::sim
