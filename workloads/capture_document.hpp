#pragma once
// A trainsim.capture v1 document (workloads/capture/SCHEMA.md), loaded strictly: every object's
// keys are checked against the schema (unknown keys, wrong types and expressions that do not
// evaluate to the recorded values are ConfigErrors naming the file and the key path), and what
// the costing and the memory replay need is kept: symbols and their space, layer counts, each layer
// kind's forward / recompute / backward ops, the ends' phases, the optimizer's segments, params,
// buffers' bytes and positions (capture_memory.hpp replays them), totals and the memory summary.
// Tensors' layouts are checked, not kept.
//
// Getting per-layer costs from a capture (the API the `--stack pytorch*` integration uses):
//
//     CaptureDocument doc = load_capture("workloads/captures/gpt_model_py.json");
//     // optional: another size of the same architecture (SCHEMA.md, "Scaling")
//     doc = scale_capture(doc, {{"a", 32}, {"d", 128}, {"f", 16384}, {"L", 48}});
//     //   or from a Hugging Face config.json: symbols_from_hf_config(...) then scale_capture
//     CapturedCosts costs = captured_costs(doc, /*tp=*/2);      // captured_layer_cost.hpp
//     const LayerCost& layer = costs.layers.at("layer").cost;  // forward + backward of one layer
//     // the step's peak allocated bytes at any layer count (capture_memory.hpp)
//     CaptureMemoryReplay mem = replay_capture_memory(doc, /*layers=*/80);
//
// Everything here is hardware-free (workloads/ depends on nothing but the strict JSON reader).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "capture_expr.hpp"
#include "strict_json.hpp"

