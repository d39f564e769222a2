#include "capture_document.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

#include "gzip_file.hpp"

namespace trainsim::wl {
namespace {

constexpr std::array<const char*, OP_CLASS_COUNT> OP_CLASS_NAMES = {
    "gemm",      "batched_gemm", "attention_fwd", "attention_bwd", "elementwise", "reduction", "normalization",
    "softmax",   "loss",         "copy_cast",     "index_gather",  "fill",        "alloc",     "random",
    "foreach",   "optimizer",    "view",          "sync",          "host",        "other"};

// SCHEMA.md, "Phases, layers and ops", in CapturePhase's order.
constexpr std::array<std::pair<CapturePhase, std::string_view>, 8> PHASE_NAMES = {{
    {CapturePhase::EMBED_FORWARD, "embed.forward"},
    {CapturePhase::LAYER_FORWARD, "layer.forward"},
    {CapturePhase::HEAD_FORWARD, "head.forward"},
    {CapturePhase::HEAD_BACKWARD, "head.backward"},
    {CapturePhase::LAYER_RECOMPUTE, "layer.recompute"},
    {CapturePhase::LAYER_BACKWARD, "layer.backward"},
    {CapturePhase::EMBED_BACKWARD, "embed.backward"},
    {CapturePhase::OPTIMIZER, "optimizer"},
}};

constexpr std::int64_t MAX_I = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t MIN_I = std::numeric_limits<std::int64_t>::min();
// Arrays in a capture are bounded by the file size the strict reader accepts; these keep a hostile
// document from asking for more work than its size suggests (ops and tensors of a real capture
// number in the thousands; a layer kind list, a handful).
constexpr std::size_t MAX_SHAPE_RANK = 16;
// SCHEMA.md, "Symbols and expressions": the symbols a capture uses (plus L_<kind>).
bool carries_tp(const Expr& e) { return e.mentions("a") || e.mentions("kv") || e.mentions("f"); }

class Loader {
 public:
  explicit Loader(const JsonDocument& json) : json_(json) {}

  CaptureDocument load();

 private:
  const JsonDocument& json_;
  CaptureDocument doc_;

  [[noreturn]] void error(const std::string& path, const std::string& expected, const std::string& got = {}) const {
    throw ConfigError(json_.source, path, expected, got);
  }
  StrictObject object_at(const nlohmann::json& v, const std::string& path) const {
    return StrictObject(v, json_.source, path);
  }
  const nlohmann::json& array(StrictObject& o, std::string_view key) {
    const auto& v = o.raw(key);
    if (!v.is_array()) error(o.path_of(key), "an array", describe_json(v));
    return v;
  }
  std::vector<std::string> strings(StrictObject& o, std::string_view key) {
    const auto& v = array(o, key);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) error(fmt::format("{}[{}]", o.path_of(key), i), "a string", describe_json(v[i]));
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }
  std::string string_or_null(StrictObject& o, std::string_view key) {
    const auto& v = o.raw(key);
    if (v.is_null()) return {};
    if (!v.is_string()) error(o.path_of(key), "a string or null", describe_json(v));
    return v.get<std::string>();
  }
  std::string one_of(StrictObject& o, std::string_view key, std::initializer_list<std::string_view> allowed) {
    std::string s = o.string(key);
    for (auto a : allowed) {
      if (a == s) return s;
    }
    std::vector<std::string_view> names(allowed);
    error(o.path_of(key), "one of " + join_names(names), "\"" + s + "\"");
  }
  Expr expr_at(const nlohmann::json& v, const std::string& path) const {
    if (!v.is_string()) error(path, "an expression string", describe_json(v));
    Expr e;
    std::string why;
    if (!Expr::parse(v.get<std::string>(), e, &why)) error(path, why, describe_json(v));
    return e;
  }
  // The expression must give the recorded value at the document's symbols (validate.py's check):
  // a document whose expressions disagree with its numbers would scale to wrong sizes.
  void check_value(const Expr& e, std::int64_t value, const std::string& path) const {
    std::int64_t got = 0;
    std::string why;
    if (!e.evaluate(doc_.symbols, got, &why)) error(path, why, "\"" + e.text() + "\"");
    if (got != value) {
      error(path, fmt::format("an expression equal to the recorded {} at the document's symbols", value),
            fmt::format("\"{}\" = {}", e.text(), got));
    }
  }
  CapturedDim dim(StrictObject& o, std::string_view key, bool check = true, std::int64_t min = 0) {
    CapturedDim d;
    d.value = o.integer(key, min, MAX_I);
    const std::string ek = std::string(key) + "_expr";
    d.expr = expr_at(o.raw(ek), o.path_of(ek));
    if (check) check_value(d.expr, d.value, o.path_of(ek));
    return d;
  }
  std::vector<CapturedDim> dims(StrictObject& o, std::string_view key, bool check_all = true,
                                const std::vector<std::int64_t>* shape = nullptr);

