#pragma once
// The reference step's GPT on one GPU: forward, cross-entropy and backward of one micro-batch,
// with activation checkpointing per layer as an option (Chen et al. 2016: keep each layer's
// input, recompute the layer in backward), those inputs kept on the GPU or, with host
// checkpoints, in host memory (ref_checkpoints.hpp). Parameters and gradients come from a
// ParamStore (one GPU or ZeRO-3); GEMMs from GemmRunner; every other op is in ref_kernels.cu.

#include <cstdint>
#include <memory>
#include <vector>

#include "../reference/gpt_layout.hpp"
#include "ref_arena.hpp"
#include "ref_checkpoints.hpp"
#include "ref_op_profile.hpp"
#include "ref_gemm.hpp"
#include "ref_kernels.hpp"
#include "ref_param_store.hpp"

namespace trainsim::calibrate::ref {

// The layers a GptGpu runs: all of them (single GPU, ZeRO-3), or one pipeline stage's, with
// activations kept for `slots` micro-batches in flight.
struct StageSpec {
  int first_layer = 0, end_layer = -1;  // [first, end); end -1: the last layer
  bool embed = true, head = true;       // runs the embedding / final LayerNorm, head and loss
  int slots = 1;
};

class GptGpu {
 public:
  // host_checkpoints (with recompute, whole model, one slot: forward_backward only): the layer
  // inputs x(0) .. x(L-1) live in pinned host memory; on the GPU a ring of three residual
  // buffers (layer l reads x(l) from ring l % 3 and writes x(l + 1) into ring (l + 1) % 3) and
  // x(L), which the head reads.
  GptGpu(const GptConfig& c, const ParamLayout& layout, bool recompute, StageSpec stage = {},
         bool host_checkpoints = false);
  void allocate(Arena& arena);
  // One micro-batch: loss_sum += mean loss * loss_scale; gradients += d(mean loss * grad_scale).
  void forward_backward(const std::int32_t* tokens, const std::int32_t* targets, float* loss_sum, float grad_scale,
                        float loss_scale, ParamStore& store, GemmRunner& gemm, cudaStream_t s);
  // Pipeline stage, parameters held whole by `store` (no ZeRO). forward: from the embedding or
  // from input(slot), through the stage's layers, to output(slot) or, on the last stage, the loss
  // and the head's backward (its input gradient kept per slot). backward: from grad_input() (or
  // the kept head gradient) back through the layers to grad_input() again, or the embedding.
  void stage_forward(int slot, const std::int32_t* tokens, const std::int32_t* targets, float* loss_sum,
                     float grad_scale, float loss_scale, ParamStore& store, GemmRunner& gemm, cudaStream_t s);
  void stage_backward(int slot, const std::int32_t* tokens, ParamStore& store, GemmRunner& gemm, cudaStream_t s);
  float* input(int slot) { return x_[slot].front(); }
  float* output(int slot) { return x_[slot].back(); }
  float* grad_input() { return dx_; }
  // Charge every following operation of the compute stream to `p` (nullptr: off).
  void set_profile(OpProfile* p) { prof_ = p; }
  // With host checkpoints: their copy streams' busy time and bytes (nullptr without).
  HostCheckpoints* host_checkpoints() { return host_.get(); }

 private:
  struct Acts {
    bf16 *ln1 = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *p = nullptr, *attn = nullptr, *ln2 = nullptr,
         *pre = nullptr, *act = nullptr;
    float *ln1_mean = nullptr, *ln1_rstd = nullptr, *x_mid = nullptr, *ln2_mean = nullptr, *ln2_rstd = nullptr;
  };
  const bf16* w(const bf16* unit, int l, LayerTensor t) const;
  float* g(float* unit, int l, LayerTensor t) const;
  // Layer l from x(slot, l) into acts; writes x(slot, l + 1) unless `recomputing`.
  void layer_forward(int slot, int l, const bf16* pu, Acts& a, bool recomputing, GemmRunner& gemm, cudaStream_t s);
  void layer_backward(int slot, int l, const bf16* pu, float* gu, Acts& a, GemmRunner& gemm, cudaStream_t s);
  Acts& acts(int slot, int l) { return acts_[slot][recompute_ ? 0 : l - st_.first_layer]; }
  float* x(int slot, int l) {
    if (host_) return l == st_.end_layer ? top_ : ring_[static_cast<std::size_t>(l % RING)];
    return x_[slot][l - st_.first_layer];
  }
  // The final LayerNorm, logits, loss and the head's backward into dx_top (grads of wte, lnf).
  void head(int slot, const std::int32_t* targets, float* loss_sum, float grad_scale, float loss_scale,
            ParamStore& store, GemmRunner& gemm, cudaStream_t s, float* dx_top);

  void tick(const char* op, cudaStream_t s) {
    if (prof_ != nullptr) prof_->mark(op, s);
  }

  OpProfile* prof_ = nullptr;
  GptConfig c_;
  const ParamLayout& layout_;
  bool recompute_;
  StageSpec st_;
  std::vector<std::vector<float*>> x_;  // per slot: the residual stream at each layer boundary of the stage
  // Host checkpoints: three buffers are enough for the forward (x(l) read, x(l + 1) written, x(l - 1)
  // still being copied out) and the backward (x(l) in use, x(l - 1) being copied in).
  static constexpr int RING = 3;
  std::unique_ptr<HostCheckpoints> host_;
  std::vector<float*> ring_;
  float* top_ = nullptr;
  std::vector<std::vector<Acts>> acts_;  // per slot, per layer (one when recomputing)
  std::vector<float*> dtop_;            // last pipeline stage: the head's input gradient per slot
  float *scratch_ = nullptr, *scores_ = nullptr, *dx_ = nullptr, *logits_ = nullptr, *lnf_mean_ = nullptr,
        *lnf_rstd_ = nullptr;
  bf16 *ds_ = nullptr, *da_ = nullptr, *db_ = nullptr, *lnf_ = nullptr, *dlogits_ = nullptr;
};

}  // namespace trainsim::calibrate::ref
