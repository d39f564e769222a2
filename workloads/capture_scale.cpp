#include "capture_scale.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "capture_memory.hpp"

namespace trainsim::wl {
namespace {

constexpr std::int64_t MTA_CHUNK = 65536;
constexpr std::int64_t MTA_MAX_BLOCKS = 320;
constexpr std::int64_t MTA_MAX_TENSORS[] = {110, 64, 48, 36, 30};
// The full model's list of a list op repeats the layer members once per layer: a bound on that
// list keeps a hostile L from asking for unbounded work (the largest real models list ~10^4).
constexpr std::int64_t MAX_LIST_TENSORS = 50'000'000;

bool is_layer_symbol(const std::string& k) { return k == "L" || k.rfind("L_", 0) == 0; }

// multi_tensor_apply's launch rule, fed one tensor at a time, with whole runs of 320 chunks taken
// at once so that a huge tensor costs O(1).
struct MtaCounter {
  std::int64_t max_tensors;
  std::int64_t launches = 0, tensors = 0, blocks = 0;

  void add(std::int64_t numel) {
    if (numel <= 0) return;
    ++tensors;
    std::int64_t rem = (numel + MTA_CHUNK - 1) / MTA_CHUNK;
    // Launches that fill the chunk limit before this tensor's last chunk.
    if (blocks == 0 && rem > MTA_MAX_BLOCKS) {
      const std::int64_t full = (rem - 1) / MTA_MAX_BLOCKS;
      launches += full;
      rem -= full * MTA_MAX_BLOCKS;
      tensors = 1;
    }
    while (rem > 0) {
      const std::int64_t take = std::min(rem, MTA_MAX_BLOCKS - blocks);
      blocks += take;
      rem -= take;
      const bool last = rem == 0;
      if ((last && tensors == max_tensors) || blocks == MTA_MAX_BLOCKS) {
        ++launches;
        blocks = 0;
        tensors = last ? 0 : 1;
        if (!last && rem > MTA_MAX_BLOCKS) {
          const std::int64_t full = (rem - 1) / MTA_MAX_BLOCKS;
          launches += full;
          rem -= full * MTA_MAX_BLOCKS;
        }
      }
    }
  }
  std::int64_t finish() const { return launches + (blocks > 0 ? 1 : 0); }
};

class Scaler {
 public:
  Scaler(const CaptureDocument& doc, SymbolValues values) : doc_(doc), values_(std::move(values)) {}

  std::int64_t eval(const Expr& e, const std::string& what) const {
    std::int64_t v = 0;
    std::string why;
    if (!e.evaluate(values_, v, &why)) throw ConfigError(doc_.source, what, why, "\"" + e.text() + "\"");
    return v;
  }
  void dim(CapturedDim& d, const std::string& what) const { d.value = eval(d.expr, what); }

  void op(CapturedOp& o, const std::vector<std::pair<std::string, std::int64_t>>& sequence) const {
    dim(o.bytes_read, o.op + " bytes_read_expr");
    dim(o.bytes_written, o.op + " bytes_written_expr");
    dim(o.flops, o.op + " flops_expr");
    if (o.gemm) {
      for (CapturedDim* d : {&o.gemm->m, &o.gemm->n, &o.gemm->k, &o.gemm->batch}) dim(*d, o.op + " gemm");
    }
    if (o.attention) {
      auto& a = *o.attention;
      for (CapturedDim* d : {&a.b, &a.heads, &a.kv_heads, &a.s_q, &a.s_kv, &a.head_dim, &a.head_dim_v}) {
        dim(*d, o.op + " attention");
      }
    }
    for (auto& m : o.first_list) {
      for (auto& d : m.shape) dim(d, o.op + " lists[0].members");
    }
    if (o.list_op) o.kernels = list_kernels(o, sequence);
  }

  // emit.list_op_kernels: the first list in order, the layer members of every layer (in the
  // model's layer order) where the first layer member stands.
  std::int64_t list_kernels(const CapturedOp& o, const std::vector<std::pair<std::string, std::int64_t>>& sequence) const {
    if (o.mta_depth == 0) return o.compute_stream ? 1 : 0;
    MtaCounter mta{MTA_MAX_TENSORS[std::clamp(o.mta_depth, 1, 5) - 1]};
    auto numel = [&](const CapturedListMember& m) {
      std::int64_t n = 1;
      for (const auto& d : m.shape) {
        if (__builtin_mul_overflow(n, d.value, &n)) throw ConfigError(doc_.source, o.op + " lists[0]", "a tensor size that fits 64 bits");
      }
      return n;
    };
    bool layers_done = false;
    std::int64_t listed = 0;
    for (const auto& m : o.first_list) {
      if (!m.layer) {
        mta.add(numel(m));
      } else if (!layers_done) {
        layers_done = true;
        for (const auto& [kind, run] : sequence) {
          std::vector<std::int64_t> body;
          for (const auto& u : o.first_list) {
            if (u.layer && u.layer_kind == kind) body.push_back(numel(u));
          }
          listed += run * static_cast<std::int64_t>(body.size());
          if (listed > MAX_LIST_TENSORS) {
            throw ConfigError(doc_.source, "symbols.L", fmt::format("a model whose optimizer lists at most {} tensors", MAX_LIST_TENSORS));
          }
          for (std::int64_t r = 0; r < run; ++r) {
            for (auto n : body) mta.add(n);
          }
        }
      }
    }
    return mta.finish();
  }