  void top_level(StrictObject& top);
  void provenance(StrictObject o);
  void symbol_space(StrictObject& top);
  void model(StrictObject o);
  CapturedParam param(StrictObject o);
  CapturedBuffer buffer(StrictObject o, std::size_t index);
  std::optional<CapturePosition> position(const nlohmann::json& v, const std::string& path, bool nullable, bool alloc = false);
  void check_positions();
  void check_position(const CapturePosition& p, const CapturedBuffer& b, const std::string& path) const;
  std::vector<std::int64_t> tensor(StrictObject o, bool& carries, bool list_member, CapturedListMember* member);
  CapturedPhase phase(StrictObject o);
  CapturedOp op(StrictObject o);
  CapturedGemm gemm(StrictObject o);
  CapturedAttention attention(StrictObject o);
  CapturedLayer layer(StrictObject o);
  void optimizer(StrictObject o);
  CaptureSums sums(StrictObject o);
  void totals(StrictObject o);
  void memory(StrictObject o);
};

std::vector<CapturedDim> Loader::dims(StrictObject& o, std::string_view key, bool check_all,
                                      const std::vector<std::int64_t>* shape) {
  const auto& vals = array(o, key);
  const std::string ek = std::string(key) + "_expr";
  const auto& exprs = array(o, ek);
  if (vals.size() > MAX_SHAPE_RANK) error(o.path_of(key), fmt::format("at most {} dimensions", MAX_SHAPE_RANK));
  if (exprs.size() != vals.size()) error(o.path_of(ek), fmt::format("{} expressions, one per value", vals.size()));
  std::vector<CapturedDim> out;
  for (std::size_t i = 0; i < vals.size(); ++i) {
    const std::string p = fmt::format("{}[{}]", o.path_of(key), i);
    if (!vals[i].is_number_integer()) error(p, "an integer", describe_json(vals[i]));
    CapturedDim d{vals[i].get<std::int64_t>(), expr_at(exprs[i], fmt::format("{}[{}]", o.path_of(ek), i))};
    // Strides of size-1 dimensions carry no meaning (SCHEMA.md, "Symbols and expressions").
    const bool size_one = shape != nullptr && i < shape->size() && (*shape)[i] == 1;
    if (check_all && !size_one) check_value(d.expr, d.value, fmt::format("{}[{}]", o.path_of(ek), i));
    out.push_back(std::move(d));
  }
  return out;
}

void Loader::provenance(StrictObject o) {
  o.string("tool");
  o.string("tool_version");
  o.string("torch");
  string_or_null(o, "transformers");
  o.string("python");
  one_of(o, "device_claimed", {"cuda:0", "cpu"});
  // source's keys depend on its type (hf-config or module); kept as written.
  if (!o.raw("source").is_object()) error(o.path_of("source"), "an object", describe_json(o.raw("source")));
  o.finish();
}

void Loader::symbol_space(StrictObject& top) {
  doc_.scalable = top.boolean("scalable");
  const auto& sp = top.raw("symbol_space");
  if (sp.is_null()) {
    if (doc_.scalable) error("symbol_space", "an object (the capture is scalable)", "null");
    return;
  }
  StrictObject o = object_at(sp, "symbol_space");
  SymbolSpace space;
  space.independent = strings(o, "independent");
  for (const auto& s : space.independent) {
    if (!doc_.symbols.contains(s)) error("symbol_space.independent", "names of symbols", "\"" + s + "\"");
  }
  StrictObject ties = o.object("ties");
  for (const auto& [name, v] : ties.json().items()) {
    Expr e = expr_at(ties.raw(name), ties.path_of(name));
    auto it = doc_.symbols.find(name);
    if (it == doc_.symbols.end()) error(ties.path_of(name), "a tie of a symbol in symbols");
    check_value(e, it->second, ties.path_of(name));
    space.ties.emplace(name, std::move(e));
  }
  StrictObject fixed = o.object("fixed");
  for (const auto& [name, v] : fixed.json().items()) {
    space.fixed[name] = fixed.integer(name, 1, MAX_I);
  }
  o.finish();
  doc_.symbol_space = std::move(space);
}

void Loader::model(StrictObject o) {
  doc_.model_layers = o.integer("layers", 1, MAX_I);
  StrictObject counts = o.object("layer_counts");
  for (const auto& [kind, v] : counts.json().items()) doc_.layer_counts[kind] = counts.integer(kind, 0, MAX_I);
  const auto& seq = array(o, "layer_sequence");
  for (std::size_t i = 0; i < seq.size(); ++i) {
    const auto& e = seq[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number_integer() || e[1].get<std::int64_t>() < 1) {
      error(fmt::format("model.layer_sequence[{}]", i), "[kind, run length >= 1]", describe_json(e));
    }
    doc_.layer_sequence.emplace_back(e[0].get<std::string>(), e[1].get<std::int64_t>());
  }
  o.integer("captured_layers", 0, MAX_I);
  strings(o, "captured_kinds");
  o.finish();
}

CapturedParam Loader::param(StrictObject o) {
  CapturedParam p;
  p.name = o.string("name");
  p.buf = o.integer("buf", 0, MAX_I);
  p.group = one_of(o, "group", {"embed", "head", "layer"});
  p.shape = dims(o, "shape");
  p.dtype = o.string("dtype");
  o.string("module");
  p.tp = one_of(o, "tp", {"column", "row", "vocab", "replicated"});
  if (o.has("local")) o.string("local");
  if (o.has("layer_kind")) p.layer_kind = o.string("layer_kind");
  o.finish();
  return p;
}

// An allocation names the op that made the buffer (op -1, "before the phase", is for frees only:
// replay.py would index its timeline from the end with it).
std::optional<CapturePosition> Loader::position(const nlohmann::json& v, const std::string& path, bool nullable, bool alloc) {
  if (nullable && v.is_null()) return std::nullopt;
  StrictObject o = object_at(v, path);
  CapturePosition p;
  p.phase = o.choice("phase", EnumNames<CapturePhase>(PHASE_NAMES));
  p.op = o.integer("op", alloc ? 0 : -1, MAX_I);
  p.layer_offset = o.optional_integer("layer_offset", MIN_I, MAX_I);
  p.layer_index = o.optional_integer("layer_index", MIN_I, MAX_I);
  if (p.layer_offset && p.layer_index) error(o.path_of("layer_index"), "layer_offset or layer_index, not both");
  p.segment = o.optional_integer("segment", 0, MAX_I);
  p.after = o.optional_boolean("after").value_or(false);
  o.finish();
  return p;
}

// validate.py's _pos, once the phases are known: an optimizer position names one of its segments,
// and no position names an op past its phase's (the longest layer kind's or body's) ops. A
// layer_offset in a layer phase counts from the owning layer's copy, so only a layer's buffer has
// one (replay.py has no layer to count from otherwise).
void Loader::check_position(const CapturePosition& p, const CapturedBuffer& b, const std::string& path) const {
  std::size_t n = 0;
  if (p.phase == CapturePhase::OPTIMIZER) {
    if (!p.segment || *p.segment >= static_cast<std::int64_t>(doc_.optimizer.size())) {
      error(path + ".segment", fmt::format("a segment of phases.optimizer (it has {})", doc_.optimizer.size()),
            p.segment ? std::to_string(*p.segment) : "none");
    }
    const CapturedSegment& seg = doc_.optimizer[static_cast<std::size_t>(*p.segment)];
    n = seg.ops.ops.size();
    for (const auto& [kind, body] : seg.bodies) n = std::max(n, body.ops.size());
  } else if (is_layer_phase(p.phase)) {
    for (const auto& l : doc_.layers) {
      const CapturedPhase& ph = p.phase == CapturePhase::LAYER_FORWARD     ? l.forward
                                : p.phase == CapturePhase::LAYER_RECOMPUTE ? l.recompute
                                                                           : l.backward;
      n = std::max(n, ph.ops.size());
    }
    if (p.layer_offset && b.owner != "layer") {
      error(path + ".layer_offset", "layer_index (layer_offset counts from the owning layer; this buffer's owner is " + b.owner + ")");
    }
  } else {
    n = doc_.ends.at(capture_phase_name(p.phase)).ops.size();
  }
  if (p.op >= static_cast<std::int64_t>(n)) {
    error(path + ".op", fmt::format("an op of {} (it has {})", capture_phase_name(p.phase), n), std::to_string(p.op));
  }
}

void Loader::check_positions() {
  for (std::size_t i = 0; i < doc_.buffers.size(); ++i) {
    const CapturedBuffer& b = doc_.buffers[i];
    const std::string at = fmt::format("buffers[{}]", i);
    if (b.alloc) check_position(*b.alloc, b, at + ".alloc");
    if (b.free) check_position(*b.free, b, at + ".free");
    if (b.free_first.at) check_position(*b.free_first.at, b, at + ".free_first");
    if (b.free_last.at) check_position(*b.free_last.at, b, at + ".free_last");
    for (std::size_t j = 0; j < b.saved.size(); ++j) check_position(b.saved[j], b, fmt::format("{}.saved[{}]", at, j));
  }
}

CapturedBuffer Loader::buffer(StrictObject o, std::size_t index) {
  CapturedBuffer b;
  if (o.integer("id", 0, MAX_I) != static_cast<std::int64_t>(index)) {
    error(o.path_of("id"), fmt::format("{} (ids are the buffers' indices)", index));
  }
  b.kind = one_of(o, "kind", {"activation", "param", "grad", "optimizer_state", "model_buffer", "input", "existing",
                              "param_host", "grad_host"});
  b.dtype = o.string("dtype");
  b.bytes = o.integer("bytes", 0, MAX_I);
  b.alloc_bytes = o.integer("alloc_bytes", 0, MAX_I);
  // validate.py: what the replay adds up is the allocator's rounding of the storage.
  if (std::int64_t rounded = 0; !round_up_to_block(b.bytes, doc_.block_bytes, rounded) || rounded != b.alloc_bytes) {
    error(o.path_of("alloc_bytes"), fmt::format("bytes rounded up to the allocator's block of {}", doc_.block_bytes),
          std::to_string(b.alloc_bytes));
  }
  b.owner = one_of(o, "owner", {"layer", "ends", "optimizer"});
  if (o.has("layer_kind")) b.layer_kind = o.string("layer_kind");
  if (b.owner == "layer" && b.layer_kind.empty()) error(o.path_of("layer_kind"), "a layer kind (owner is layer)");
  if (o.has("bytes_expr") && !o.raw("bytes_expr").is_null()) {
    b.bytes_expr = expr_at(o.raw("bytes_expr"), o.path_of("bytes_expr"));
    if (doc_.scalable) check_value(*b.bytes_expr, b.bytes, o.path_of("bytes_expr"));
  }
  if (o.has("bytes_note")) o.string("bytes_note");
  if (o.has("layout")) {
    StrictObject lay = o.object("layout");
    std::vector<std::int64_t> sh;
    for (const auto& d : dims(lay, "shape")) sh.push_back(d.value);
    dims(lay, "stride", true, &sh);
    const std::int64_t offset = lay.integer("offset", 0, MAX_I);
    check_value(expr_at(lay.raw("offset_expr"), lay.path_of("offset_expr")), offset, lay.path_of("offset_expr"));
    lay.string("dtype");
    lay.finish();
  }
  if (o.has("of")) o.string("of");
  b.alloc = position(o.raw("alloc"), o.path_of("alloc"), true, true);
  b.free = position(o.raw("free"), o.path_of("free"), true);
  for (auto [key, f] : {std::pair{"free_first", &b.free_first}, std::pair{"free_last", &b.free_last}}) {
    f->given = o.has(key);
    if (f->given) f->at = position(o.raw(key), o.path_of(key), true);
  }
  if (o.has("saved")) {
    const auto& saved = array(o, "saved");
    for (std::size_t i = 0; i < saved.size(); ++i) b.saved.push_back(*position(saved[i], fmt::format("{}[{}]", o.path_of("saved"), i), false));
  }
  if (o.has("per_layer")) b.per_layer = o.string("per_layer");
  b.per_repetition = o.optional_boolean("per_repetition").value_or(false);
  // replay.py repeats such a buffer over the layers of its layer_kind.
  if (b.per_repetition && b.owner == "optimizer" && b.layer_kind.empty()) {
    error(o.path_of("layer_kind"), "the layer kind of a per-repetition buffer");
  }
  if (o.has("device")) o.string("device");
  b.freed_by_gc = o.optional_boolean("freed_by_gc").value_or(false);
  o.finish();
  return b;
}

std::vector<std::int64_t> Loader::tensor(StrictObject o, bool& carries, bool list_member, CapturedListMember* member) {
  o.integer("buf", 0, static_cast<std::int64_t>(doc_.buffers.size()) - 1);
  o.string("dtype");
  const auto shape = dims(o, "shape");
  std::vector<std::int64_t> sh;
  for (const auto& d : shape) {
    sh.push_back(d.value);
    carries = carries || carries_tp(d.expr);
  }
  dims(o, "stride", true, &sh);
  const std::int64_t offset = o.integer("offset", 0, MAX_I);
  check_value(expr_at(o.raw("offset_expr"), o.path_of("offset_expr")), offset, o.path_of("offset_expr"));
  if (o.has("layer_offset")) o.integer("layer_offset", std::numeric_limits<std::int64_t>::min(), MAX_I);
  if (o.has("layer_index")) o.integer("layer_index", std::numeric_limits<std::int64_t>::min(), MAX_I);
  if (o.has("device")) o.string("device");
  // List members name their parameter and group (SCHEMA.md, "Optimizer").
  if (list_member || o.has("param")) o.string("param");
  std::string group;
  if (list_member || o.has("group")) group = one_of(o, "group", {"ends", "layer"});
  std::string kind;
  if (o.has("layer_kind")) kind = o.string("layer_kind");
  o.finish();
  if (member != nullptr) {
    member->shape = shape;
    member->layer = group == "layer";
    member->layer_kind = kind;
    if (member->layer && kind.empty()) error(o.path_of("layer_kind"), "the layer kind of a layer member");
  }
  return sh;
}

CapturedGemm Loader::gemm(StrictObject o) {
  CapturedGemm g;
  g.m = dim(o, "m");
  g.n = dim(o, "n");
  g.k = dim(o, "k");
  g.batch = dim(o, "batch", true, 1);
  g.dtype = o.string("dtype");
  o.string("out_dtype");
  one_of(o, "layout", {"NN", "NT", "TN", "TT"});
  StrictObject cublas = o.object("cublas");
  one_of(cublas, "transa", {"n", "t"});
  one_of(cublas, "transb", {"n", "t"});
  cublas.integer("m", 0, MAX_I);
  cublas.integer("n", 0, MAX_I);
  cublas.integer("k", 0, MAX_I);
  cublas.finish();
  g.pass = one_of(o, "pass", {"fwd", "dgrad", "wgrad", "activation"});
  if (o.has("weight")) o.string("weight");
  if (o.has("role")) g.role = o.string("role");
  if (o.has("tp")) {
    StrictObject tp = o.object("tp");
    g.tp_mode = one_of(tp, "mode", {"column", "row", "vocab", "unknown"});
    if (tp.has("split")) g.tp_split = one_of(tp, "split", {"m", "n", "k"})[0];
    tp.finish();
  }
  o.finish();
  return g;
}

CapturedAttention Loader::attention(StrictObject o) {
  CapturedAttention a;
  a.b = dim(o, "b", true, 1);
  a.heads = dim(o, "heads", true, 1);
  a.kv_heads = dim(o, "kv_heads", true, 1);
  a.s_q = dim(o, "s_q", true, 1);
  a.s_kv = dim(o, "s_kv", true, 1);
  a.head_dim = dim(o, "head_dim", true, 1);
  a.head_dim_v = dim(o, "head_dim_v", true, 1);
  a.causal = o.boolean("causal");
  o.number("dropout", NumberRange{0, 1, true, "a probability in [0, 1]"});
  a.backend = o.string("backend");
  o.string("dtype");
  o.boolean("masked");
  o.finish();
  return a;
}

CapturedOp Loader::op(StrictObject o) {
  CapturedOp e;
  o.integer("i", 0, MAX_I);
  e.op = o.string("op");
  if (e.op.find("::") == std::string::npos) error(o.path_of("op"), "an ATen name (\"aten::addmm.default\")", "\"" + e.op + "\"");
  {
    const std::string cls = o.string("class");
    bool found = false;
    for (std::size_t c = 0; c < OP_CLASS_COUNT; ++c) {
      if (cls == OP_CLASS_NAMES[c]) {
        e.cls = static_cast<OpClass>(c);
        found = true;
      }
    }
    if (!found) error(o.path_of("class"), "one of the op classes of SCHEMA.md", "\"" + cls + "\"");
  }
  e.compute_stream = one_of(o, "stream", {"compute", "cpu"}) == "compute";
  e.kernels = o.integer("kernels", 0, MAX_I);
  // A list op's bytes and FLOPs are the full model's, in L (SCHEMA.md, "Optimizer"): its recorded
  // values are not checked against the expressions (as validate.py).
  const bool list_op = o.has("lists");
  e.list_op = list_op;
  e.bytes_read = dim(o, "bytes_read", !list_op);
  e.bytes_written = dim(o, "bytes_written", !list_op);
  e.flops = dim(o, "flops", !list_op);
  if ((e.cls == OpClass::VIEW || e.cls == OpClass::ALLOC) && (e.kernels != 0 || e.bytes_read.value != 0 || e.bytes_written.value != 0)) {
    error(o.path_of("kernels"), "0 kernels and 0 bytes for a view or an allocation");
  }
  for (const char* side : {"in", "out"}) {
    const auto& ts = array(o, side);
    for (std::size_t i = 0; i < ts.size(); ++i) {
      tensor(object_at(ts[i], fmt::format("{}[{}]", o.path_of(side), i)), e.carries_tp_symbol, false, nullptr);
    }
  }
  if (o.has("module")) string_or_null(o, "module");
  if (o.has("autograd_node")) string_or_null(o, "autograd_node");
  if (o.has("mutates")) {
    const auto& m = array(o, "mutates");
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (!m[i].is_number_integer()) error(fmt::format("{}[{}]", o.path_of("mutates"), i), "an index into in", describe_json(m[i]));
    }
  }
  if (o.has("view")) o.boolean("view");
  if (o.has("gemm")) e.gemm = gemm(o.object("gemm"));
  if (o.has("attention")) e.attention = attention(o.object("attention"));
  if ((e.cls == OpClass::GEMM || e.cls == OpClass::BATCHED_GEMM) && !e.gemm) error(o.path_of("gemm"), "the GEMM's shape (class " + std::string(op_class_name(e.cls)) + ")");
  if ((e.cls == OpClass::ATTENTION_FWD || e.cls == OpClass::ATTENTION_BWD) && !e.attention) {
    error(o.path_of("attention"), "the attention's shape (class " + std::string(op_class_name(e.cls)) + ")");
  }
  if (list_op) {
    const auto& lists = array(o, "lists");
    for (std::size_t i = 0; i < lists.size(); ++i) {
      StrictObject l = object_at(lists[i], fmt::format("{}[{}]", o.path_of("lists"), i));
      l.string("role");
      l.string("dtype");
      l.boolean("mutated");
      if (l.has("output")) l.boolean("output");
      const auto& members = array(l, "members");
      for (std::size_t j = 0; j < members.size(); ++j) {
        CapturedListMember m;
        bool unused = false;
        tensor(object_at(members[j], fmt::format("{}[{}]", l.path_of("members"), j)), unused, true, i == 0 ? &m : nullptr);
        if (i == 0) e.first_list.push_back(std::move(m));
      }
      l.finish();
    }
  }
  if (o.has("kernels_rule") && !o.raw("kernels_rule").is_null()) {
    StrictObject rule = o.object("kernels_rule");
    e.mta_depth = static_cast<int>(rule.integer("multi_tensor_apply", 1, 64));
    rule.finish();
  }
  if (o.has("measured_us")) o.number("measured_us", non_negative("us"));
  o.finish();
  return e;
}

