// The capture loader (workloads/capture_document.hpp), its expressions and its scaling against
// trainsim_capture's own (tests/data/captures/*.scaled_*.json were written by
// `python3 -m trainsim_capture --scale ... --set ...` from the committed captures).
#include "capture_document.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "capture_scale.hpp"
#include "config_error.hpp"
#include "test_support.hpp"

namespace trainsim::wl {
namespace {

const std::string GPT = "workloads/captures/gpt_model_py.json";
const std::string LLAMA = "workloads/captures/llama_model_llama_py.recompute.json";

std::int64_t eval(const std::string& text, const SymbolValues& v) {
  Expr e;
  std::string why;
  EXPECT_TRUE(Expr::parse(text, e, &why)) << text << ": " << why;
  std::int64_t out = 0;
  EXPECT_TRUE(e.evaluate(v, out, &why)) << text << ": " << why;
  return out;
}

TEST(CaptureExpr, HandWorkedValues) {
  EXPECT_EQ(eval("2*b*s^2*a", {{"b", 2}, {"s", 3}, {"a", 5}}), 180);
  EXPECT_EQ(eval("s*a*d+2*s*kv*d", {{"s", 4}, {"a", 8}, {"d", 16}, {"kv", 2}}), 768);
  EXPECT_EQ(eval("d/2", {{"d", 128}}), 64);
  EXPECT_EQ(eval("-1", {}), -1);
  EXPECT_EQ(eval("s+1", {{"s", 7}}), 8);
  EXPECT_EQ(eval("3*h/2", {{"h", 4}}), 6);
  EXPECT_EQ(eval("3/2+h/2", {{"h", 1}}), 2);  // poly.py prints a rational constant as "3/2"
  EXPECT_EQ(eval("b*s*h - 2*b*s", {{"b", 2}, {"s", 3}, {"h", 4}}), 12);
  EXPECT_EQ(eval("L_decoder*h", {{"L_decoder", 80}, {"h", 8192}}), 655360);
}

TEST(CaptureExpr, RefusesTextOutsideTheGrammar) {
  for (const char* bad : {"", "2*", "b^", "b^0", "b/0", "b**2", "2 3", "b+", "(b)", "b*2", "b^99", "1e3", "b/-2"}) {
    Expr e;
    std::string why;
    EXPECT_FALSE(Expr::parse(bad, e, &why)) << "accepted \"" << bad << "\"";
    EXPECT_FALSE(why.empty()) << bad;
  }
  EXPECT_FALSE([] {
    Expr e;
    return Expr::parse(std::string(600, 'b'), e, nullptr);
  }());
}

TEST(CaptureExpr, RefusesNonIntegersOverflowAndMissingSymbols) {
  Expr e;
  std::string why;
  std::int64_t out = 0;
  ASSERT_TRUE(Expr::parse("d/2", e, &why));
  EXPECT_FALSE(e.evaluate({{"d", 3}}, out, &why));
  EXPECT_NE(why.find("integer"), std::string::npos) << why;
  ASSERT_TRUE(Expr::parse("h^4*s^4", e, &why));
  EXPECT_FALSE(e.evaluate({{"h", 1 << 20}, {"s", 1 << 20}}, out, &why));
  EXPECT_NE(why.find("overflow"), std::string::npos) << why;
  ASSERT_TRUE(Expr::parse("a*x", e, &why));
  EXPECT_FALSE(e.evaluate({{"a", 2}}, out, &why));
  EXPECT_NE(why.find("symbol x"), std::string::npos) << why;
}

TEST(CaptureDocument, LoadsEveryCommittedCapture) {
  int loaded = 0;
  // Our scripts' captures (workloads/captures/*.json) and the Hugging Face families' (hf/*.json.gz).
  for (const auto& entry : std::filesystem::recursive_directory_iterator(test::source_path("workloads/captures"))) {
    const std::string file = entry.path().filename().string();
    const bool capture = entry.path().parent_path().filename() == "hf" ? file.ends_with(".json.gz") : file.ends_with(".json");
    if (!entry.is_regular_file() || !capture) continue;
    const CaptureDocument doc = load_capture(entry.path().string());
    EXPECT_TRUE(doc.scalable) << entry.path();
    EXPECT_FALSE(doc.layers.empty()) << entry.path();
    // The document's totals are the sums of its ops (replay.totals).
    const CaptureTotals t = compute_totals(doc);
    EXPECT_EQ(t.step, doc.totals.step) << entry.path();
    EXPECT_EQ(t.optimizer, doc.totals.optimizer) << entry.path();
    ++loaded;
  }
  EXPECT_GE(loaded, 2 + 72);
}

TEST(CaptureDocument, ReadsTheGptCapture) {
  const CaptureDocument doc = load_capture(test::source_path(GPT));
  // model.py's GPT at --dims a=4,d=16,f=256,V=512,P=64 --layers 4 --micro-batch 2 --seq 32.
  EXPECT_EQ(doc.symbols.at("h"), 64);
  EXPECT_EQ(doc.symbols.at("a"), 4);
  EXPECT_EQ(doc.symbols.at("L"), 4);
  EXPECT_EQ(doc.model_layers, 4);
  EXPECT_EQ(doc.layer_counts.at("decoder"), 4);
  ASSERT_TRUE(doc.symbol_space.has_value());
  EXPECT_EQ(doc.symbol_space->ties.at("h").text(), "a*d");
  ASSERT_EQ(doc.layers.size(), 1u);
  EXPECT_TRUE(doc.layers[0].recompute.ops.empty());
  EXPECT_EQ(doc.run.precision, "fp32");
  EXPECT_FALSE(doc.params.empty());
  EXPECT_FALSE(doc.buffers.empty());
}

// A mutated copy of the GPT capture, written to a scratch file.
struct Broken {
  test::ScratchDir dir;
  std::string path;
  explicit Broken(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = test::read_source_json(GPT);
    edit(j);
    path = dir.write("broken.json", j.dump());
  }
};

// The index of the first GEMM of the GPT layer's forward (the qkv projection).
std::size_t first_gemm(const nlohmann::json& j) {
  const auto& ops = j["layers"][0]["phases"]["forward"]["ops"];
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i]["class"] == "gemm") return i;
  }
  return 0;
}

