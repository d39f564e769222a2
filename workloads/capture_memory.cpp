#include "capture_memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>

#include "config_error.hpp"

namespace trainsim::wl {
namespace {

// The timeline holds one entry per op of the step (a real model's: ~10^5, 128 layers of a few
// thousand ops) and each buffer has a copy per layer of its kind; these bounds keep a hostile layer
// count from asking for more (the layers themselves count as ops: a kind may have none).
constexpr std::int64_t MAX_REPLAY_OPS = std::int64_t{1} << 22;
constexpr std::int64_t MAX_REPLAY_COPIES = std::int64_t{1} << 22;

using Time = std::optional<std::int64_t>;  // a timeline index; nullopt: not in this step

const CapturedPhase NO_OPS;  // a layers segment without a body for a layer's kind

// One layer kind's phases and where its recompute runs inside its backward (replay.timeline:
// `at = recompute_at if nr else None`; the recompute is inserted before backward op `at`, which
// may be nb (after the last); an `at` past nb never runs it).
struct KindOps {
  const CapturedLayer* layer = nullptr;
  std::int64_t nf = 0, nr = 0, nb = 0, at = 0;
  bool inserted = false;
  std::int64_t backward_block() const { return nb + (inserted ? nr : 0); }
};

class Replay {
 public:
  Replay(const CaptureDocument& doc, const CaptureLayerSequence& sequence);
  CaptureMemoryReplay run();

 private:
  const CaptureDocument& doc_;
  std::vector<KindOps> kinds_;        // per entry of doc_.layers
  std::vector<std::size_t> layer_;    // per layer of the model: its index into kinds_
  std::int64_t nl_ = 0;
  std::map<std::string, std::vector<std::int64_t>> layers_of_kind_;  // the layers of each kind, in order
  // Timeline starts (replay.timeline's `start`): the ends' phases, each layer's forward and
  // backward block, the optimizer and each segment (per layer for a layers segment).
  std::array<std::int64_t, 4> end_start_{};  // embed.forward, head.forward, head.backward, embed.backward
  std::vector<std::int64_t> fwd_start_, bwd_start_;
  std::int64_t opt_start_ = 0, n_ = 0;
  std::vector<std::int64_t> seg_start_;                // "all" / "ends" segments
  std::vector<std::vector<std::int64_t>> seg_layer_;  // "layers" segments, per layer

  [[noreturn]] void too_long() const {
    throw ConfigError(doc_.source, "model.layer_sequence", fmt::format("a step of at most {} ops and {} buffer copies to replay", MAX_REPLAY_OPS, MAX_REPLAY_COPIES));
  }
  [[noreturn]] void overflow(const std::string& path) const { throw ConfigError(doc_.source, path, "live bytes that fit in 64 bits"); }
  [[noreturn]] void overflow(std::size_t buffer) const { overflow(fmt::format("buffers[{}].alloc_bytes", buffer)); }
  const std::vector<std::int64_t>& layers_of(const std::string& kind) const {
    static const std::vector<std::int64_t> none;
    auto it = layers_of_kind_.find(kind);
    return it == layers_of_kind_.end() ? none : it->second;
  }
  void advance(std::int64_t& t, std::size_t n) const {
    t += static_cast<std::int64_t>(n);
    if (t > MAX_REPLAY_OPS) too_long();
  }
  static std::size_t end_slot(CapturePhase p) {
    switch (p) {
      case CapturePhase::EMBED_FORWARD: return 0;
      case CapturePhase::HEAD_FORWARD: return 1;
      case CapturePhase::HEAD_BACKWARD: return 2;
      default: return 3;
    }
  }
  const CapturedPhase& end_ops(std::size_t slot) const { return doc_.ends.at(std::string(CAPTURE_END_PHASES[slot])); }
  const CapturedPhase& body(std::size_t segment, std::int64_t layer) const {
    const auto& bodies = doc_.optimizer[segment].bodies;
    auto it = bodies.find(kinds_[layer_[static_cast<std::size_t>(layer)]].layer->kind);
    return it == bodies.end() ? NO_OPS : it->second;
  }
  bool layers_segment(std::int64_t s) const {
    return s >= 0 && s < static_cast<std::int64_t>(doc_.optimizer.size()) && doc_.optimizer[static_cast<std::size_t>(s)].group == "layers";
  }