CapturedPhase Loader::phase(StrictObject o) {
  CapturedPhase p;
  const auto& ops = array(o, "ops");
  for (std::size_t i = 0; i < ops.size(); ++i) p.ops.push_back(op(object_at(ops[i], fmt::format("{}[{}]", o.path_of("ops"), i))));
  o.finish();
  return p;
}

CapturedLayer Loader::layer(StrictObject o) {
  CapturedLayer l;
  l.kind = o.string("kind");
  l.count = o.integer("count", 0, MAX_I);
  l.captured_index = o.integer("captured_index", 0, MAX_I);
  if (!o.raw("recompute_at").is_null()) l.recompute_at = o.integer("recompute_at", 0, MAX_I);
  StrictObject ph = o.object("phases");
  l.forward = phase(ph.object("forward"));
  l.recompute = phase(ph.object("recompute"));
  l.backward = phase(ph.object("backward"));
  ph.finish();
  o.finish();
  return l;
}

void Loader::optimizer(StrictObject o) {
  doc_.optimizer_kind = o.string("kind");
  doc_.optimizer_device = o.string("device");
  const auto& segs = array(o, "segments");
  for (std::size_t i = 0; i < segs.size(); ++i) {
    StrictObject s = object_at(segs[i], fmt::format("{}[{}]", o.path_of("segments"), i));
    CapturedSegment seg;
    seg.group = one_of(s, "group", {"all", "ends", "layers"});
    if (seg.group == "layers") {
      one_of(s, "repeat", {"layers"});
      StrictObject bodies = s.object("bodies");
      for (const auto& [kind, v] : bodies.json().items()) seg.bodies.emplace(kind, phase(bodies.object(kind)));
      bodies.finish();
    } else {
      const auto& ops = array(s, "ops");
      for (std::size_t j = 0; j < ops.size(); ++j) seg.ops.ops.push_back(op(object_at(ops[j], fmt::format("{}[{}]", s.path_of("ops"), j))));
    }
    s.finish();
    doc_.optimizer.push_back(std::move(seg));
  }
  o.finish();
}