void expect_refused(const std::function<void(nlohmann::json&)>& edit, const std::string& key, const std::string& expected_words) {
  Broken b(edit);
  try {
    load_capture(b.path);
    ADD_FAILURE() << "accepted a capture with a bad " << key;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.source(), b.path);
    EXPECT_EQ(e.key_path(), key) << e.what();
    EXPECT_NE(std::string(e.what()).find(expected_words), std::string::npos) << e.what();
  }
}

TEST(CaptureDocument, RefusesUnknownKeysNamingFileAndKey) {
  expect_refused([](auto& j) { j["colour"] = 1; }, "colour", "colour");
  expect_refused([](auto& j) { j["run"]["seq_len"] = 1; }, "run.seq_len", "seq_len");
  expect_refused([](auto& j) { j["layers"][0]["phases"]["forward"]["ops"][0]["speed"] = 1; },
                 "layers[0].phases.forward.ops[0].speed", "speed");
  expect_refused([](auto& j) { j["layers"][0]["phases"]["forward"]["ops"][first_gemm(j)]["gemm"]["tp"]["degree"] = 2; },
                 "layers[0].phases.forward.ops[" + std::to_string(first_gemm(test::read_source_json(GPT))) + "].gemm.tp.degree",
                 "degree");
  expect_refused([](auto& j) { j["buffers"][3]["size"] = 1; }, "buffers[3].size", "size");
  expect_refused([](auto& j) { j["totals"]["step"]["seconds"] = 1; }, "totals.step.seconds", "seconds");
}

