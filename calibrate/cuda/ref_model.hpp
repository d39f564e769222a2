#pragma once
// The reference step's GPT on one GPU: forward, cross-entropy and backward of one micro-batch,
// with activation checkpointing per layer as an option (Chen et al. 2016: keep each layer's
// input, recompute the layer in backward). Parameters and gradients come from a ParamStore
// (one GPU or ZeRO-3); GEMMs from GemmRunner; every other op is in ref_kernels.cu.

#include <cstdint>
#include <vector>

#include "../reference/gpt_layout.hpp"
#include "ref_arena.hpp"
#include "ref_gemm.hpp"
#include "ref_kernels.hpp"
#include "ref_param_store.hpp"

namespace trainsim::calibrate::ref {

class GptGpu {
 public:
  GptGpu(const GptConfig& c, const ParamLayout& layout, bool recompute) : c_(c), layout_(layout), recompute_(recompute) {}
  void allocate(Arena& arena);
  // One micro-batch: loss_sum += mean loss * loss_scale; gradients += d(mean loss * grad_scale).
  void forward_backward(const std::int32_t* tokens, const std::int32_t* targets, float* loss_sum, float grad_scale,
                        float loss_scale, ParamStore& store, GemmRunner& gemm, cudaStream_t s);

 private:
  struct Acts {
    bf16 *ln1 = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *p = nullptr, *attn = nullptr, *ln2 = nullptr,
         *pre = nullptr, *act = nullptr;
    float *ln1_mean = nullptr, *ln1_rstd = nullptr, *x_mid = nullptr, *ln2_mean = nullptr, *ln2_rstd = nullptr;
  };
  const bf16* w(const bf16* unit, int l, LayerTensor t) const;
  float* g(float* unit, int l, LayerTensor t) const;
  // Layer l from x_[l] into acts; writes x_[l + 1] unless `recomputing`.
  void layer_forward(int l, const bf16* pu, Acts& a, bool recomputing, GemmRunner& gemm, cudaStream_t s);
  void layer_backward(int l, const bf16* pu, float* gu, Acts& a, GemmRunner& gemm, cudaStream_t s);
  Acts& acts(int l) { return acts_[recompute_ ? 0 : l]; }

  GptConfig c_;
  const ParamLayout& layout_;
  bool recompute_;
  std::vector<float*> x_;  // residual stream at each layer boundary, L + 1 of [T, h]
  std::vector<Acts> acts_;
  float *scratch_ = nullptr, *scores_ = nullptr, *dx_ = nullptr, *logits_ = nullptr, *lnf_mean_ = nullptr,
        *lnf_rstd_ = nullptr;
  bf16 *ds_ = nullptr, *da_ = nullptr, *db_ = nullptr, *lnf_ = nullptr, *dlogits_ = nullptr;
};

}  // namespace trainsim::calibrate::ref