// An empty phase's sums are written as {} (replay.totals adds a key only where an op has it).
CaptureSums Loader::sums(StrictObject o) {
  CaptureSums s;
  if (o.has("flops")) s.flops = o.integer("flops", 0, MAX_I);
  if (o.has("bytes_read")) s.bytes_read = o.integer("bytes_read", 0, MAX_I);
  if (o.has("bytes_written")) s.bytes_written = o.integer("bytes_written", 0, MAX_I);
  if (o.has("kernels")) s.kernels = o.integer("kernels", 0, MAX_I);
  o.finish();
  return s;
}

void Loader::totals(StrictObject o) {
  StrictObject ends = o.object("ends");
  for (auto ph : CAPTURE_END_PHASES) doc_.totals.ends[std::string(ph)] = sums(ends.object(ph));
  ends.finish();
  StrictObject layers = o.object("layers");
  for (const auto& [kind, v] : layers.json().items()) {
    StrictObject per = layers.object(kind);
    for (const char* ph : {"forward", "recompute", "backward"}) doc_.totals.layers[kind][ph] = sums(per.object(ph));
    per.finish();
  }
  doc_.totals.optimizer = sums(o.object("optimizer"));
  doc_.totals.step = sums(o.object("step"));
  o.finish();
}

void Loader::memory(StrictObject o) {
  doc_.memory.layers = o.integer("layers", 0, MAX_I);
  doc_.memory.base_bytes = o.integer("base_bytes", 0, MAX_I);
  doc_.memory.peak_bytes = o.integer("peak_bytes", 0, MAX_I);
  // replay.py's peak_at: the op, with the layer in a layer phase or a layers segment.
  if (!o.raw("peak_at").is_null()) {
    StrictObject at = o.object("peak_at");
    CapturePeakAt p;
    p.phase = at.choice("phase", EnumNames<CapturePhase>(PHASE_NAMES));
    p.op = at.integer("op", 0, MAX_I);
    p.segment = at.optional_integer("segment", 0, MAX_I);
    p.layer = at.optional_integer("layer", 0, MAX_I);
    at.finish();
    doc_.memory.peak_at = p;
  }
  doc_.memory.end_bytes = o.integer("end_bytes", 0, MAX_I);
  doc_.memory.unplaced_buffers = o.integer("unplaced_buffers", 0, MAX_I);
  o.finish();
}

