#include "memory_model.hpp"

#include <algorithm>
#include <cmath>

#include "activation_memory.hpp"
#include "model_params.hpp"
#include "reference_stack.hpp"
#include "stack_layer.hpp"
#include "stage_partition.hpp"
#include "training_stack.hpp"

namespace trainsim::wl {

StateBytes state_bytes(Numerics n) {
  switch (n) {
    case Numerics::FP16_MIXED:
    case Numerics::BF16_MIXED: return {2, 2, 12};
    case Numerics::BF16: return {2, 2, 4};    // Adam moments kept in bf16, no master copy
    case Numerics::FP32: return {4, 4, 8};    // fp32 weights and gradients, fp32 moments
  }
  return {};
}

double StageMemory::gpu_bytes() const {
  const double resident = params_at.gpu + grads_at.gpu + optimizer_at.gpu + buffers.gathered_params_bytes +
                          buffers.staging_bytes + buffers.comm_bucket_bytes + buffers.weight_stash_bytes +
                          buffers.receive_buffer_bytes;
  const double end_of_forward = activations.at.gpu + buffers.logits_loss_bytes + activations.autocast_cache_bytes;
  const double first_recompute = activations.at.gpu - activations.head_bytes + activations.working_bytes;
  return resident + std::max(end_of_forward, first_recompute);
}
double StageMemory::cpu_bytes() const {
  return params_at.cpu + grads_at.cpu + optimizer_at.cpu + activations.at.cpu + buffers.pinned_host_bytes;
}
double StageMemory::nvme_bytes() const { return params_at.nvme + grads_at.nvme + optimizer_at.nvme; }

bool gradients_accumulate_on_gpu(const Strategy& s) {
  return s.offload_optimizer != OffloadTarget::NONE && s.zero_stage < 2 && !s.l2l && s.schedule != Schedule::HYDRA;
}

double in_flight_microbatches(const Strategy& s, int stage) {
  const double m = static_cast<double>(s.micro_batches());
  if (s.pp == 1) return 1.0;  // gradient accumulation runs micro-batches one after another
  switch (s.schedule) {
    // GPipe (Huang et al. 2019): every micro-batch's forward runs before any backward.
    case Schedule::GPIPE: return m;
    // 1F1B (PipeDream-Flush, 2BW; Narayanan et al. 2021 Sec. 2.2.1): stage i warms up with p - i
    // forwards before its first backward.
    case Schedule::ONE_F_ONE_B:
    case Schedule::TWO_BW: return std::min(m, static_cast<double>(s.pp - stage));
    // PipeDream never flushes: the next step's micro-batches keep entering, so in the steady state
    // stage i holds p - i however few micro-batches a step has (Narayanan et al. 2019 Sec. 3.2).
    case Schedule::PIPEDREAM: return static_cast<double>(s.pp - stage);
    // Interleaved 1F1B (Megatron-LM schedules.py): (p - i - 1) * 2 + (v - 1) * p warm-up chunks
    // plus the one in steady state, each chunk 1/v of the stage's layers; on the first stage this
    // is p (1 + (p - 1)/(p v)) stage micro-batches (Korthikanti et al. 2022, Sec. 4.3).
    case Schedule::HYDRA: return 1.0;  // one GPU, micro-batches one after another
    case Schedule::INTERLEAVED: {
      const double chunks = std::min(m * s.vpp, static_cast<double>((s.pp - stage - 1) * 2 + (s.vpp - 1) * s.pp + 1));
      return chunks / s.vpp;
    }
  }
  return 1.0;
}

namespace {

Placement place(double bytes, OffloadTarget where) {
  Placement p;
  if (where == OffloadTarget::CPU) p.cpu = bytes;
  else if (where == OffloadTarget::NVME) p.nvme = bytes;
  else p.gpu = bytes;
  return p;
}

// ZeRO pads each partition to a whole number of elements per rank.
double shard(double elems, int dp) { return std::ceil(elems / dp); }

// Weight versions a stage keeps (PipeDream, Narayanan et al. 2019 Sec. 3.3: one per in-flight
// micro-batch; PipeDream-2BW, Narayanan et al. 2021: two, double-buffered).
double weight_versions(const Strategy& s, int stage) {
  if (s.pp == 1) return 1;
  if (s.schedule == Schedule::PIPEDREAM) return s.pp - stage;  // one per micro-batch in flight (above)
  // 2BW double-buffers where micro-batches of the next step are in flight when a stage updates
  // (its p - i - 1 warm-up forwards); the last stage has none and updates in place.
  if (s.schedule == Schedule::TWO_BW) return s.pp - stage > 1 ? 2 : 1;
  return 1;
}

void model_states(const ModelSpec& m, const Strategy& s, StageMemory& st, int gpus_per_node) {
  const StackStates ss = stack_states(s.stack, m.numerics, s.zero_stage, s.micro_batches());
  const StateBytes b{ss.params, ss.grads, ss.optimizer};
  const double psi = st.params_on_rank;
  // ZeRO Sec. 5 (Table 1): stage 1 partitions optimizer states, stage 2 also gradients, stage 3
  // also parameters, each over the data-parallel degree N_d (a stack may shard more: FSDP2).
  const double p_elems = ss.shard_params ? shard(psi, s.dp) : psi;
  const double g_elems = ss.shard_grads ? shard(psi, s.dp) : psi;
  const double o_elems = ss.shard_optimizer ? shard(psi, s.dp) : psi;
  st.params_bytes = p_elems * b.params;
  st.grads_bytes = g_elems * b.grads;
  st.optimizer_bytes = o_elems * b.optimizer;
  if (s.schedule == Schedule::HYDRA) {
    // Hydra keeps each GPU's whole model (its states too) in host memory and promotes one shard at
    // a time (Nagrecha & Kumar 2021); the GPU's double buffer is charged under buffers.
    st.params_bytes = psi * b.params;
    st.grads_bytes = psi * b.grads;
    st.optimizer_bytes = psi * b.optimizer;
    st.params_at = place(st.params_bytes, OffloadTarget::CPU);
    st.grads_at = place(st.grads_bytes, OffloadTarget::CPU);
    st.optimizer_at = place(st.optimizer_bytes, OffloadTarget::CPU);
    return;
  }
  if (s.l2l) {
    // L2L keeps one copy of the model states per node in host memory (its eager parameter
    // server); each of the node's ranks is charged an equal share of it.
    const double share = 1.0 / std::min(s.gpus, gpus_per_node);
    st.params_bytes = psi * b.params * share;
    st.grads_bytes = psi * b.grads * share;
    st.optimizer_bytes = psi * b.optimizer * share;
    st.params_at = place(st.params_bytes, OffloadTarget::CPU);
    st.grads_at = place(st.grads_bytes, OffloadTarget::CPU);
    st.optimizer_at = place(st.optimizer_bytes, OffloadTarget::CPU);
    return;
  }
  // A stack that casts each unit's shard from the master per gather keeps no 16-bit shard on the GPU.
  if (!ss.keeps_param_shard && s.offload_params == OffloadTarget::NONE) st.params_bytes = 0;
  st.params_at = place(st.params_bytes, s.offload_params);
  st.optimizer_at = place(st.optimizer_bytes, s.offload_optimizer);
  // ZeRO-Offload (Ren et al. 2021, Sec. 4.1) moves the gradient partition to the host with the
  // optimizer; ZeRO-Infinity keeps it beside the optimizer states it updates.
  st.grads_at = place(st.grads_bytes, s.offload_optimizer);
  if (gradients_accumulate_on_gpu(s)) {
    // Below ZeRO-2 the backward does not partition gradients: every micro-batch adds into the
    // 16-bit .grad of every parameter on the GPU, reduced once after the last micro-batch, and only
    // then is the optimizer's partition copied to its tier (DeepSpeed 0.16.5,
    // deepspeed/runtime/zero/stage_1_and_2.py: reduce_ready_partitions_and_remove_grads reduces
    // before the accumulation boundary only when partition_gradients, i.e. stage 2;
    // copy_grads_in_partition then copies the partition to the CPU's fp32 buffer).
    const double on_gpu = psi * state_bytes(m.numerics).grads;
    const double partition = o_elems * b.grads;
    st.grads_bytes = on_gpu + partition;
    st.grads_at = place(partition, s.offload_optimizer);
    st.grads_at.gpu = on_gpu;
  }
}

// Layers whose activations stage `stage` of an interleaved pipeline holds at its peak, the end of
// its warm-up: Megatron-LM's order of forward chunks on a rank (schedules.py,
// get_model_chunk_id: p micro-batches through chunk 0, the same p through chunk 1, ..., then the
// next p), its first min(m v, (p - i - 1) 2 + (v - 1) p + 1) chunks, each with the layers the
// partition gave that virtual stage (the first and last hold fewer where the ends cost more).
double interleaved_layers_in_flight(const Strategy& s, const StagePartition& part, int stage) {
  const long long m = s.micro_batches(), p = s.pp, v = s.vpp;
  const long long n = std::min(m * v, (p - stage - 1) * 2 + (v - 1) * p + 1);
  double layers = 0;
  for (long long k = 0; k < n; ++k) {
    const long long chunk = (k / p) % v;
    layers += part.layer_count(static_cast<int>(chunk * p + stage));
  }
  return layers;
}

void activations(const ModelSpec& m, const Strategy& s, StageMemory& st, int stage_layers, const StagePartition& part) {
  ActivationMemory& a = st.activations;
  const ActivationShape shape{s.seq, s.micro_batch, s.tp, s.sp, s.recompute};
  LayerActivations layer = layer_activation_bytes(m, shape);
  // A stack's own saved tensors (workloads/training_stacks.md); under activation checkpointing each
  // layer keeps its input, and the layer being recomputed all of them.
  if (s.stack.is_pytorch()) {
    layer.full = torch_layer_saved_bytes(m, s);
    layer.stored = s.recompute == Recompute::FULL ? torch_layer_checkpoint_bytes(m, s) : layer.full;
    a.autocast_cache_bytes = stage_layers * torch_autocast_cache_bytes(m, s);
  }
  const ReferenceActivations ref = reference_activations(m, s);
  if (s.stack.is_reference()) layer = {ref.stored, ref.full};
  // DeepSpeed's partitioned checkpoints (Strategy::partition_activations): a rank keeps 1/tp of
  // each; the recompute's working set (layer.full) holds the gathered whole.
  if (s.partition_activations && s.recompute == Recompute::FULL && s.tp > 1) layer.stored /= s.tp;
  a.layers = stage_layers;
  a.in_flight_microbatches = in_flight_microbatches(s, st.stage);
  a.per_layer_stored_bytes = layer.stored;
  a.per_layer_full_bytes = layer.full;
  const double layers_in_flight = s.pp > 1 && s.schedule == Schedule::INTERLEAVED
                                      ? interleaved_layers_in_flight(s, part, st.stage)
                                      : a.layers * a.in_flight_microbatches;
  const double layer_bytes = layers_in_flight * layer.stored;
  if (s.recompute == Recompute::FULL) {
    a.checkpoint_bytes = layer_bytes;
    a.working_bytes = layer.full;
  } else {
    a.stored_bytes = layer_bytes;
    // Selective recompute re-materializes one layer's attention matrix during its backward.
    if (s.recompute == Recompute::SELECTIVE) a.working_bytes = layer.full - layer.stored;
  }
  const double embedding = s.stack.is_reference() ? ref.embedding : embedding_activation_bytes(m, shape);
  const double output = s.stack.is_reference() ? ref.output : output_norm_activation_bytes(m, shape);
  if (st.stage == 0) a.stored_bytes += embedding * a.in_flight_microbatches;
  // Micro-batches whose head (final norm, logits) the last stage holds at once: every one under
  // GPipe; otherwise the one between its last chunk's forward and backward, since 1F1B's last stage
  // (p - i = 1) and the interleaved schedule's (after its warm-up of the earlier chunks, Megatron-LM
  // schedules.py) run each last-chunk backward right after its forward.
  const double head_in_flight = s.pp > 1 && s.schedule != Schedule::GPIPE ? 1.0 : a.in_flight_microbatches;
  if (st.stage == s.pp - 1) {
    // The reference's final LayerNorm buffers exist once (its head runs forward and backward at once).
    a.stored_bytes += output * (s.stack.is_reference() ? 1.0 : head_in_flight);
    a.head_bytes = s.stack.is_reference() ? 0.0 : output;
  }
  a.at.gpu = a.stored_bytes + a.checkpoint_bytes;
  if (s.schedule == Schedule::HYDRA) {
    // Each shard's input is kept in host memory; the shard reruns its forward before its backward,
    // so its layers' activations are alive at once during that visit (Hydra's Backward task).
    const int per_shard = static_cast<int>((m.layers + s.shards - 1) / s.shards);
    a.layers = per_shard;
    a.stored_bytes = 0;
    a.checkpoint_bytes = s.shards * residual_tensor_bytes(m, s.micro_batch, s.seq);
    a.working_bytes = per_shard * layer.full;
    a.at.gpu = 0;
    a.at.cpu = a.checkpoint_bytes;
    a.head_bytes = 0;
    st.buffers.logits_loss_bytes = logits_bytes(m, shape);
    return;
  }
  if (s.offload_activations == ActivationOffload::CPU) {
    // ZeRO-Infinity Sec. 5.1.2: every checkpoint goes to host memory; two layers' worth of GPU
    // memory stay as the write-out and prefetch buffers.
    const double resident = std::min(a.checkpoint_bytes, 2.0 * layer.stored);
    a.at.cpu = a.checkpoint_bytes;
    a.at.gpu = a.stored_bytes + resident;
  }
  st.buffers.logits_loss_bytes =
      st.stage == s.pp - 1 ? logits_bytes(m, shape) * std::min(head_in_flight, 1.0 * s.micro_batches()) : 0;
  if (s.stack.is_pytorch() && st.stage == s.pp - 1) {
    // Each in-flight micro-batch's loss tensors, and the backward of one log_softmax.
    const TorchLossBytes loss = torch_loss_bytes(m, s);
    st.buffers.logits_loss_bytes = loss.kept * std::min(head_in_flight, 1.0 * s.micro_batches()) + loss.backward_extra;
  }
  if (s.stack.is_reference()) st.buffers.logits_loss_bytes = 0;  // in its resident buffers
  if (s.stack.kind == StackKind::PYTORCH_PIPELINING && s.pp > 1) {
    // torch.distributed.pipelining allocates a receive buffer per micro-batch and keeps them across
    // steps (PipelineStage: one per micro-batch for the activation a non-first stage receives, one
    // for the gradient a non-last stage receives of its output; training_stacks.md). A received
    // activation is the first layer's saved input while its micro-batch is in flight, which the
    // layers' saved tensors already count; the buffers of the micro-batches not in flight come on top.
    const double boundary = residual_tensor_bytes(m, s.micro_batch, s.seq);
    const double M = static_cast<double>(s.micro_batches());
    if (st.stage < s.pp - 1) st.buffers.receive_buffer_bytes += M * boundary;
    if (st.stage > 0) st.buffers.receive_buffer_bytes += std::max(0.0, M - a.in_flight_microbatches) * boundary;
  }

}

void buffers(const ModelSpec& m, const Strategy& s, StageMemory& st, bool modeled) {
  const StateBytes b = state_bytes(m.numerics);
  BufferMemory& buf = st.buffers;
  const double psi = st.params_on_rank;
  const ZeroBuffers& z = s.buffers;
  if (s.l2l && modeled) {
    // The layer being computed and the next one (prefetched), and a bucket of gradients.
    const RankParams r = rank_params(m, s.tp);
    const double largest = std::max({r.per_layer, r.embedding, r.head});
    buf.staging_bytes = 2.0 * largest * b.params;
    buf.comm_bucket_bytes = std::min(z.ddp_bucket_bytes, psi * b.grads);
  } else if (s.zero_stage == 0) {
    buf.comm_bucket_bytes = std::min(z.ddp_bucket_bytes, psi * b.grads);
  } else if (s.zero_stage <= 2) {
    // DeepSpeed stages 1-2: the reduction bucket fills during backward, the all-gather bucket
    // after the step; they are not alive together.
    buf.comm_bucket_bytes = std::min(std::max(z.reduce_bucket_elems, z.allgather_bucket_elems), psi) * b.grads;
  } else {
    buf.comm_bucket_bytes = std::min(z.reduce_bucket_elems, psi) * b.grads;
    if (modeled && !s.l2l) {
      // ZeRO-3 gathers one unit (submodule) at a time and prefetches the next while computing:
      // at most two consecutive units are gathered (DeepSpeed's coordinator always prefetches
      // the next submodule, whatever stage3_prefetch_bucket_size says, and frees after use).
      buf.gathered_params_bytes = largest_adjacent_gather(m, s.tp) * b.params;
      if (s.offload_params != OffloadTarget::NONE) {
        // ZeRO-Infinity reads each rank's shard of the next two units ahead of their gather.
        double largest = 0;
        for (const GatherUnit& u : gather_units(m, s.tp)) largest = std::max(largest, u.params);
        buf.staging_bytes = 2.0 * shard(largest, s.dp) * b.params;
      }
    }
  }
  if (s.offload_params == OffloadTarget::NVME) {
    buf.pinned_host_bytes += z.offload_param_buffer_count * z.offload_param_buffer_elems * b.params;
  }
  if (s.offload_optimizer == OffloadTarget::NVME) {
    // Optimizer swapping streams fp32 sub-groups through pinned host buffers.
    buf.pinned_host_bytes += z.offload_optimizer_buffer_count * std::min(z.sub_group_elems, shard(psi, s.dp)) * 4.0;
  }
  if (s.schedule == Schedule::HYDRA && modeled) {
    // Double buffering: the shard being computed and the next one, each with its gradients and
    // optimizer states (the shard's optimizer step runs on the GPU).
    // Shard k holds layers [k L / N, (k + 1) L / N), the embedding on the first, the head on the
    // last; two consecutive shards are on the GPU at once (visits run 0 .. N-1, then N-2 .. 0).
    const RankParams r = rank_params(m, s.tp);
    const int L = static_cast<int>(m.layers), N = s.shards;
    auto shard = [&](int k) {
      return ((k + 1) * L / N - k * L / N) * r.per_layer + (k == 0 ? r.embedding : 0.0) + (k == N - 1 ? r.head : 0.0);
    };
    double pair = shard(0);
    for (int k = 0; k + 1 < N; ++k) pair = std::max(pair, shard(k) + shard(k + 1));
    buf.staging_bytes = pair * (b.params + b.grads + b.optimizer);
    buf.comm_bucket_bytes = 0;
  }
  if (s.stack.is_pytorch() && modeled) {
    // PyTorch's own buffers (workloads/training_stacks.md): DDP's buckets beside .grad; FSDP2's
    // gathered bf16 units (every layer from its forward to its backward without resharding, else
    // two layers) plus the root (unsharded throughout under FSDP2's default), and a layer's
    // unsharded bf16 gradients with their reduce_dtype copy during its reduce-scatter: an upper
    // bound on what is alive at once (the replay allocates and frees them as FSDP2 does).
    const StackStates ss = stack_states(s.stack, m.numerics, s.zero_stage, s.micro_batches());
    buf.comm_bucket_bytes = ss.bucket_copy * psi;
    buf.gathered_params_bytes = 0;
    buf.staging_bytes = 0;
    if (s.stack.kind == StackKind::PYTORCH_FSDP) {
      const RankParams r = rank_params(m, s.tp);
      const double e = dtype_bytes(s.stack.param_dtype);
      const double root = r.embedding + r.head;
      buf.gathered_params_bytes = (s.zero_stage >= 3 ? 2.0 * r.per_layer + root : psi) * e;
      buf.comm_bucket_bytes = r.per_layer * (2.0 + dtype_bytes(s.stack.reduce_dtype));
    }
  }
  if (s.stack.is_reference() && modeled) {
    // The reference's static arena (training_stacks.md, "trainsim-reference"): its work buffers,
    // the head's logits and ZeRO-3's full-unit gradient buffers exist for the whole step.
    buf.comm_bucket_bytes = reference_resident_bytes(m, s, st.stage == s.pp - 1);
    buf.staging_bytes = 0;
  }
  const double versions = weight_versions(s, st.stage);
  buf.weight_stash_bytes = (versions - 1) * st.params_at.gpu;
}

}  // namespace

MemoryEstimate estimate_memory(const ModelSpec& m, const Strategy& s, int gpus_per_node) {
  MemoryEstimate est;
  est.total_params = total_params(m);
  est.activations_modeled = m.has_architecture();
  if (!est.activations_modeled) {
    est.assumptions.push_back("--params gives model states only: activations and ZeRO-3 gather buffers are not computed");
  }
  const StagePartition partition = est.activations_modeled ? partition_stages(m, s) : StagePartition{};
  for (int stage = 0; stage < s.pp; ++stage) {
    StageMemory st;
    st.stage = stage;
    const int layers = est.activations_modeled ? partition.stage_layers(stage) : -1;
    st.params_on_rank = stage_params_per_rank(m, stage, s.pp, s.tp, layers);
    model_states(m, s, st, gpus_per_node);
    if (est.activations_modeled) activations(m, s, st, layers, partition);
    buffers(m, s, st, est.activations_modeled);
    est.stages.push_back(st);
  }
  for (std::size_t i = 1; i < est.stages.size(); ++i) {
    if (est.stages[i].gpu_bytes() > est.stages[est.peak_stage].gpu_bytes()) est.peak_stage = static_cast<int>(i);
  }
  // Ranks are laid out as Megatron-LM does: tensor-parallel ranks adjacent, then data-parallel,
  // then pipeline stages; node n holds ranks [n G, (n + 1) G).
  const int ranks_per_stage = s.tp * s.dp;
  const int nodes = (s.gpus + gpus_per_node - 1) / gpus_per_node;
  for (int node = 0; node < nodes; ++node) {
    NodeMemory nm;
    for (int r = node * gpus_per_node; r < std::min(s.gpus, (node + 1) * gpus_per_node); ++r) {
      const StageMemory& st = est.stages[static_cast<std::size_t>(r / ranks_per_stage)];
      nm.cpu_bytes += st.cpu_bytes();
      nm.nvme_bytes += st.nvme_bytes();
    }
    if (node == 0 || nm.cpu_bytes + nm.nvme_bytes > est.peak_node.cpu_bytes + est.peak_node.nvme_bytes) {
      est.peak_node = nm;
      est.peak_node_index = node;
    }
  }
  return est;
}

}  // namespace trainsim::wl
