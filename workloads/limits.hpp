#pragma once
// How large a model and a step may be. Every source (our model JSON, a Hugging Face config,
// Megatron-LM arguments, a strategy JSON, a DeepSpeed config, command-line flags) checks its
// values against these bounds before anything is computed or allocated, so that no input can
// make trainsim allocate for a minute (10^9 layers did) or overflow a 64-bit product
// (seq x micro-batch x hidden, global batch x seq). The bounds are far beyond any model trained
// or planned: 10,000 layers, a hidden size of 2^20, a context of 2^24 tokens. workloads/README.md, "Limits".

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "strict_json.hpp"

namespace trainsim::wl {

struct IntLimit {
  std::int64_t min;
  std::int64_t max;
  // "an integer in [1, 10000]" (or ">= 1" when the bound is the only one that matters).
  std::string text() const;
  bool contains(std::int64_t v) const { return v >= min && v <= max; }
};

// An integer key of a JSON input, checked against its limit.
std::int64_t read_limited(StrictObject& o, std::string_view key, const IntLimit& limit);
std::optional<std::int64_t> read_optional_limited(StrictObject& o, std::string_view key, const IntLimit& limit);

namespace limits {
// Architecture.
inline constexpr IntLimit LAYERS{1, 10000};
inline constexpr IntLimit HIDDEN{1, std::int64_t{1} << 20};
inline constexpr IntLimit HEADS{1, std::int64_t{1} << 16};
inline constexpr IntLimit FFN_HIDDEN{1, std::int64_t{1} << 22};
inline constexpr IntLimit VOCAB{1, std::int64_t{1} << 24};
inline constexpr IntLimit SEQ{1, std::int64_t{1} << 24};
inline constexpr IntLimit TYPE_VOCAB{0, 1024};
// Parallelism and batch.
inline constexpr IntLimit GPUS{1, std::int64_t{1} << 24};
inline constexpr IntLimit NODES{1, std::int64_t{1} << 20};
inline constexpr IntLimit PARALLEL_DEGREE{1, std::int64_t{1} << 24};  // dp, tp, pp, vpp
inline constexpr IntLimit MICRO_BATCH{1, std::int64_t{1} << 20};
// Below 2^31: a step's micro-batches are counted in an int by the schedules and the replay.
inline constexpr IntLimit GLOBAL_BATCH{1, (std::int64_t{1} << 31) - 1};
inline constexpr IntLimit GRAD_ACCUM{1, (std::int64_t{1} << 31) - 1};
// A raw parameter count (`--params`): model states are computed in floating point.
inline constexpr double MAX_RAW_PARAMS = 1e21;
}  // namespace limits

}  // namespace trainsim::wl