void Loader::top_level(StrictObject& top) {
  const std::string kind = top.string("kind");
  if (kind != CAPTURE_KIND) error("kind", "\"trainsim.capture\"", "\"" + kind + "\"");
  top.integer("schema_version", CAPTURE_SCHEMA_VERSION, CAPTURE_SCHEMA_VERSION);
  provenance(top.object("provenance"));
  StrictObject run = top.object("run");
  doc_.run.micro_batch = run.integer("micro_batch", 1, MAX_I);
  doc_.run.seq = run.integer("seq", 1, MAX_I);
  doc_.run.precision = one_of(run, "precision", {"fp32", "bf16", "autocast-bf16", "fp16-scaler"});
  doc_.run.recompute = run.boolean("recompute");
  doc_.run.optimizer = one_of(run, "optimizer", {"adamw-fused", "adamw-foreach", "adamw-forloop", "none"});
  doc_.run.optimizer_device = one_of(run, "optimizer_device", {"gpu", "cpu"});
  doc_.run.device = one_of(run, "device", {"cuda", "cpu"});
  doc_.run.sdpa = run.string("sdpa");
  run.finish();
  strings(top, "stand_ins");
  strings(top, "notes");
  StrictObject syms = top.object("symbols");
  for (const auto& [name, v] : syms.json().items()) doc_.symbols[name] = syms.integer(name, 1, MAX_I);
  symbol_space(top);
  model(top.object("model"));
  {
    const auto names = strings(top, "op_classes");
    bool same = names.size() == OP_CLASS_COUNT;
    for (std::size_t i = 0; same && i < names.size(); ++i) same = names[i] == OP_CLASS_NAMES[i];
    if (!same) error("op_classes", "the op classes of SCHEMA.md, in its order");
  }
  StrictObject alloc = top.object("allocator");
  doc_.block_bytes = alloc.integer("block_bytes", 1, 1 << 30);
  alloc.finish();
  // Buffers first: tensors name them by id.
  const auto& bufs = array(top, "buffers");
  for (std::size_t i = 0; i < bufs.size(); ++i) doc_.buffers.push_back(buffer(object_at(bufs[i], fmt::format("buffers[{}]", i)), i));
  const auto& params = array(top, "params");
  for (std::size_t i = 0; i < params.size(); ++i) {
    doc_.params.push_back(param(object_at(params[i], fmt::format("params[{}]", i))));
    if (doc_.params.back().buf >= static_cast<std::int64_t>(doc_.buffers.size())) error(fmt::format("params[{}].buf", i), "a buffer id");
  }
  StrictObject phases = top.object("phases");
  for (auto ph : CAPTURE_END_PHASES) doc_.ends[std::string(ph)] = phase(phases.object(ph));
  optimizer(phases.object("optimizer"));
  phases.finish();
  const auto& layers = array(top, "layers");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    doc_.layers.push_back(layer(object_at(layers[i], fmt::format("layers[{}]", i))));
    for (std::size_t j = 0; j < i; ++j) {
      if (doc_.layers[j].kind == doc_.layers[i].kind) error(fmt::format("layers[{}].kind", i), "a layer kind no earlier layer has", "\"" + doc_.layers[i].kind + "\"");
    }
  }
  // The replay runs each layer of the sequence with its kind's ops.
  for (std::size_t i = 0; i < doc_.layer_sequence.size(); ++i) {
    const std::string& kind = doc_.layer_sequence[i].first;
    if (std::none_of(doc_.layers.begin(), doc_.layers.end(), [&](const CapturedLayer& l) { return l.kind == kind; })) {
      error(fmt::format("model.layer_sequence[{}]", i), "a kind of layers[]", "\"" + kind + "\"");
    }
  }
  check_positions();
  totals(top.object("totals"));
  memory(top.object("memory"));
  if (top.has("timing")) top.raw("timing");  // --time's measurements: untested, kept out of the costing
  top.finish();
}