  void build_timeline();
  Time index_layer(CapturePhase p, std::int64_t li, std::int64_t op) const;
  Time index_optimizer(std::optional<std::int64_t> seg, std::optional<std::int64_t> li, std::int64_t op) const;
  Time resolve(const CapturePosition& pos, std::optional<std::int64_t> base_layer, std::optional<std::int64_t> rep) const;
  template <class F>
  std::int64_t for_each_copy(F&& f) const;
  void locate(std::int64_t t, CaptureMemoryReplay& out) const;
};

Replay::Replay(const CaptureDocument& doc, const CaptureLayerSequence& sequence) : doc_(doc) {
  for (const auto& l : doc.layers) {
    KindOps k;
    k.layer = &l;
    k.nf = static_cast<std::int64_t>(l.forward.ops.size());
    k.nr = static_cast<std::int64_t>(l.recompute.ops.size());
    k.nb = static_cast<std::int64_t>(l.backward.ops.size());
    k.inserted = k.nr > 0 && l.recompute_at && *l.recompute_at >= 0 && *l.recompute_at <= k.nb;
    k.at = k.inserted ? *l.recompute_at : 0;
    kinds_.push_back(k);
  }
  for (std::size_t i = 0; i < sequence.size(); ++i) {
    const std::string& kind = sequence[i].first;
    const std::int64_t run = sequence[i].second;
    auto it = std::find_if(doc.layers.begin(), doc.layers.end(), [&](const CapturedLayer& l) { return l.kind == kind; });
    if (it == doc.layers.end()) throw ConfigError(doc.source, fmt::format("model.layer_sequence[{}]", i), "a kind of layers[]", "\"" + kind + "\"");
    if (run < 0) throw ConfigError(doc.source, fmt::format("model.layer_sequence[{}]", i), "a run length >= 0", std::to_string(run));
    if (run > MAX_REPLAY_OPS - nl_) too_long();
    auto& of_kind = layers_of_kind_[kind];
    for (std::int64_t r = 0; r < run; ++r) of_kind.push_back(nl_ + r);
    nl_ += run;
    layer_.insert(layer_.end(), static_cast<std::size_t>(run), static_cast<std::size_t>(it - doc.layers.begin()));
  }
  build_timeline();
}

// replay.timeline, as index arithmetic: the same order, the same starts.
void Replay::build_timeline() {
  std::int64_t t = 0;
  end_start_[0] = t;
  advance(t, end_ops(0).ops.size());
  fwd_start_.resize(layer_.size());
  for (std::size_t i = 0; i < layer_.size(); ++i) {
    fwd_start_[i] = t;
    advance(t, static_cast<std::size_t>(kinds_[layer_[i]].nf));
  }
  end_start_[1] = t;
  advance(t, end_ops(1).ops.size());
  end_start_[2] = t;
  advance(t, end_ops(2).ops.size());
  bwd_start_.resize(layer_.size());
  for (std::size_t i = layer_.size(); i-- > 0;) {
    bwd_start_[i] = t;
    advance(t, static_cast<std::size_t>(kinds_[layer_[i]].backward_block()));
  }
  end_start_[3] = t;
  advance(t, end_ops(3).ops.size());
  opt_start_ = t;
  seg_start_.assign(doc_.optimizer.size(), 0);
  seg_layer_.assign(doc_.optimizer.size(), {});
  for (std::size_t s = 0; s < doc_.optimizer.size(); ++s) {
    if (doc_.optimizer[s].group == "layers") {
      seg_layer_[s].resize(layer_.size());
      for (std::size_t i = 0; i < layer_.size(); ++i) {
        seg_layer_[s][i] = t;
        advance(t, body(s, static_cast<std::int64_t>(i)).ops.size());
      }
    } else {
      seg_start_[s] = t;
      advance(t, doc_.optimizer[s].ops.ops.size());
    }
  }
  n_ = t;
}

// replay.timeline's index[(phase, li, op)] for a layer phase (li in range, op >= 0): the backward's
// ops from `at` on come after the recompute's.
Time Replay::index_layer(CapturePhase p, std::int64_t li, std::int64_t op) const {
  const auto l = static_cast<std::size_t>(li);
  const KindOps& k = kinds_[layer_[l]];
  switch (p) {
    case CapturePhase::LAYER_FORWARD:
      return op < k.nf ? Time(fwd_start_[l] + op) : std::nullopt;
    case CapturePhase::LAYER_RECOMPUTE:
      return k.inserted && op < k.nr ? Time(bwd_start_[l] + k.at + op) : std::nullopt;
    default:
      return op < k.nb ? Time(bwd_start_[l] + op + (k.inserted && op >= k.at ? k.nr : 0)) : std::nullopt;
  }
}

// index[("optimizer", (seg, li), op)]: a layers segment's body of layer li, or another segment's ops
// (li none).
Time Replay::index_optimizer(std::optional<std::int64_t> seg, std::optional<std::int64_t> li, std::int64_t op) const {
  if (!seg || *seg < 0 || *seg >= static_cast<std::int64_t>(doc_.optimizer.size()) || op < 0) return std::nullopt;
  const auto s = static_cast<std::size_t>(*seg);
  if (layers_segment(*seg)) {
    if (!li || *li < 0 || *li >= nl_) return std::nullopt;
    if (op >= static_cast<std::int64_t>(body(s, *li).ops.size())) return std::nullopt;
    return seg_layer_[s][static_cast<std::size_t>(*li)] + op;
  }
  if (li || op >= static_cast<std::int64_t>(doc_.optimizer[s].ops.ops.size())) return std::nullopt;
  return seg_start_[s] + op;
}

// replay._resolve: the timeline index of an allocation (its op) or a free (the op it follows) for
// the copy of layer `base_layer` (a layer's buffer) or repetition `rep` (a per-repetition buffer).
Time Replay::resolve(const CapturePosition& pos, std::optional<std::int64_t> base_layer, std::optional<std::int64_t> rep) const {
  if (pos.phase == CapturePhase::OPTIMIZER) {
    std::optional<std::int64_t> li = rep;
    if (pos.layer_offset) {
      std::int64_t x = 0;
      if (!rep || __builtin_add_overflow(*rep, *pos.layer_offset, &x) || x < 0 || x >= nl_) return std::nullopt;
      li = x;
    } else if (pos.layer_index) {
      li = *pos.layer_index >= 0 ? *pos.layer_index : nl_ + *pos.layer_index;
    }
    // "op": -1 is never in the index, so replay.py's key falls to (segment, nl - 1): the start of
    // the last layer's body in a layers segment, else the optimizer's start.
    if (pos.op == -1) {
      return (layers_segment(pos.segment.value_or(-1)) && nl_ > 0 ? seg_layer_[static_cast<std::size_t>(*pos.segment)].back() : opt_start_) - 1;
    }
    // The key (segment, li), else (segment, None), else a layers segment's last repetition (a
    // position of a buffer that is not per repetition).
    if (Time t = index_optimizer(pos.segment, li, pos.op)) return t;
    if (Time t = index_optimizer(pos.segment, std::nullopt, pos.op)) return t;
    return index_optimizer(pos.segment, nl_ - 1, pos.op);
  }
  if (is_layer_phase(pos.phase)) {
    // replay._layer_of
    std::optional<std::int64_t> li = base_layer;
    if (pos.layer_offset) {
      std::int64_t x = 0;
      if (!base_layer || __builtin_add_overflow(*base_layer, *pos.layer_offset, &x)) return std::nullopt;
      li = x;
    } else if (pos.layer_index) {
      li = *pos.layer_index >= 0 ? *pos.layer_index : nl_ + *pos.layer_index;
    }
    if (!li || *li < 0 || *li >= nl_) return std::nullopt;
    if (pos.op == -1) {
      const auto l = static_cast<std::size_t>(*li);
      const KindOps& k = kinds_[layer_[l]];
      switch (pos.phase) {
        case CapturePhase::LAYER_FORWARD: return fwd_start_[l] - 1;
        case CapturePhase::LAYER_RECOMPUTE: return bwd_start_[l] + (k.inserted ? k.at : k.nb) - 1;
        default: return bwd_start_[l] - 1;
      }
    }
    return index_layer(pos.phase, *li, pos.op);
  }
  const std::size_t slot = end_slot(pos.phase);
  if (pos.op == -1) return end_start_[slot] - 1;
  return pos.op < static_cast<std::int64_t>(end_ops(slot).ops.size()) ? Time(end_start_[slot] + pos.op) : std::nullopt;
}

// replay.events' loop over the buffers' copies: f(buffer, bytes, ta, tf) for each copy allocated in
// the step (tf: the op its free follows, nullopt where it stays), bytes once for each copy that
// exists before the step (ta, tf nullopt). Returns the copies whose allocation did not resolve.
template <class F>
std::int64_t Replay::for_each_copy(F&& f) const {
  std::int64_t unplaced = 0, copies = 0;
  auto count_of = [&](const std::string& kind) { return static_cast<std::int64_t>(layers_of(kind).size()); };
  for (std::size_t bi = 0; bi < doc_.buffers.size(); ++bi) {
    const CapturedBuffer& b = doc_.buffers[bi];
    if (!b.alloc) {
      // Before the step: once, or once per layer of its kind (replay.events' `base`).
      std::int64_t bytes = 0;
      if (__builtin_mul_overflow(b.alloc_bytes, b.owner == "layer" ? count_of(b.layer_kind) : 1, &bytes)) overflow(bi);
      f(bi, bytes, Time(), Time());
      continue;
    }
    // A layer's buffer: a copy per layer of its kind; a per-repetition one: per repetition of the
    // layers segment (the layers of its kind); anything else once.
    const std::vector<std::int64_t>& own = layers_of(b.layer_kind);
    const bool per_layer_copy = b.owner == "layer", per_rep = b.owner == "optimizer" && b.per_repetition;
    const std::size_t n_inst = per_layer_copy ? own.size() : 1, n_reps = per_rep ? own.size() : 1;
    std::int64_t bytes = b.alloc_bytes;
    if (!b.per_layer.empty() && __builtin_mul_overflow(b.alloc_bytes, count_of(b.per_layer), &bytes)) overflow(bi);
    for (std::size_t ii = 0; ii < n_inst; ++ii) {
      const std::optional<std::int64_t> i = per_layer_copy ? std::optional(own[ii]) : std::nullopt;
      for (std::size_t rr = 0; rr < n_reps; ++rr) {
        const std::optional<std::int64_t> r = per_rep ? std::optional(own[rr]) : std::nullopt;
        if (++copies > MAX_REPLAY_COPIES) too_long();
        const Time ta = resolve(*b.alloc, i, r);
        if (!ta) {
          ++unplaced;
          continue;
        }
        // The first / last layer's (repetition's) copy may be freed elsewhere.
        const CapturePosition* fpos = b.free ? &*b.free : nullptr;
        const std::optional<std::int64_t> j = i ? i : r;
        if (j && *j == 0 && b.free_first.given) {
          fpos = b.free_first.at ? &*b.free_first.at : nullptr;
        } else if (j && *j == nl_ - 1 && b.free_last.given) {
          fpos = b.free_last.at ? &*b.free_last.at : nullptr;
        }
        Time tf;
        if (fpos != nullptr) {
          tf = resolve(*fpos, i, r);
          if (tf && *tf < *ta) tf.reset();  // a free before its allocation is dropped
        }
        f(bi, bytes, ta, tf);
      }
    }
  }
  return unplaced;
}

// replay.replay's peak_at for timeline index t, and the op's name and layer kind.
void Replay::locate(std::int64_t t, CaptureMemoryReplay& out) const {
  auto found = [&](CapturePhase p, const CapturedPhase& ops, std::int64_t op, std::optional<std::int64_t> layer,
                   std::optional<std::int64_t> segment) {
    out.memory.peak_at = CapturePeakAt{p, op, segment, layer};
    out.peak_op = ops.ops[static_cast<std::size_t>(op)].op;
    if (layer) out.peak_layer_kind = kinds_[layer_[static_cast<std::size_t>(*layer)]].layer->kind;
  };
  auto in = [&](std::int64_t start, std::int64_t n) { return t >= start && t < start + n; };
  const std::array<CapturePhase, 4> ends = {CapturePhase::EMBED_FORWARD, CapturePhase::HEAD_FORWARD, CapturePhase::HEAD_BACKWARD,
                                            CapturePhase::EMBED_BACKWARD};
  for (std::size_t s = 0; s < 4; ++s) {
    if (in(end_start_[s], static_cast<std::int64_t>(end_ops(s).ops.size()))) return found(ends[s], end_ops(s), t - end_start_[s], {}, {});
  }
  for (std::size_t i = 0; i < layer_.size(); ++i) {
    const KindOps& k = kinds_[layer_[i]];
    const auto li = static_cast<std::int64_t>(i);
    if (in(fwd_start_[i], k.nf)) return found(CapturePhase::LAYER_FORWARD, k.layer->forward, t - fwd_start_[i], li, {});
    if (!in(bwd_start_[i], k.backward_block())) continue;
    const std::int64_t off = t - bwd_start_[i];
    if (k.inserted && off >= k.at && off < k.at + k.nr) return found(CapturePhase::LAYER_RECOMPUTE, k.layer->recompute, off - k.at, li, {});
    return found(CapturePhase::LAYER_BACKWARD, k.layer->backward, k.inserted && off >= k.at ? off - k.nr : off, li, {});
  }
  for (std::size_t s = 0; s < doc_.optimizer.size(); ++s) {
    const auto seg = static_cast<std::int64_t>(s);
    if (!layers_segment(seg)) {
      const CapturedPhase& ops = doc_.optimizer[s].ops;
      if (in(seg_start_[s], static_cast<std::int64_t>(ops.ops.size()))) return found(CapturePhase::OPTIMIZER, ops, t - seg_start_[s], {}, seg);
      continue;
    }
    for (std::size_t i = 0; i < layer_.size(); ++i) {
      const CapturedPhase& ops = body(s, static_cast<std::int64_t>(i));
      if (in(seg_layer_[s][i], static_cast<std::int64_t>(ops.ops.size()))) {
        return found(CapturePhase::OPTIMIZER, ops, t - seg_layer_[s][i], static_cast<std::int64_t>(i), seg);
      }
    }
  }
}

void add_kind(CaptureMemoryBreakdown& m, const std::string& kind, std::int64_t bytes) {
  std::int64_t* field = kind == "param"                                ? &m.param_bytes
                        : kind == "grad"                               ? &m.grad_bytes
                        : kind == "optimizer_state"                    ? &m.optimizer_state_bytes
                        : kind == "input" || kind == "model_buffer"    ? &m.input_bytes
                        : kind == "activation"                         ? &m.activation_bytes
                        : kind == "param_host" || kind == "grad_host"  ? &m.host_copy_bytes
                                                                       : &m.existing_bytes;
  *field += bytes;  // bounded by the peak, which fits
}

// replay.events then replay.replay: allocations at each op, frees after it, the live total's
// largest value (the first op to reach it) and what is left at the end.
CaptureMemoryReplay Replay::run() {
  std::vector<std::int64_t> alloc(static_cast<std::size_t>(n_), 0), free(static_cast<std::size_t>(n_) + 1, 0);
  std::int64_t base = 0;
  const std::int64_t unplaced = for_each_copy([&](std::size_t bi, std::int64_t bytes, Time ta, Time tf) {
    std::int64_t& slot = !ta ? base : alloc[static_cast<std::size_t>(*ta)];
    if (__builtin_add_overflow(slot, bytes, &slot)) overflow(bi);
    if (tf) {
      std::int64_t& f = free[static_cast<std::size_t>(*tf + 1)];
      if (__builtin_add_overflow(f, bytes, &f)) overflow(bi);
    }
  });
  std::int64_t mem = base - free[0];
  std::int64_t peak = mem, peak_t = -1;
  for (std::int64_t t = 0; t < n_; ++t) {
    if (__builtin_add_overflow(mem, alloc[static_cast<std::size_t>(t)], &mem)) overflow("buffers");
    if (mem > peak) {
      peak = mem;
      peak_t = t;
    }
    mem -= free[static_cast<std::size_t>(t) + 1];
  }
  CaptureMemoryReplay out;
  out.memory.layers = nl_;
  out.memory.base_bytes = base;
  out.memory.peak_bytes = peak;
  out.memory.end_bytes = mem;
  out.memory.unplaced_buffers = unplaced;
  if (peak_t >= 0) locate(peak_t, out);
  // What is live right after the peak op's allocations: allocated by then and not yet freed.
  for_each_copy([&](std::size_t bi, std::int64_t bytes, Time ta, Time tf) {
    if (!ta || (*ta <= peak_t && (!tf || *tf >= peak_t))) add_kind(out.at_peak, doc_.buffers[bi].kind, bytes);
  });
  return out;
}

}  // namespace

std::int64_t CaptureMemoryBreakdown::total_bytes() const {
  return param_bytes + grad_bytes + optimizer_state_bytes + input_bytes + activation_bytes + host_copy_bytes + existing_bytes;
}

CaptureMemoryReplay replay_capture_memory(const CaptureDocument& doc, const CaptureLayerSequence& sequence) {
  return Replay(doc, sequence).run();
}

CaptureMemoryReplay replay_capture_memory(const CaptureDocument& doc) { return replay_capture_memory(doc, doc.layer_sequence); }

// replay.expand_kinds with layers=: the model's one kind, `layers` times.
CaptureMemoryReplay replay_capture_memory(const CaptureDocument& doc, std::int64_t layers) {
  if (layers < 0) throw ConfigError(doc.source, "symbols.L", "a layer count >= 0", std::to_string(layers));
  const auto& seq = doc.layer_sequence;
  const bool one_kind = !seq.empty() && std::all_of(seq.begin(), seq.end(), [&](const auto& e) { return e.first == seq[0].first; });
  if (!one_kind) throw ConfigError(doc.source, "model.layer_sequence", "a model of one layer kind (replay a layer sequence instead)");
  return replay_capture_memory(doc, CaptureLayerSequence{{seq[0].first, layers}});
}

}  // namespace trainsim::wl
