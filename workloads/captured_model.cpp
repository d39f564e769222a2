#include "captured_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <vector>

#include "capture_scale.hpp"
#include "config_error.hpp"
#include "input_file.hpp"
#include "model_params.hpp"
#include "stack_model.hpp"
#include "strategy_identity.hpp"

namespace trainsim::wl {

Numerics capture_numerics(const CaptureDocument& doc) {
  const std::string& p = doc.run.precision;
  return p == "fp32" ? Numerics::FP32 : p == "bf16" ? Numerics::BF16 : p == "fp16-scaler" ? Numerics::FP16_MIXED : Numerics::BF16_MIXED;
}

std::optional<Numerics> layer_numerics(const ModelSpec& m, const Strategy& s) {
  if (!stack_model(s).layer_in_param_dtype) return m.numerics;
  switch (s.stack.param_dtype) {
    case TensorDtype::BF16: return Numerics::BF16;
    case TensorDtype::FP32: return Numerics::FP32;
    case TensorDtype::FP16: return std::nullopt;  // no capture precision runs pure fp16
  }
  return std::nullopt;
}


namespace {

// The run's settings that change what PyTorch dispatches, against the stack's: a capture of another
// precision or without checkpointing where the run recomputes costs other kernels.
void check_run(const CaptureDocument& doc, const std::string& flag, const ModelSpec& m, const Strategy& s) {
  const std::string where = flag + " " + doc.source;
  const StackModel& stack = stack_model(s);
  if (!stack.pytorch_eager) {
    throw ConfigError(where, "--stack", "a PyTorch stack (pytorch, pytorch-ddp, pytorch-fsdp, pytorch-pipelining): a capture records PyTorch's ops",
                      std::string(to_string(s.stack.kind)));
  }
  const std::optional<Numerics> layer = layer_numerics(m, s);
  if (stack.layer_in_param_dtype && layer != capture_numerics(doc)) {
    throw ConfigError(where, "run.precision",
                      fmt::format("the numerics {}'s layer computes in: pure {} (its param_dtype, under no autocast; capture with "
                                  "--precision {})",
                                  to_string(s.stack.kind), to_string(s.stack.param_dtype),
                                  layer ? std::string(to_string(*layer)) : std::string("bf16 or fp32, with that param_dtype")),
                      doc.run.precision);
  }
  if (!stack.layer_in_param_dtype && capture_numerics(doc) != m.numerics) {
    throw ConfigError(where, "run.precision",
                      fmt::format("the run's numerics, {} (capture with the --precision that trains as the run does)", to_string(m.numerics)),
                      doc.run.precision);
  }
  if (m.sliding_window && *m.sliding_window < s.seq) {
    throw ConfigError(where, "--seq",
                      fmt::format("a sequence within the model's sliding window of {} tokens (windowed attention is not modeled)",
                                  *m.sliding_window),
                      std::to_string(s.seq));
  }
  const bool recompute = s.recompute == Recompute::FULL;
  if (recompute && !doc.run.recompute) {
    throw ConfigError(where, "run.recompute", "true: the run recomputes every layer (capture with --recompute)", "false");
  }
  if (s.recompute == Recompute::SELECTIVE) {
    throw ConfigError(where, "--recompute", "none or full (PyTorch checkpoints whole layers)", "selective");
  }
}

// The layer kind every layer is costed as. One kind: it. Full and sliding-window attention
// (gemma2, gemma3): at a sequence within the window a sliding layer attends as a full one does
// (transformers then passes no mask: the measured Gemma 2 runs' SDPA calls, stack.details.sdpa_calls
// in reports/validation/captured_models/runs), so every layer is costed as the full kind; past the
// window check_run has refused the run. Other mixes are refused.
std::string costed_kind(const CaptureDocument& doc, const std::string& where) {
  if (doc.layers.size() == 1) return doc.layers.front().kind;
  std::set<std::string> kinds;
  for (const CapturedLayer& l : doc.layers) kinds.insert(l.kind);
  if (kinds == std::set<std::string>{"full_attention", "sliding_attention"}) return "full_attention";
  throw ConfigError(where, "layers",
                    "one layer kind, or full and sliding-window attention within the window (other mixes of layer kinds are not "
                    "replayed from captures yet)",
                    fmt::format("{} kinds", doc.layers.size()));
}

// The layer's buffers by where they live (ModelCapture::LayerMemory). A layer's own buffers only:
// the head's and the optimizer's are the stack's (logits, states).
ModelCapture::LayerMemory layer_memory(const CaptureDocument& doc, const std::string& kind) {
  ModelCapture::LayerMemory out;
  for (const CapturedBuffer& b : doc.buffers) {
    if (b.owner != "layer" || b.layer_kind != kind || b.kind != "activation" || !b.alloc) continue;
    const CapturePhase freed = b.free ? b.free->phase : CapturePhase::OPTIMIZER;  // null: alive at the end
    const bool to_backward = freed == CapturePhase::LAYER_BACKWARD || freed == CapturePhase::EMBED_BACKWARD ||
                             freed == CapturePhase::OPTIMIZER;
    const bool to_head = freed == CapturePhase::HEAD_FORWARD || freed == CapturePhase::HEAD_BACKWARD;
    const double bytes = static_cast<double>(b.alloc_bytes);
    if (b.alloc->phase == CapturePhase::LAYER_FORWARD && to_backward) out.kept += bytes;
    if (b.alloc->phase == CapturePhase::LAYER_FORWARD && to_head) out.autocast_cache += bytes;
    if (b.alloc->phase == CapturePhase::LAYER_RECOMPUTE && to_backward) out.recomputed += bytes;
  }
  return out;
}

// Whether a buffer is live right after op `op` of `phase` (the phases in step order; a free before
// an op, after = false, has ended the buffer at that op).
bool live_at(const CapturedBuffer& b, CapturePhase phase, std::int64_t op) {
  if (!b.alloc || b.alloc->phase > phase || (b.alloc->phase == phase && b.alloc->op > op)) return false;
  if (!b.free) return true;
  if (b.free->phase != phase) return b.free->phase > phase;
  return b.free->op > op || (b.free->op == op && b.free->after);
}

// The head's buffers by where they live (ModelCapture::HeadMemory): what the user's loss code keeps
// and frees, not trainsim's scripts' (stack_layer.cpp, torch_loss_bytes). One sweep over head.backward
// (each buffer adds its bytes over the ops it is live at), so the work grows with buffers plus ops.
ModelCapture::HeadMemory head_memory(const CaptureDocument& doc) {
  ModelCapture::HeadMemory out;
  const auto nb = static_cast<std::int64_t>(doc.ends.at("head.backward").ops.size());
  std::vector<double> delta(static_cast<std::size_t>(nb) + 1, 0.0);
  for (const CapturedBuffer& b : doc.buffers) {
    if (b.kind != "activation" || !b.alloc) continue;
    const bool in_forward = b.alloc->phase == CapturePhase::HEAD_FORWARD;
    if (!in_forward && b.alloc->phase != CapturePhase::HEAD_BACKWARD) continue;
    const auto bytes = static_cast<double>(b.alloc_bytes);
    if (in_forward && live_at(b, CapturePhase::HEAD_BACKWARD, -1)) out.kept += bytes;
    // The ops of head.backward it is live at: [first, last].
    const std::int64_t first = in_forward ? 0 : b.alloc->op;
    std::int64_t last = nb - 1;
    if (b.free && b.free->phase == CapturePhase::HEAD_BACKWARD) last = std::min(last, b.free->after ? b.free->op : b.free->op - 1);
    if (b.free && b.free->phase < CapturePhase::HEAD_BACKWARD) continue;
    if (first > last || first >= nb) continue;
    delta[static_cast<std::size_t>(first)] += bytes;
    delta[static_cast<std::size_t>(last) + 1] -= bytes;
  }
  double live = 0;
  for (std::int64_t op = 0; op < nb; ++op) {
    live += delta[static_cast<std::size_t>(op)];
    out.backward_extra = std::max(out.backward_extra, live - out.kept);
  }
  return out;
}

}  // namespace

std::shared_ptr<const ModelCapture> attach_capture(const std::string& path, const std::string& flag, const ModelSpec& m,
                                                   const Strategy& s, const std::string& shown) {
  return attach_capture(path, load_capture(path), flag, m, s, shown);
}

std::shared_ptr<const ModelCapture> attach_capture(const std::string& path, CaptureDocument doc, const std::string& flag,
                                                   const ModelSpec& m, const Strategy& s, const std::string& shown) {
  const std::string& name = shown.empty() ? path : shown;
  if (!m.has_architecture()) throw ConfigError(flag, "--model", "a model architecture to scale the capture to", "--params");
  auto out = std::make_shared<ModelCapture>();
  const std::string bytes = read_input_file(path);
  check_run(doc, flag, m, s);
  out->layer_kind = costed_kind(doc, flag + " " + doc.source);
  const SymbolValues changes = capture_changes_for(doc, symbols_of_model(m, s.micro_batch, s.seq));
  if (!changes.empty()) {
    if (!doc.scalable) {
      throw ConfigError(flag + " " + path, "scalable", "a capture with symbols (captured without --no-symbols) to scale to the model",
                        "false");
    }
    doc = scale_capture(doc, changes);
  }
  // Another architecture can share the capture's symbols (a GPT-2 has h, a, f, V too): its
  // parameters, counted from the capture's own parameter shapes, must be the model's.
  double captured_params = 0;
  for (const CapturedParam& p : doc.params) {
    double n = 1;
    for (const CapturedDim& d : p.shape) n *= static_cast<double>(d.value);
    const auto kind = doc.layer_counts.find(p.layer_kind);
    captured_params += p.group == "layer" ? n * static_cast<double>(kind == doc.layer_counts.end() ? 0 : kind->second) : n;
    if (p.group == "layer" && p.layer_kind != out->layer_kind) continue;  // one layer's tensors: the costed kind's
    out->layer_param_tensors += p.group == "layer" ? 1 : 0;
    (p.group == "layer" ? out->params.layer : p.group == "head" ? out->params.head : out->params.embedding).push_back(n);
  }
  const double model_params = total_params(m);
  if (!m.layer_from_capture && std::fabs(captured_params - model_params) > 1e-9 * model_params) {
    throw ConfigError(flag + " " + path, "params",
                      fmt::format("the parameters of --model {} ({:.0f}): a capture of the same architecture", m.name, model_params),
                      fmt::format("{:.0f} at the model's sizes", captured_params));
  }
  out->costs = captured_costs(doc, 1);
  out->layer_memory = layer_memory(doc, out->layer_kind);
  out->head_memory = head_memory(doc);
  out->id = name + "#" + hex64(fnv1a64(bytes));
  out->describe = fmt::format("{} ({}, recorded on the {} device{}; scaled to the model, micro-batch {}, sequence {})", name,
                              doc.run.precision, doc.run.device, doc.run.recompute ? ", with recompute" : "", s.micro_batch, s.seq);
  out->doc = std::move(doc);
  return out;
}

const ModelCapture* captured_for(const ModelSpec& m, const Strategy& s) {
  if (!m.capture || !stack_model(s).pytorch_eager) return nullptr;
  const SymbolValues& sym = m.capture->doc.symbols;
  const auto b = sym.find("b"), sq = sym.find("s");
  if (b == sym.end() || sq == sym.end() || b->second != s.micro_batch || sq->second != s.seq || s.tp != 1) {
    throw std::invalid_argument(fmt::format("the capture {} was scaled to micro-batch {} and sequence {} at tp 1, not to {}, {}, tp {}",
                                            m.capture->id, b == sym.end() ? -1 : b->second, sq == sym.end() ? -1 : sq->second,
                                            s.micro_batch, s.seq, s.tp));
  }
  return m.capture.get();
}

}  // namespace trainsim::wl