CaptureDocument Loader::load() {
  doc_.source = json_.source;
  StrictObject top(json_.json, json_.source, "");
  top_level(top);
  return std::move(doc_);
}

}  // namespace

const char* op_class_name(OpClass c) { return OP_CLASS_NAMES[static_cast<std::size_t>(c)]; }

const char* capture_phase_name(CapturePhase p) { return PHASE_NAMES[static_cast<std::size_t>(p)].second.data(); }

bool round_up_to_block(std::int64_t bytes, std::int64_t block, std::int64_t& out) {
  if (block <= 0) return false;
  // Python's -(-n // block) * block: a ceiling on both sides of 0 (C++ division truncates).
  const std::int64_t q = bytes / block + ((bytes % block) > 0 ? 1 : 0);
  return !__builtin_mul_overflow(q, block, &out);
}

CaptureDocument load_capture_json(const JsonDocument& json) { return Loader(json).load(); }

// Committed captures are stored gzipped (a 300 KB capture packs into 20 KB); 64 MiB once unpacked
// holds a capture of hundreds of layer kinds.
CaptureDocument load_capture(const std::string& path) {
  constexpr std::size_t max_bytes = std::size_t{64} << 20;
  const std::string text = read_maybe_gzipped(path, "a capture (trainsim.capture JSON, optionally gzipped)", max_bytes);
  return load_capture_json(parse_json_text(text, path, max_bytes / 4));
}