TEST(CaptureDocument, RefusesWrongTypesAndValues) {
  const std::string g = "layers[0].phases.forward.ops[" + std::to_string(first_gemm(test::read_source_json(GPT))) + "].gemm";
  expect_refused([](auto& j) { j["kind"] = "trainsim.result"; }, "kind", "trainsim.capture");
  expect_refused([](auto& j) { j["schema_version"] = 2; }, "schema_version", "integer in [1, 1]");
  expect_refused([](auto& j) { j["layers"][0]["phases"]["forward"]["ops"][first_gemm(j)]["gemm"]["m"] = "64"; }, g + ".m", "integer");
  expect_refused([](auto& j) { j["layers"][0]["phases"]["forward"]["ops"][0]["class"] = "matmul"; },
                 "layers[0].phases.forward.ops[0].class", "op classes");
  expect_refused([](auto& j) { j["symbols"]["h"] = 0; }, "symbols.h", ">= 1");
  expect_refused([](auto& j) { j["layers"] = 3; }, "layers", "an array");
  expect_refused([](auto& j) { j["run"]["precision"] = "fp8"; }, "run.precision", "one of");
}

TEST(CaptureDocument, RefusesBadExpressions) {
  const std::string g = "layers[0].phases.forward.ops[" + std::to_string(first_gemm(test::read_source_json(GPT))) + "].gemm";
  // Outside the grammar.
  expect_refused([](auto& j) { j["layers"][0]["phases"]["forward"]["ops"][first_gemm(j)]["gemm"]["m_expr"] = "b*s*"; },
                 g + ".m_expr", "a symbol");
  // Well formed, but not the recorded m = b*s = 64 at the document's symbols.
  expect_refused([](auto& j) { j["layers"][0]["phases"]["forward"]["ops"][first_gemm(j)]["gemm"]["m_expr"] = "b*s+1"; },
                 g + ".m_expr", "equal to the recorded 64");
  // A symbol the document has no value for.
  expect_refused([](auto& j) { j["layers"][0]["phases"]["forward"]["ops"][first_gemm(j)]["gemm"]["n_expr"] = "3*q"; },
                 g + ".n_expr", "symbol q");
  expect_refused([](auto& j) { j["symbol_space"]["ties"]["h"] = "a*d+1"; }, "symbol_space.ties.h", "recorded 64");
}

// Buffers keep their positions (SCHEMA.md, "Buffers and positions") for the memory replay.
TEST(CaptureDocument, KeepsBufferPositions) {
  const nlohmann::json j = test::read_source_json(GPT);
  const CaptureDocument doc = load_capture(test::source_path(GPT));
  // buffers[97]: a layer's input gradient, freed in the next layer's backward, and the first
  // layer's copy in embed.backward.
  const CapturedBuffer& b = doc.buffers.at(97);
  ASSERT_TRUE(b.alloc && b.free);
  EXPECT_EQ(b.alloc->phase, CapturePhase::LAYER_BACKWARD);
  EXPECT_EQ(b.alloc->op, j["buffers"][97]["alloc"]["op"].get<std::int64_t>());
  EXPECT_EQ(b.free->layer_offset, std::optional<std::int64_t>(-1));
  EXPECT_TRUE(b.free->after);
  ASSERT_TRUE(b.free_first.given && b.free_first.at);
  EXPECT_EQ(b.free_first.at->phase, CapturePhase::EMBED_BACKWARD);
  EXPECT_FALSE(b.free_last.given);
  // The token ids exist before the step and stay; the embedding saves them.
  EXPECT_FALSE(doc.buffers.at(16).alloc.has_value());
  EXPECT_FALSE(doc.buffers.at(16).free.has_value());
  ASSERT_EQ(doc.buffers.at(16).saved.size(), 1u);
  int per_layer = 0;
  for (const auto& x : doc.buffers) per_layer += x.per_layer.empty() ? 0 : 1;
  EXPECT_EQ(per_layer, 24);
  ASSERT_TRUE(doc.memory.peak_at.has_value());
  EXPECT_EQ(doc.memory.peak_at->phase, CapturePhase::OPTIMIZER);
  EXPECT_EQ(doc.memory.peak_at->segment, std::optional<std::int64_t>(6));
  EXPECT_FALSE(doc.memory.peak_at->layer.has_value());
}