namespace trainsim::wl {

inline constexpr std::string_view CAPTURE_KIND = "trainsim.capture";
inline constexpr std::int64_t CAPTURE_SCHEMA_VERSION = 1;

// SCHEMA.md, "Op classes": the fixed list, in the document's order.
enum class OpClass {
  GEMM, BATCHED_GEMM, ATTENTION_FWD, ATTENTION_BWD, ELEMENTWISE, REDUCTION, NORMALIZATION, SOFTMAX, LOSS,
  COPY_CAST, INDEX_GATHER, FILL, ALLOC, RANDOM, FOREACH, OPTIMIZER, VIEW, SYNC, HOST, OTHER
};
inline constexpr std::size_t OP_CLASS_COUNT = 20;
// The class's name as the schema spells it (a static string: wl::Gemm and MemoryKernel keep it).
const char* op_class_name(OpClass c);

// A recorded integer and the expression it came from.
struct CapturedDim {
  std::int64_t value = 0;
  Expr expr;
};

struct CapturedGemm {
  CapturedDim m, n, k, batch;
  std::string dtype;                // of A: "bf16", "f32", ... (SCHEMA.md, "Tensors")
  std::string pass;                 // fwd, dgrad, wgrad, activation
  std::string role;                 // the Linear's module name, empty without a weight
  std::string tp_mode;              // column, row, vocab, unknown; empty without gemm.tp
  char tp_split = 0;                // 'm', 'n' or 'k': the dimension that divides by the TP degree; 0 none
};

struct CapturedAttention {
  CapturedDim b, heads, kv_heads, s_q, s_kv, head_dim, head_dim_v;
  bool causal = false;
  std::string backend;
};

// A list op's first list (SCHEMA.md, "Kernels"): its members' element counts for multi_tensor_apply.
struct CapturedListMember {
  std::vector<CapturedDim> shape;
  bool layer = false;  // group "layer" (repeated per layer of layer_kind) or "ends"
  std::string layer_kind;
};

struct CapturedOp {
  std::string op;  // aten::addmm.default
  OpClass cls = OpClass::OTHER;
  bool compute_stream = true;
  std::int64_t kernels = 0;
  CapturedDim bytes_read, bytes_written, flops;
  std::optional<CapturedGemm> gemm;
  std::optional<CapturedAttention> attention;
  // SCHEMA.md, "Tensor parallelism": a tensor of the op has a dimension carrying a, kv or f (heads,
  // key/value heads, MLP width), so a TP rank runs 1/tp of it; else it is replicated.
  bool carries_tp_symbol = false;
  bool list_op = false;  // has lists: bytes and FLOPs for the full model (SCHEMA.md, "Optimizer")
  int mta_depth = 0;     // kernels_rule.multi_tensor_apply; 0: none
  std::vector<CapturedListMember> first_list;
};

struct CapturedPhase {
  std::vector<CapturedOp> ops;
};

struct CapturedLayer {
  std::string kind;
  std::int64_t count = 0;
  std::int64_t captured_index = 0;
  std::optional<std::int64_t> recompute_at;
  CapturedPhase forward, recompute, backward;
};

struct CapturedSegment {
  std::string group;  // all, ends, layers
  CapturedPhase ops;  // all / ends
  std::map<std::string, CapturedPhase> bodies;  // layers: per layer kind, run once per layer
};

struct CapturedParam {
  std::string name, group, tp, layer_kind;
  std::int64_t buf = 0;
  std::vector<CapturedDim> shape;
  std::string dtype;
};

// SCHEMA.md, "Phases, layers and ops": the step's phases, in step order.
enum class CapturePhase {
  EMBED_FORWARD, LAYER_FORWARD, HEAD_FORWARD, HEAD_BACKWARD, LAYER_RECOMPUTE, LAYER_BACKWARD, EMBED_BACKWARD, OPTIMIZER
};
// The phase as positions spell it ("embed.forward", "layer.recompute", "optimizer", ...).
const char* capture_phase_name(CapturePhase p);
inline bool is_layer_phase(CapturePhase p) {
  return p == CapturePhase::LAYER_FORWARD || p == CapturePhase::LAYER_RECOMPUTE || p == CapturePhase::LAYER_BACKWARD;
}

// SCHEMA.md, "Buffers and positions": an op of the step, relative to the buffer that names it.
struct CapturePosition {
  CapturePhase phase = CapturePhase::EMBED_FORWARD;
  std::int64_t op = 0;  // -1 (frees only): before the phase's first op
  bool after = false;   // a free: right after the op
  // In a layer phase: the layer relative to the owning layer's copy (layer_offset) or counted from
  // the first (>= 0) or the last (< 0) layer (layer_index); in the optimizer: the segment and, in a
  // layers segment, the repetition relative to the buffer's own or as an index.
  std::optional<std::int64_t> layer_offset, layer_index, segment;
};

// free_first / free_last: `given` when the key is there; `at` is then a position or null (that
// layer's copy is never freed), which replay.py tells apart from an absent key.
struct CaptureFreeOverride {
  bool given = false;
  std::optional<CapturePosition> at;
};

struct CapturedBuffer {
  std::string kind, owner, layer_kind, dtype;
  std::int64_t bytes = 0;
  std::optional<Expr> bytes_expr;  // null where the storage is larger than its tensor (bytes_note)
  std::int64_t alloc_bytes = 0;    // bytes rounded up to the allocator's block
  std::optional<CapturePosition> alloc;  // null: exists before the step
  std::optional<CapturePosition> free;   // null: alive at the end of the step
  CaptureFreeOverride free_first, free_last;
  std::vector<CapturePosition> saved;  // where autograd saved it (not used by the replay)
  std::string per_layer;               // a list op's buffer, one copy per layer of this kind; empty: none
  bool per_repetition = false;         // allocated in each repetition of a layers segment (layer_kind)
  bool freed_by_gc = false;
};

// SCHEMA.md, "Top level" totals: sums over a phase's ops.
struct CaptureSums {
  std::int64_t flops = 0, bytes_read = 0, bytes_written = 0, kernels = 0;
  bool operator==(const CaptureSums&) const = default;
};
struct CaptureTotals {
  std::map<std::string, CaptureSums> ends;                           // per end phase
  std::map<std::string, std::map<std::string, CaptureSums>> layers;  // kind -> forward/recompute/backward
  CaptureSums optimizer, step;
};

// Where the memory replay peaked (replay.py's peak_at): an op of a phase, with its layer in a layer
// phase or a layers segment of the optimizer, and its segment in the optimizer.
struct CapturePeakAt {
  CapturePhase phase = CapturePhase::EMBED_FORWARD;
  std::int64_t op = 0;
  std::optional<std::int64_t> segment, layer;
  bool operator==(const CapturePeakAt&) const = default;
};

// SCHEMA.md, "Memory replay": the document's memory summary for its own layer sequence.
struct CaptureMemory {
  std::int64_t layers = 0, base_bytes = 0, peak_bytes = 0, end_bytes = 0, unplaced_buffers = 0;
  std::optional<CapturePeakAt> peak_at;  // null: the peak is the bytes that exist before the step
  // Whether the summary is the replay of this document. A loaded document's is the recorder's;
  // scale_capture replays the scaled document (capture_memory.hpp, replay.py's semantics, as
  // scale.py does), so it stays true. False only where a caller changed buffers or ops afterwards
  // without replaying again (replay_capture_memory(doc).memory is the current summary).
  bool current = true;
  bool operator==(const CaptureMemory&) const = default;
};

struct SymbolSpace {
  std::vector<std::string> independent;
  std::map<std::string, Expr, std::less<>> ties;
  SymbolValues fixed;
};

struct CaptureRun {
  std::int64_t micro_batch = 0, seq = 0;
  std::string precision, optimizer, optimizer_device, device, sdpa;
  bool recompute = false;
};

struct CaptureDocument {
  std::string source;  // the file, for messages
  CaptureRun run;
  SymbolValues symbols;
  std::optional<SymbolSpace> symbol_space;  // absent when not scalable
  bool scalable = false;
  std::int64_t model_layers = 0;
  std::map<std::string, std::int64_t> layer_counts;
  std::vector<std::pair<std::string, std::int64_t>> layer_sequence;
  std::int64_t block_bytes = 512;
  std::vector<CapturedParam> params;
  std::map<std::string, CapturedPhase> ends;  // embed.forward, head.forward, head.backward, embed.backward
  std::string optimizer_kind, optimizer_device;
  std::vector<CapturedSegment> optimizer;
  std::vector<CapturedLayer> layers;
  std::vector<CapturedBuffer> buffers;
  CaptureTotals totals;
  CaptureMemory memory;
};

// The end phases in step order.
inline constexpr std::string_view CAPTURE_END_PHASES[] = {"embed.forward", "head.forward", "head.backward",
                                                          "embed.backward"};

CaptureDocument load_capture(const std::string& path);
CaptureDocument load_capture_json(const JsonDocument& json);

// PyTorch's caching allocator's rounding (emit.round_alloc, validate.py): bytes rounded up to a
// multiple of `block` (a ceiling, for negative bytes too; 0 stays 0). False where it overflows.
bool round_up_to_block(std::int64_t bytes, std::int64_t block, std::int64_t& out);

// Sums of a phase's ops (SCHEMA.md totals), and the totals of a whole document (trainsim_capture's
// replay.totals): what scale_capture recomputes and what the tests hold the document's totals to.
CaptureSums sum_ops(const CapturedPhase& phase);
CaptureTotals compute_totals(const CaptureDocument& doc);

}  // namespace trainsim::wl
