// trainsim-calibrate's reference step (calibrate/cuda/ref_*): our own step, one static arena
// (training_stacks.md, "trainsim-reference").
#include <fmt/format.h>

#include "reference_stack.hpp"
#include "stack_modules.hpp"

namespace trainsim::wl {
namespace {

void states(const TrainingStack&, Numerics, int zero_stage, std::int64_t, StackStates& st) {
  // bf16 parameters the GEMMs read (with one rank and on pipeline stages; under ZeRO-3 each
  // unit's shard is cast from the fp32 master per gather and not kept), fp32 gradients that
  // accumulate over micro-batches and are reduce-scattered in fp32, fp32 master weights and
  // Adam moments.
  st.params = 2;
  st.grads = 4;
  st.optimizer = 12;
  st.wire_grad = 4;
  st.keeps_param_shard = zero_stage < 3;
  // Its storage tier (calibrate/reference/storage_states.cpp, StorageStates::adam_step): chunks
  // of 4 Mi parameters (STATE_CHUNK_PARAMS, calibrate/reference/storage_states.hpp), two host
  // buffers, read c + 1 / CPU-Adam c / write c, both transfers waited for before chunk c + 1;
  // each transfer is a whole chunk (issue(): chunk_bytes(), the last chunk's too).
  st.storage_chunk_elems = 4.0 * 1024 * 1024;
  st.storage_lockstep = true;
  st.storage_whole_chunks = true;
  // Its ZeRO-3 schedule (calibrate/cuda/ref_param_store.cpp): whole layers gathered and
  // reduce-scattered one by one, a layer gathered once for its recompute and backward, host
  // copies of shards on the collective stream, each scattered shard added into a GPU gradient
  // shard (grads_done) that goes to the host after the last micro-batch, fp32 gradients kept
  // in pinned host memory beside storage (calibrate/reference/storage_states.cpp), and
  // whole-layer units whose head holds no tied embedding (unit_costs.cpp).
  st.whole_unit_collectives = true;
  st.gather_serves_recompute = true;
  st.shard_copies_on_collective_stream = true;
  st.accumulates_grad_shard_on_gpu = true;
  st.grads_stay_on_host = true;
  st.head_gathers_tied_embedding = false;
  // Its buffers (ref_param_store.cpp): zero_grads gathers the embedding and the final norm at the
  // start of every step into buffers of their own, kept for the step; acquire gathers a layer into
  // layer_full_[slot_of(unit)], slot_of = unit % 2, only where slot_unit_ does not already hold it,
  // so a pass's first two layers are the previous pass's last two and need no gather.
  st.gathers_ends_once_per_step = true;
  st.gather_slots = 2;
  st.row = "trainsim-reference";
}

void refusals(const Strategy& s, const ModelSpec& m, const StackNeed& need) {
  const bool raw = !m.has_architecture();
  need(s.tp == 1 && !s.l2l && s.schedule != Schedule::HYDRA, "tp = 1, no L2L or Hydra (what the reference runs)",
       fmt::format("tp {}", s.tp));
  need(s.recompute != Recompute::SELECTIVE, "recompute none or full (--recompute layer)", "selective");
  need(!raw && m.numerics == Numerics::BF16_MIXED, "a model architecture trained in bf16-mixed",
       raw ? std::string("--params") : std::string(to_string(m.numerics)));
}

// Its arena (reference_stack.hpp): per-slot layer buffers; the head's final LayerNorm buffers exist
// once (its head runs forward and backward at once) and its logits among the resident buffers.
void activations(const ModelSpec& m, const Strategy& s, StackActivations& a) {
  const ReferenceActivations r = reference_activations(m, s);
  a.stored = r.stored;
  a.full = r.full;
  a.embedding = r.embedding;
  a.output = r.output;
  a.logits_kept = 0;
  a.head_once = true;
}

// The static arena's work buffers, the head's logits and ZeRO-3's full-unit gradient buffers exist
// for the whole step.
void buffers(const ModelSpec& m, const Strategy& s, const StageMemory& st, BufferMemory& buf) {
  buf.comm_bucket_bytes = reference_resident_bytes(m, s, st.stage == s.pp - 1);
  buf.staging_bytes = 0;
}


StackModel make() {
  StackModel m;
  m.kind = StackKind::TRAINSIM_REFERENCE;
  m.gemm_in_step_table = false;
  m.reference_kernels = true;
  m.plannable = false;
  m.gpu_optimizer = GpuOptimizer::REFERENCE_ADAM;
  m.states = states;
  m.refusals = refusals;
  m.dispatch_key = dispatch_key_by_name;
  m.layer_cost = reference_layer_cost;
  m.output_cost = reference_output_cost;
  m.embedding_cost = reference_embedding_cost;
  m.activations = activations;
  m.buffers = buffers;
  return m;
}

}  // namespace

const StackModel& trainsim_reference_stack() {
  static const StackModel model = make();
  return model;
}

}  // namespace trainsim::wl
