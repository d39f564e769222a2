#pragma once
// The closed-form memory model: per GPU, what each tensor class takes and where it lives (GPU,
// CPU, NVMe); per node, host memory and NVMe in use. Hardware-free: the planner compares these
// bytes with a cluster profile. The simulator's memory timeline must agree with it wherever both
// describe the same thing.

#include <string>
#include <vector>

#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::wl {

struct Placement {
  double gpu = 0, cpu = 0, nvme = 0;
  double total() const { return gpu + cpu + nvme; }
};

// Bytes per model parameter of each model-state class under a numerics choice.
// ZeRO (Rajbhandari et al. 2020) Sec. 3.1: mixed-precision Adam keeps 2 bytes of fp16
// parameters, 2 of fp16 gradients and K = 12 of fp32 parameters, momentum and variance.
struct StateBytes {
  double params = 2, grads = 2, optimizer = 12;  // "K" in the ZeRO paper
};
StateBytes state_bytes(Numerics n);

struct ActivationMemory {
  int layers = 0;                     // transformer layers held by this rank
  double in_flight_microbatches = 0;  // stage-sized micro-batches alive at the peak
  double per_layer_stored_bytes = 0;  // one layer, one micro-batch, under the recompute policy
  double per_layer_full_bytes = 0;    // the same with nothing recomputed
  double checkpoint_bytes = 0;        // layer inputs kept under full recompute
  double stored_bytes = 0;            // everything else stored from forward to backward
  double working_bytes = 0;           // one layer re-materialized during its backward (full: all of
                                      // it; selective: its attention matrix)
  double head_bytes = 0;              // the final norm's activations (last stage), freed by the
                                      // head's backward before any recompute starts
  double autocast_cache_bytes = 0;    // autocast's 16-bit weight casts of the stage's layers, cached
                                      // until its forward returns: under activation checkpointing the
                                      // only place they live (otherwise saved with each layer)
  Placement at;                       // gpu: resident; cpu: offloaded checkpoints
};

struct BufferMemory {
  double gathered_params_bytes = 0;  // ZeRO-3: the unit in use and the next one; L2L: two layers
  double staging_bytes = 0;          // parameter shards fetched from CPU/NVMe, not yet gathered
  double comm_bucket_bytes = 0;      // gradient reduction (and stage 1-2 all-gather) buckets
  double logits_loss_bytes = 0;      // fp32 logits for the loss, last stage
  double weight_stash_bytes = 0;     // PipeDream / 2BW weight versions beyond the current one
  double receive_buffer_bytes = 0;   // torch.distributed.pipelining: per-micro-batch receive buffers
  double pinned_host_bytes = 0;      // CPU side: NVMe staging buffers (ZeRO-Infinity)
  double gpu_total() const {
    return gathered_params_bytes + staging_bytes + comm_bucket_bytes + logits_loss_bytes + weight_stash_bytes +
           receive_buffer_bytes;
  }
};

struct StageMemory {
  int stage = 0;
  double params_on_rank = 0;  // parameters this rank computes with (before ZeRO sharding)
  double params_bytes = 0, grads_bytes = 0, optimizer_bytes = 0;  // this rank's share, anywhere
  Placement params_at, grads_at, optimizer_at;
  ActivationMemory activations;
  BufferMemory buffers;

  double model_states_bytes() const { return params_bytes + grads_bytes + optimizer_bytes; }
  // The GPU's peak: model states and buffers, plus the larger of two moments: the end of the
  // forward (every stored activation and the logits) and the first recompute of the backward
  // (the logits and the final norm's activations already freed, one layer re-materialized).
  double gpu_bytes() const;
  double cpu_bytes() const;   // what this rank keeps in host memory
  double nvme_bytes() const;  // what this rank keeps on NVMe
};

struct NodeMemory {
  double cpu_bytes = 0;
  double nvme_bytes = 0;
};

struct MemoryEstimate {
  std::vector<StageMemory> stages;  // one per pipeline stage: all ranks of a stage are alike
  int peak_stage = 0;               // the stage with the most GPU memory
  NodeMemory peak_node;             // the node with the most host memory in use
  int peak_node_index = 0;
  double total_params = 0;
  bool activations_modeled = true;  // false for `--params` models: model states only
  std::vector<std::string> assumptions;
};

MemoryEstimate estimate_memory(const ModelSpec& m, const Strategy& s, int gpus_per_node);

// With the optimizer off the GPU and no gradient partitioning in the backward (ZeRO 0-1, not L2L or
// Hydra), the full gradients accumulate on the GPU over the micro-batches and only the reduced
// partition goes to the optimizer's tier, once per step (memory_model.cpp cites DeepSpeed).
bool gradients_accumulate_on_gpu(const Strategy& s);

// Stage-sized micro-batches whose activations stage `stage` holds at its peak.
double in_flight_microbatches(const Strategy& s, int stage);

}  // namespace trainsim::wl