TEST(CaptureDocument, RefusesPositionsTheReplayCannotPlace) {
  expect_refused([](auto& j) { j["buffers"][97]["free"]["op"] = 100000; }, "buffers[97].free.op", "an op of layer.backward");
  expect_refused([](auto& j) { j["buffers"][97]["alloc"]["op"] = -1; }, "buffers[97].alloc.op", "an integer >= 0");
  expect_refused([](auto& j) { j["buffers"][97]["free"]["phase"] = "layer.sideways"; }, "buffers[97].free.phase", "one of");
  expect_refused([](auto& j) { j["buffers"][97]["free"]["layer_index"] = 0; }, "buffers[97].free.layer_index", "not both");
  expect_refused([](auto& j) { j["buffers"][97]["free_first"] = {{"phase", "optimizer"}, {"op", 0}}; }, "buffers[97].free_first.segment",
                 "a segment of phases.optimizer");
  expect_refused([](auto& j) { j["buffers"][97]["free_first"] = {{"phase", "optimizer"}, {"op", 0}, {"segment", 7}}; },
                 "buffers[97].free_first.segment", "it has 7");
  // An end's buffer has no owning layer for a layer_offset to count from.
  expect_refused([](auto& j) { j["buffers"][16]["free"] = {{"phase", "layer.forward"}, {"op", 0}, {"layer_offset", 1}, {"after", true}}; },
                 "buffers[16].free.layer_offset", "layer_index");
  expect_refused([](auto& j) { j["buffers"][16]["alloc_bytes"] = 513; }, "buffers[16].alloc_bytes", "rounded up to the allocator's block of 512");
  expect_refused([](auto& j) { j["model"]["layer_sequence"] = nlohmann::json::array({nlohmann::json::array({"encoder", 4})}); }, "model.layer_sequence[0]", "a kind of layers[]");
  expect_refused([](auto& j) { j["memory"]["peak_at"]["layer_offset"] = 0; }, "memory.peak_at.layer_offset", "layer_offset");
}

// The scaled documents must agree op by op with trainsim_capture's --scale of the same capture.
void expect_same_ops(const CapturedPhase& got, const CapturedPhase& want, const std::string& where) {
  ASSERT_EQ(got.ops.size(), want.ops.size()) << where;
  for (std::size_t i = 0; i < got.ops.size(); ++i) {
    const auto& g = got.ops[i];
    const auto& w = want.ops[i];
    const std::string at = where + " op " + std::to_string(i) + " " + w.op;
    EXPECT_EQ(g.op, w.op) << at;
    EXPECT_EQ(g.bytes_read.value, w.bytes_read.value) << at;
    EXPECT_EQ(g.bytes_written.value, w.bytes_written.value) << at;
    EXPECT_EQ(g.flops.value, w.flops.value) << at;
    EXPECT_EQ(g.kernels, w.kernels) << at;
    ASSERT_EQ(g.gemm.has_value(), w.gemm.has_value()) << at;
    if (g.gemm) {
      EXPECT_EQ(g.gemm->m.value, w.gemm->m.value) << at;
      EXPECT_EQ(g.gemm->n.value, w.gemm->n.value) << at;
      EXPECT_EQ(g.gemm->k.value, w.gemm->k.value) << at;
      EXPECT_EQ(g.gemm->batch.value, w.gemm->batch.value) << at;
    }
  }
}

