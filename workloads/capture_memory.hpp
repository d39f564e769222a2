#pragma once
// The memory replay of a capture (SCHEMA.md, "Memory replay"), as trainsim_capture/replay.py does
// it, for any layer count or layer sequence of the captured architecture: the step's ops in order
// (embed.forward; layer.forward of layers 0..L-1; head.forward; head.backward; layer.backward of
// layers L-1..0 with a checkpointed layer's recompute inside; embed.backward; the optimizer's
// segments), each buffer's copy allocated at its op and freed after the op its position names.
// The peak is the largest live total right after an op's allocations (the caching allocator's
// rounded bytes; no fragmentation, no reserved-but-free blocks).
//
//     const CaptureDocument doc = load_capture("workloads/captures/gpt_model_py.json");
//     const CaptureMemoryReplay r = replay_capture_memory(scale_capture(doc, {{"a", 32}, {"d", 128}}), 48);
//     r.memory.peak_bytes;   // the step's peak allocated bytes on the model's device
//     r.at_peak;             // what was live then, by buffer kind
//
// replay_capture_memory(doc) at the document's own layer sequence gives the document's memory
// summary, byte for byte (the tests hold every committed capture to it).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "capture_document.hpp"

namespace trainsim::wl {

// Live bytes by buffer kind (SCHEMA.md, "Buffers and positions"); the fields sum to the total.
struct CaptureMemoryBreakdown {
  std::int64_t param_bytes = 0;
  std::int64_t grad_bytes = 0;
  std::int64_t optimizer_state_bytes = 0;
  std::int64_t input_bytes = 0;       // token ids, targets and registered model buffers (rotary tables)
  std::int64_t activation_bytes = 0;  // everything an op of the step made, temporaries included
  std::int64_t host_copy_bytes = 0;   // param_host, grad_host: an offloaded optimizer's fp32 copies
  std::int64_t existing_bytes = 0;    // other tensors made before the step (optimizer step scalars)
  std::int64_t total_bytes() const;
  bool operator==(const CaptureMemoryBreakdown&) const = default;
};

struct CaptureMemoryReplay {
  CaptureMemory memory;          // replay.py's summary: layers, base, peak, peak_at, end, unplaced
  std::string peak_op;           // the ATen op at the peak; empty when the peak is before the step
  std::string peak_layer_kind;   // the layer kind at the peak (a layer phase or a layers segment)
  CaptureMemoryBreakdown at_peak;  // live at the peak (sums to memory.peak_bytes)
};

// Layer kinds in model order as [kind, run length] (CaptureDocument::layer_sequence's form).
using CaptureLayerSequence = std::vector<std::pair<std::string, std::int64_t>>;

// The document's own layer sequence (model.layer_sequence).
CaptureMemoryReplay replay_capture_memory(const CaptureDocument& doc);
// `layers` layers of the model's one layer kind (replay.py's layers=); a ConfigError for a model of
// several kinds (give a sequence) or layers < 0.
CaptureMemoryReplay replay_capture_memory(const CaptureDocument& doc, std::int64_t layers);
// Any sequence of the capture's layer kinds (replay.py's kinds=); a ConfigError naming
// model.layer_sequence for a kind the capture does not have, or a step too long to replay.
CaptureMemoryReplay replay_capture_memory(const CaptureDocument& doc, const CaptureLayerSequence& sequence);

}  // namespace trainsim::wl
