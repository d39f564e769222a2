#pragma once
// The spellings users write for every workloads enum, in one place. The first spelling of a value
// is the canonical one printed back; later ones are accepted aliases.

#include <array>
#include <string_view>
#include <utility>

#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::wl::names {

template <class E, std::size_t N>
using Table = std::array<std::pair<E, std::string_view>, N>;

inline constexpr Table<NormKind, 2> NORM{{{NormKind::LAYERNORM, "layernorm"}, {NormKind::RMSNORM, "rmsnorm"}}};
inline constexpr Table<MlpKind, 2> MLP{{{MlpKind::GELU, "gelu"}, {MlpKind::SWIGLU, "swiglu"}}};
inline constexpr Table<PositionKind, 2> POSITION{{{PositionKind::LEARNED, "learned"}, {PositionKind::ROTARY, "rotary"}}};
inline constexpr Table<HeadKind, 2> HEAD{{{HeadKind::LM, "lm"}, {HeadKind::BERT_PRETRAINING, "bert_pretraining"}}};
inline constexpr Table<Numerics, 4> NUMERICS{{{Numerics::FP16_MIXED, "fp16-mixed"},
                                              {Numerics::BF16_MIXED, "bf16-mixed"},
                                              {Numerics::BF16, "bf16"},
                                              {Numerics::FP32, "fp32"}}};
inline constexpr Table<AttentionImpl, 2> ATTENTION{
    {{AttentionImpl::MATERIALIZED, "materialized"}, {AttentionImpl::FLASH, "flash"}}};
inline constexpr Table<Schedule, 6> SCHEDULE{{{Schedule::GPIPE, "gpipe"},
                                             {Schedule::ONE_F_ONE_B, "1f1b"},
                                             {Schedule::INTERLEAVED, "interleaved"},
                                             {Schedule::PIPEDREAM, "pipedream"},
                                             {Schedule::TWO_BW, "2bw"},
                                             {Schedule::HYDRA, "hydra"}}};
inline constexpr Table<OffloadTarget, 3> OFFLOAD{
    {{OffloadTarget::NONE, "none"}, {OffloadTarget::CPU, "cpu"}, {OffloadTarget::NVME, "nvme"}}};
inline constexpr Table<ActivationOffload, 2> ACTIVATION_OFFLOAD{
    {{ActivationOffload::NONE, "none"}, {ActivationOffload::CPU, "cpu"}}};
inline constexpr Table<StackKind, 9> STACK{{{StackKind::IDEALIZED, "idealized"},
                                           {StackKind::MEGATRON, "megatron"},
                                           {StackKind::DEEPSPEED, "deepspeed"},
                                           {StackKind::DEEPSPEED_0_3, "deepspeed-0.3"},
                                           {StackKind::PYTORCH, "pytorch"},
                                           {StackKind::PYTORCH_DDP, "pytorch-ddp"},
                                           {StackKind::PYTORCH_FSDP, "pytorch-fsdp"},
                                           {StackKind::PYTORCH_PIPELINING, "pytorch-pipelining"},
                                           {StackKind::TRAINSIM_REFERENCE, "trainsim-reference"}}};
inline constexpr Table<TensorDtype, 3> TENSOR_DTYPE{
    {{TensorDtype::BF16, "bf16"}, {TensorDtype::FP16, "fp16"}, {TensorDtype::FP32, "fp32"}}};
inline constexpr Table<Recompute, 3> RECOMPUTE{
    {{Recompute::NONE, "none"}, {Recompute::SELECTIVE, "selective"}, {Recompute::FULL, "full"}}};

template <class E, std::size_t N>
constexpr std::string_view name_of(E value, const Table<E, N>& table) {
  for (const auto& [v, n] : table) {
    if (v == value) return n;
  }
  return "?";
}

template <class E, std::size_t N>
constexpr const E* parse(std::string_view text, const Table<E, N>& table) {
  for (const auto& entry : table) {
    if (entry.second == text) return &entry.first;
  }
  return nullptr;
}

}  // namespace trainsim::wl::names
