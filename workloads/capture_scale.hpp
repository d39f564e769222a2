#pragma once
// Scaling a loaded capture to other values of its independent symbols (and L), as
// trainsim_capture/scale.py does (SCHEMA.md, "Scaling"): tied symbols are completed from
// symbol_space.ties, changing a fixed or a tied symbol is refused, every *_expr is evaluated
// again, buffers' alloc_bytes are rounded up to the allocator's block, list ops' kernels follow
// multi_tensor_apply (SCHEMA.md, "Kernels"), totals are summed again and the memory summary is
// replayed (capture_memory.hpp, as scale.py calls replay.py): CaptureMemory::current stays true.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "capture_document.hpp"
#include "model.hpp"

namespace trainsim::wl {

// Throws ConfigError (naming the capture and "symbols.<name>") for a capture without symbols, a
// symbol it does not have, a fixed or tied symbol changed, an expression that does not give an
// integer (or overflows) at the new values, or a step too long or too large to replay.
CaptureDocument scale_capture(const CaptureDocument& doc, const SymbolValues& changes);

// The symbols of a model (a Hugging Face config.json through load_model's reader, or a built-in
// one) with the run's micro-batch and sequence, as trainsim_capture.scale.symbols_from_hf_config
// reads them: h, a, kv, g = a/kv, d = h/a, f, V, P (the position table: ModelSpec::seq_len), L.
SymbolValues symbols_of_model(const ModelSpec& m, std::int64_t micro_batch, std::int64_t seq);

// The changes scale_capture takes to bring `doc` to `target` (from symbols_of_model): its
// independent symbols and L; throws ConfigError where a tied or fixed symbol of the target differs
// from what the capture's ties give (another architecture: scale_to_config refuses it too).
SymbolValues capture_changes_for(const CaptureDocument& doc, const SymbolValues& target);

// Kernel launches of one multi_tensor_apply over tensors of `numels` elements
// (trainsim_capture.opinfo.multi_tensor_apply_launches; PyTorch's MultiTensorApply.cuh).
std::int64_t multi_tensor_apply_launches(const std::vector<std::int64_t>& numels, int depth);

// The shortest p with v[i] == v[i % p] for every i (v.size() where nothing repeats; 1 for an empty
// v): a model's layer-kind pattern, which scaling repeats (scale_capture) and a config's
// layer_types must follow (committed_captures.cpp).
template <class Sequence>
std::size_t shortest_period(const Sequence& v) {
  std::size_t period = 1;
  while (period < v.size()) {
    bool repeats = true;
    for (std::size_t i = period; i < v.size() && repeats; ++i) repeats = v[i] == v[i % period];
    if (repeats) break;
    ++period;
  }
  return period;
}

}  // namespace trainsim::wl