 private:
  const CaptureDocument& doc_;
  SymbolValues values_;
};

SymbolValues complete(const SymbolSpace& sp, SymbolValues v, const std::string& source) {
  for (const auto& [k, x] : sp.fixed) v[k] = x;
  // Ties may refer to other ties: as SymbolSpace.complete, evaluate them until all are known.
  for (std::size_t round = 0; round <= sp.ties.size(); ++round) {
    for (const auto& [k, e] : sp.ties) {
      std::int64_t x = 0;
      std::string why;
      if (e.evaluate(v, x, &why)) v[k] = x;
      else if (why.rfind("a value for symbol", 0) != 0) throw ConfigError(source, "symbol_space.ties." + k, why, "\"" + e.text() + "\"");
    }
  }
  for (const auto& [k, x] : sp.fixed) v[k] = x;
  return v;
}

}  // namespace

std::int64_t multi_tensor_apply_launches(const std::vector<std::int64_t>& numels, int depth) {
  MtaCounter mta{MTA_MAX_TENSORS[std::clamp(depth, 1, 5) - 1]};
  for (auto n : numels) mta.add(n);
  return mta.finish();
}

namespace {

// L layers of the capture's layer kinds in its order, repeated: a model of several kinds (Gemma 2's
// alternating sliding and full attention, Gemma 3's five sliding to one full) keeps its pattern,
// the shortest period of the captured sequence (committed_captures.cpp checks that a config's
// layer_types repeat it).
std::vector<std::pair<std::string, std::int64_t>> repeated_layer_sequence(const CaptureDocument& doc, std::int64_t L) {
  std::vector<std::string> layers;
  for (const auto& [kind, n] : doc.layer_sequence) {
    for (std::int64_t i = 0; i < n && layers.size() < 4096; ++i) layers.push_back(kind);
  }
  if (layers.empty()) throw ConfigError(doc.source, "model.layer_sequence", "at least one layer");
  const std::size_t period = shortest_period(layers);
  std::vector<std::pair<std::string, std::int64_t>> out;
  if (period == 1) return {{layers[0], L}};
  for (std::int64_t i = 0; i < L; ++i) {
    const std::string& kind = layers[static_cast<std::size_t>(i) % period];
    if (!out.empty() && out.back().first == kind) {
      ++out.back().second;
    } else {
      out.emplace_back(kind, 1);
    }
  }
  return out;
}

}  // namespace

CaptureDocument scale_capture(const CaptureDocument& doc, const SymbolValues& changes) {
  if (!doc.scalable || !doc.symbol_space) {
    throw ConfigError(doc.source, "scalable", "a capture made with symbols (this one was made with --no-symbols)");
  }
  const SymbolSpace& sp = *doc.symbol_space;
  SymbolValues indep;
  for (const auto& s : sp.independent) indep[s] = doc.symbols.at(s);
  for (const auto& [k, v] : changes) {
    const std::string key = "symbols." + k;
    if (v < 1) throw ConfigError(doc.source, key, "a value >= 1", std::to_string(v));
    if (is_layer_symbol(k)) continue;
    if (auto f = sp.fixed.find(k); f != sp.fixed.end()) {
      if (v != f->second) {
        throw ConfigError(doc.source, key,
                          fmt::format("{} (fixed in this capture: a size-1 dimension changes PyTorch's view/copy "
                                      "decisions; capture at the other size instead)", f->second),
                          std::to_string(v));
      }
      continue;
    }
    if (auto t = sp.ties.find(k); t != sp.ties.end()) {
      throw ConfigError(doc.source, key, "an independent symbol (" + k + " = " + t->second.text() + " is tied: change those)",
                        std::to_string(v));
    }
    if (!indep.contains(k)) {
      throw ConfigError(doc.source, key, "one of this capture's independent symbols: " + fmt::format("{}", fmt::join(sp.independent, ", ")));
    }
    indep[k] = v;
  }
  SymbolValues vals = complete(sp, indep, doc.source);
  for (const auto& [k, v] : doc.symbols) {
    if (!is_layer_symbol(k)) continue;
    auto c = changes.find(k);
    vals[k] = c != changes.end() ? c->second : v;
  }

  CaptureDocument out = doc;
  out.symbols = vals;
  if (auto b = vals.find("b"); b != vals.end()) out.run.micro_batch = b->second;
  if (auto s = vals.find("s"); s != vals.end()) out.run.seq = s->second;
  if (changes.contains("L")) {
    const std::int64_t L = changes.at("L");
    out.model_layers = L;
    out.layer_sequence = repeated_layer_sequence(doc, L);
    out.layer_counts.clear();
    for (const auto& [kind, n] : out.layer_sequence) out.layer_counts[kind] += n;
    for (auto& l : out.layers) l.count = out.layer_counts[l.kind];
    if (doc.symbols.contains("L")) vals["L"] = L;
    for (const auto& [kind, n] : out.layer_counts) {
      if (doc.symbols.contains("L_" + kind)) vals["L_" + kind] = n;
    }
    out.symbols = vals;
  }
  const Scaler sc(doc, vals);
  auto phase = [&](CapturedPhase& p) {
    for (auto& o : p.ops) sc.op(o, out.layer_sequence);
  };
  for (auto& [name, p] : out.ends) phase(p);
  for (auto& l : out.layers) {
    phase(l.forward);
    phase(l.recompute);
    phase(l.backward);
  }
  for (auto& seg : out.optimizer) {
    phase(seg.ops);
    for (auto& [kind, body] : seg.bodies) phase(body);
  }
  for (auto& p : out.params) {
    for (auto& d : p.shape) sc.dim(d, "params " + p.name);
  }
  // scale.py: a buffer whose bytes_expr is null (a storage larger than its tensor) keeps its bytes;
  // every buffer's alloc_bytes is rounded again. Positions do not change with sizes.
  for (std::size_t i = 0; i < out.buffers.size(); ++i) {
    auto& b = out.buffers[i];
    if (b.bytes_expr) b.bytes = sc.eval(*b.bytes_expr, fmt::format("buffers[{}].bytes_expr", i));
    if (!round_up_to_block(b.bytes, doc.block_bytes, b.alloc_bytes)) {
      throw ConfigError(doc.source, fmt::format("buffers[{}].bytes_expr", i), "a size that fits 64 bits once rounded to the allocator's block");
    }
  }
  out.totals = compute_totals(out);
  // scale.py's `out["memory"] = replay(out)`: the scaled document's own layer sequence.
  out.memory = replay_capture_memory(out).memory;
  return out;
}

SymbolValues symbols_of_model(const ModelSpec& m, std::int64_t micro_batch, std::int64_t seq) {
  SymbolValues v{{"b", micro_batch}, {"s", seq}, {"h", m.hidden}, {"a", m.heads}, {"V", m.vocab}, {"L", m.layers}};
  v["kv"] = m.kv_heads > 0 ? m.kv_heads : m.heads;
  v["g"] = v["kv"] > 0 ? m.heads / v["kv"] : 0;
  v["d"] = m.heads > 0 ? m.head_dim() : 0;
  v["f"] = m.ffn_hidden > 0 ? m.ffn_hidden : 4 * m.hidden;
  if (m.seq_len > 0) v["P"] = m.seq_len;
  return v;
}

SymbolValues capture_changes_for(const CaptureDocument& doc, const SymbolValues& target) {
  if (!doc.symbol_space) throw ConfigError(doc.source, "scalable", "a capture made with symbols (this one was made with --no-symbols)");
  const SymbolSpace& sp = *doc.symbol_space;
  SymbolValues changes;
  for (const auto& s : sp.independent) {
    if (auto t = target.find(s); t != target.end()) changes[s] = t->second;
  }
  if (auto l = target.find("L"); l != target.end() && doc.symbols.contains("L")) changes["L"] = l->second;
  const SymbolValues done = complete(sp, [&] {
    SymbolValues indep;
    for (const auto& s : sp.independent) indep[s] = changes.contains(s) ? changes.at(s) : doc.symbols.at(s);
    return indep;
  }(), doc.source);
  auto check = [&](const std::string& k, const std::string& rule) {
    auto t = target.find(k);
    auto d = done.find(k);
    if (t != target.end() && d != done.end() && t->second != d->second) {
      throw ConfigError(doc.source, "symbols." + k,
                        fmt::format("{} = {} (this capture's architecture: {})", k, d->second, rule),
                        std::to_string(t->second));
    }
  };
  for (const auto& [k, e] : sp.ties) check(k, e.text());
  for (const auto& [k, x] : sp.fixed) check(k, "fixed");
  return changes;
}

}  // namespace trainsim::wl