void expect_scaling_matches(const std::string& capture, const SymbolValues& changes, const std::string& expected) {
  const CaptureDocument scaled = scale_capture(load_capture(test::source_path(capture)), changes);
  const CaptureDocument want = load_capture(test::source_path(expected));
  EXPECT_EQ(scaled.symbols, want.symbols);
  EXPECT_EQ(scaled.run.micro_batch, want.run.micro_batch);
  EXPECT_EQ(scaled.run.seq, want.run.seq);
  EXPECT_EQ(scaled.model_layers, want.model_layers);
  EXPECT_EQ(scaled.layer_counts, want.layer_counts);
  for (auto ph : CAPTURE_END_PHASES) {
    expect_same_ops(scaled.ends.at(std::string(ph)), want.ends.at(std::string(ph)), std::string(ph));
  }
  ASSERT_EQ(scaled.layers.size(), want.layers.size());
  for (std::size_t l = 0; l < scaled.layers.size(); ++l) {
    EXPECT_EQ(scaled.layers[l].count, want.layers[l].count);
    expect_same_ops(scaled.layers[l].forward, want.layers[l].forward, "forward");
    expect_same_ops(scaled.layers[l].recompute, want.layers[l].recompute, "recompute");
    expect_same_ops(scaled.layers[l].backward, want.layers[l].backward, "backward");
  }
  ASSERT_EQ(scaled.optimizer.size(), want.optimizer.size());
  for (std::size_t s = 0; s < scaled.optimizer.size(); ++s) {
    expect_same_ops(scaled.optimizer[s].ops, want.optimizer[s].ops, "optimizer");
  }
  ASSERT_EQ(scaled.buffers.size(), want.buffers.size());
  for (std::size_t i = 0; i < scaled.buffers.size(); ++i) {
    EXPECT_EQ(scaled.buffers[i].bytes, want.buffers[i].bytes) << "buffer " << i;
    EXPECT_EQ(scaled.buffers[i].alloc_bytes, want.buffers[i].alloc_bytes) << "buffer " << i;
  }
  for (std::size_t i = 0; i < scaled.params.size(); ++i) {
    for (std::size_t d = 0; d < scaled.params[i].shape.size(); ++d) {
      EXPECT_EQ(scaled.params[i].shape[d].value, want.params[i].shape[d].value) << scaled.params[i].name;
    }
  }
  EXPECT_EQ(scaled.totals.step, want.totals.step);
  EXPECT_EQ(scaled.totals.optimizer, want.totals.optimizer);
  EXPECT_EQ(scaled.totals.layers, want.totals.layers);
  // scale.py replays the scaled document (replay.py); the C++ scaling does the same.
  EXPECT_TRUE(scaled.memory.current);
  EXPECT_EQ(scaled.memory.peak_bytes, want.memory.peak_bytes);
  EXPECT_EQ(scaled.memory, want.memory);
}

TEST(CaptureScale, GptEqualsThePythonScaling) {
  expect_scaling_matches(GPT, {{"a", 8}, {"d", 32}, {"f", 1024}, {"V", 1000}, {"P", 128}, {"s", 64}, {"b", 3}, {"L", 6}},
                         "tests/data/captures/gpt_model_py.scaled_a8_d32.json");
}

TEST(CaptureScale, LlamaWithRecomputeEqualsThePythonScaling) {
  expect_scaling_matches(LLAMA, {{"kv", 4}, {"g", 2}, {"d", 32}, {"f", 352}, {"s", 64}, {"V", 1000}, {"L", 7}},
                         "tests/data/captures/llama_model_llama_py.recompute.scaled_kv4_d32.json");
}

// For-loop AdamW on the CPU with recompute (per-repetition buffers, host copies), scaled to a size
// whose peak is inside a layer's recompute.
TEST(CaptureScale, TinyMlpEqualsThePythonScaling) {
  expect_scaling_matches("tests/data/captures/tiny_mlp.autocast_forloop_cpu_recompute.json",
                         {{"h", 512}, {"f", 512}, {"V", 64}, {"s", 512}, {"b", 2}, {"L", 4}},
                         "tests/data/captures/tiny_mlp.autocast_forloop_cpu_recompute.scaled_h512_s512.json");
}