CaptureSums sum_ops(const CapturedPhase& phase) {
  CaptureSums s;
  for (const auto& o : phase.ops) {
    s.flops += o.flops.value;
    s.bytes_read += o.bytes_read.value;
    s.bytes_written += o.bytes_written.value;
    s.kernels += o.kernels;
  }
  return s;
}

namespace {
void add_scaled(CaptureSums& acc, const CaptureSums& s, std::int64_t times) {
  acc.flops += s.flops * times;
  acc.bytes_read += s.bytes_read * times;
  acc.bytes_written += s.bytes_written * times;
  acc.kernels += s.kernels * times;
}
}  // namespace

// replay.totals: ends per phase, one layer of each kind per phase, the optimizer (a layers segment
// once per layer of its kind), and the step (ends + count x layer phases + optimizer).
CaptureTotals compute_totals(const CaptureDocument& doc) {
  CaptureTotals t;
  for (auto ph : CAPTURE_END_PHASES) {
    t.ends[std::string(ph)] = sum_ops(doc.ends.at(std::string(ph)));
    add_scaled(t.step, t.ends[std::string(ph)], 1);
  }
  auto count_of = [&](const std::string& kind) {
    auto it = doc.layer_counts.find(kind);
    return it == doc.layer_counts.end() ? std::int64_t{0} : it->second;
  };
  for (const auto& l : doc.layers) {
    auto& per = t.layers[l.kind];
    per["forward"] = sum_ops(l.forward);
    per["recompute"] = sum_ops(l.recompute);
    per["backward"] = sum_ops(l.backward);
    for (const auto& [ph, s] : per) add_scaled(t.step, s, count_of(l.kind));
  }
  for (const auto& seg : doc.optimizer) {
    if (seg.group == "layers") {
      for (const auto& [kind, body] : seg.bodies) add_scaled(t.optimizer, sum_ops(body), count_of(kind));
    } else {
      add_scaled(t.optimizer, sum_ops(seg.ops), 1);
    }
  }
  add_scaled(t.step, t.optimizer, 1);
  return t;
}

}  // namespace trainsim::wl