TEST(CaptureScale, RefusesTiedUnknownAndBadSymbols) {
  const CaptureDocument doc = load_capture(test::source_path(GPT));
  for (const auto& [sym, value] : std::vector<std::pair<std::string, std::int64_t>>{{"h", 128}, {"kv", 8}, {"zz", 3}, {"a", 0}}) {
    try {
      scale_capture(doc, {{sym, value}});
      ADD_FAILURE() << "scaled " << sym << " = " << value;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key_path(), "symbols." + sym);
    }
  }
  // A rotary half d/2 at odd d, or any expression that is not an integer there, is refused, not rounded.
  EXPECT_NO_THROW(scale_capture(doc, {{"a", 6}}));
}

TEST(CaptureScale, MultiTensorApplyLaunchesByHand) {
  // SCHEMA.md, "Kernels": chunks of 65536 elements, at most 320 chunks and 110 tensors (depth 1).
  EXPECT_EQ(multi_tensor_apply_launches({}, 1), 0);
  EXPECT_EQ(multi_tensor_apply_launches({1}, 1), 1);
  EXPECT_EQ(multi_tensor_apply_launches(std::vector<std::int64_t>(110, 10), 1), 1);
  EXPECT_EQ(multi_tensor_apply_launches(std::vector<std::int64_t>(111, 10), 1), 2);
  EXPECT_EQ(multi_tensor_apply_launches(std::vector<std::int64_t>(65, 10), 2), 2);  // 64 tensors at depth 2
  EXPECT_EQ(multi_tensor_apply_launches({320 * 65536}, 1), 1);
  EXPECT_EQ(multi_tensor_apply_launches({320 * 65536 + 1}, 1), 2);
  EXPECT_EQ(multi_tensor_apply_launches({1000LL * 320 * 65536}, 1), 1000);
  EXPECT_EQ(multi_tensor_apply_launches({1000LL * 320 * 65536 + 5, 7}, 1), 1001);
}

TEST(CaptureScale, ChangesFromAModelFollowTheTies) {
  const CaptureDocument doc = load_capture(test::source_path(GPT));
  ModelSpec m;
  m.layers = 12;
  m.hidden = 256;
  m.heads = 8;
  m.kv_heads = 8;
  m.ffn_hidden = 1024;
  m.vocab = 1000;
  m.seq_len = 128;
  const SymbolValues changes = capture_changes_for(doc, symbols_of_model(m, 2, 64));
  EXPECT_EQ(changes.at("a"), 8);
  EXPECT_EQ(changes.at("d"), 32);
  EXPECT_EQ(changes.at("L"), 12);
  EXPECT_EQ(scale_capture(doc, changes).symbols.at("h"), 256);
  m.kv_heads = 2;  // grouped-query attention: not model.py's architecture (kv = a)
  EXPECT_THROW(capture_changes_for(doc, symbols_of_model(m, 2, 64)), ConfigError);
}

// Several layer kinds (the committed, gzipped Gemma 3 capture: five sliding-window layers to one full)
// scaled to 26 layers repeat the pattern: four periods and two more sliding layers, worked by hand;
// tests/capture/test_scaling.py checks trainsim_capture.scale against the same counts.
TEST(CaptureScale, SeveralLayerKindsRepeatTheirPattern) {
  const CaptureDocument doc = load_capture(test::source_path("workloads/captures/hf/gemma3_text.autocast-bf16.json.gz"));
  const CaptureDocument g = scale_capture(doc, {{"L", 26}});
  EXPECT_EQ(g.model_layers, 26);
  EXPECT_EQ(g.layer_counts, (std::map<std::string, std::int64_t>{{"full_attention", 4}, {"sliding_attention", 22}}));
  std::vector<std::pair<std::string, std::int64_t>> want;
  for (int p = 0; p < 4; ++p) {
    want.emplace_back("sliding_attention", 5);
    want.emplace_back("full_attention", 1);
  }
  want.emplace_back("sliding_attention", 2);
  EXPECT_EQ(g.layer_sequence, want);
  EXPECT_EQ(g.symbols.at("L_full_attention"), 4);
  EXPECT_EQ(g.symbols.at("L_sliding_attention"), 22);
}

}  // namespace
}  // namespace trainsim::wl
