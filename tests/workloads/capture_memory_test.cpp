// The C++ memory replay of a capture (workloads/capture_memory.hpp) against trainsim_capture's
// replay.py: every committed capture's own memory summary (written by the Python recorder or
// scale.py), and replays at other layer counts, sizes and layer sequences, and of probe buffers,
// whose expected values tests/data/captures/make_memory_expected.py wrote with replay.py into
// memory_replay_expected.json.
#include "capture_memory.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "capture_scale.hpp"
#include "config_error.hpp"
#include "test_support.hpp"

namespace trainsim::wl {
namespace {

const std::string GPT = "workloads/captures/gpt_model_py.json";
const std::string MLP = "tests/data/captures/tiny_mlp.autocast_forloop_cpu_recompute.json";
const std::string EXPECTED = "tests/data/captures/memory_replay_expected.json";

// replay.replay's dict, so that a mismatch prints both sides.
nlohmann::json as_json(const CaptureMemory& m) {
  nlohmann::json j = {{"layers", m.layers},       {"base_bytes", m.base_bytes}, {"peak_bytes", m.peak_bytes},
                      {"end_bytes", m.end_bytes}, {"unplaced_buffers", m.unplaced_buffers}, {"peak_at", nullptr}};
  if (m.peak_at) {
    j["peak_at"] = {{"phase", capture_phase_name(m.peak_at->phase)}, {"op", m.peak_at->op}};
    if (m.peak_at->segment) j["peak_at"]["segment"] = *m.peak_at->segment;
    if (m.peak_at->layer) j["peak_at"]["layer"] = *m.peak_at->layer;
  }
  return j;
}

SymbolValues symbols_of(const nlohmann::json& j) {
  SymbolValues v;
  for (const auto& [k, x] : j.items()) v[k] = x.get<std::int64_t>();
  return v;
}

CaptureLayerSequence sequence_of(const nlohmann::json& j) {
  CaptureLayerSequence seq;
  for (const auto& e : j) seq.emplace_back(e[0].get<std::string>(), e[1].get<std::int64_t>());
  return seq;
}

// The bytes at the peak by buffer kind add up to the peak.
void expect_breakdown_adds_up(const CaptureMemoryReplay& r, const std::string& what) {
  EXPECT_EQ(r.at_peak.total_bytes(), r.memory.peak_bytes) << what;
  EXPECT_EQ(r.peak_op.empty(), !r.memory.peak_at.has_value()) << what;
}

std::vector<std::string> committed_captures() {
  std::vector<std::string> out;
  for (const char* dir : {"workloads/captures", "tests/data/captures"}) {
    for (const auto& e : std::filesystem::directory_iterator(test::source_path(dir))) {
      if (e.path().extension() == ".json" && e.path().filename() != "memory_replay_expected.json") out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CaptureMemory, EveryCommittedCaptureReplaysToItsOwnSummary) {
  const auto files = committed_captures();
  ASSERT_GE(files.size(), 6u);
  for (const auto& path : files) {
    const CaptureDocument doc = load_capture(path);
    const CaptureMemoryReplay r = replay_capture_memory(doc);
    EXPECT_EQ(as_json(r.memory), as_json(doc.memory)) << path;
    EXPECT_EQ(r.memory, doc.memory) << path;
    EXPECT_EQ(r.memory.unplaced_buffers, 0) << path;
    expect_breakdown_adds_up(r, path);
    // The layers= form at the model's own layer count is the same replay.
    EXPECT_EQ(as_json(replay_capture_memory(doc, doc.model_layers).memory), as_json(doc.memory)) << path;
  }
}

TEST(CaptureMemory, OtherLayerCountsAndSizesMatchReplayPy) {
  const nlohmann::json expected = test::read_source_json(EXPECTED);
  ASSERT_GE(expected.at("cases").size(), 20u);
  for (const auto& c : expected.at("cases")) {
    CaptureDocument doc = load_capture(test::source_path(c.at("capture").get<std::string>()));
    if (!c.at("scale").empty()) doc = scale_capture(doc, symbols_of(c.at("scale")));
    const std::int64_t layers = c.at("layers").get<std::int64_t>();
    const CaptureMemoryReplay r = replay_capture_memory(doc, layers);
    const std::string what = c.at("capture").get<std::string>() + " " + c.at("scale").dump() + " at " + std::to_string(layers) + " layers";
    EXPECT_EQ(as_json(r.memory), c.at("memory")) << what;
    expect_breakdown_adds_up(r, what);
  }
}

// make_memory_expected.py's twin(): a second layer kind copying the first one's phases (its
// recompute never runs: recompute_at null), buffers and optimizer bodies.
nlohmann::json twin(nlohmann::json doc) {
  const std::string kind = doc["layers"][0]["kind"].get<std::string>();
  nlohmann::json t = doc["layers"][0];
  t["kind"] = "twin";
  t["recompute_at"] = nullptr;
  doc["layers"].push_back(t);
  const std::size_t n = doc["buffers"].size();
  for (std::size_t i = 0; i < n; ++i) {
    if (doc["buffers"][i].value("layer_kind", "") != kind) continue;
    nlohmann::json c = doc["buffers"][i];
    c["id"] = doc["buffers"].size();
    c["layer_kind"] = "twin";
    doc["buffers"].push_back(c);
  }
  for (auto& seg : doc["phases"]["optimizer"]["segments"]) {
    if (seg["group"] == "layers" && seg["bodies"].contains(kind)) seg["bodies"]["twin"] = seg["bodies"][kind];
  }
  return doc;
}

TEST(CaptureMemory, LayerSequencesOfTwoKindsMatchReplayPy) {
  const nlohmann::json expected = test::read_source_json(EXPECTED);
  ASSERT_GE(expected.at("sequences").size(), 6u);
  for (const auto& c : expected.at("sequences")) {
    const std::string path = c.at("capture").get<std::string>();
    const CaptureDocument doc = load_capture_json(parse_json_text(twin(test::read_source_json(path)).dump(), path + " (twin)"));
    const CaptureMemoryReplay r = replay_capture_memory(doc, sequence_of(c.at("sequence")));
    EXPECT_EQ(as_json(r.memory), c.at("memory")) << path << " " << c.at("sequence").dump();
    expect_breakdown_adds_up(r, path);
  }
}

// The MLP capture with buffers added whose summary turns on one detail of replay.py each (the
// recompute's place in the backward, "op": -1 in each kind of phase, a free before its allocation,
// free_first given as null, free_first over free_last, per-repetition buffers).
TEST(CaptureMemory, ProbeBuffersMatchReplayPy) {
  const nlohmann::json expected = test::read_source_json(EXPECTED);
  ASSERT_GE(expected.at("probes").size(), 9u);
  for (const auto& c : expected.at("probes")) {
    nlohmann::json j = test::read_source_json(c.at("capture").get<std::string>());
    if (c.at("twin").get<bool>()) j = twin(j);
    for (nlohmann::json b : c.at("add_buffers")) {
      b["id"] = j["buffers"].size();
      j["buffers"].push_back(b);
    }
    const std::string what = c.at("probe").get<std::string>();
    const CaptureDocument doc = load_capture_json(parse_json_text(j.dump(), what));
    const CaptureMemoryReplay r = replay_capture_memory(doc, sequence_of(c.at("sequence")));
    EXPECT_EQ(as_json(r.memory), c.at("memory")) << what;
    expect_breakdown_adds_up(r, what);
  }
}

// Parameters and optimizer states exist before the step and are never freed: at any peak they
// are every such buffer's bytes, once per layer of their kind. By hand for model.py's GPT (h = 64,
// f = 256, V = 512, 64 positions, fp32, tied head), each tensor rounded up to the caching
// allocator's 512 bytes:
// - a layer's parameters: two norms' weight and bias (4 x 512), QKV 49,152 + 1,024, the projection
//   16,384 + 512, fc1 65,536 + 1,024, fc2 65,536 + 512: 201,728 bytes;
// - the ends: token embedding 131,072, positions 16,384, the final norm 2 x 512: 148,480 bytes;
// - AdamW's two moments of each, and a 4-byte step (512) per parameter tensor (12 a layer, 4 at
//   the ends): 409,600 bytes a layer, 299,008 at the ends.
TEST(CaptureMemory, BreakdownHoldsEveryParameterAndState) {
  const CaptureDocument doc = load_capture(test::source_path(GPT));
  for (std::int64_t layers : {1, 4, 9}) {
    const std::int64_t params = 148480 + 201728 * layers, states = 299008 + 409600 * layers;
    const CaptureMemoryReplay r = replay_capture_memory(doc, layers);
    EXPECT_EQ(r.at_peak.param_bytes, params) << layers;
    EXPECT_EQ(r.at_peak.optimizer_state_bytes, states) << layers;
    // model.py's foreach AdamW peaks in its last pass, with every gradient still alive.
    EXPECT_GT(r.at_peak.grad_bytes, 0) << layers;
    EXPECT_EQ(r.peak_op, "aten::_foreach_add.Scalar") << layers;
    EXPECT_TRUE(r.peak_layer_kind.empty());
  }
  // The tiny MLP scaled to long sequences peaks inside a layer's recompute (see the expected file).
  const CaptureMemoryReplay m = replay_capture_memory(scale_capture(load_capture(test::source_path(MLP)),
                                                                    {{"h", 512}, {"f", 512}, {"V", 64}, {"s", 512}, {"b", 2}, {"L", 4}}));
  ASSERT_TRUE(m.memory.peak_at.has_value());
  EXPECT_EQ(m.memory.peak_at->phase, CapturePhase::LAYER_RECOMPUTE);
  EXPECT_EQ(m.peak_layer_kind, "decoder");
  EXPECT_GT(m.at_peak.activation_bytes, m.at_peak.param_bytes);
  EXPECT_GT(m.at_peak.host_copy_bytes, 0);  // the offloaded optimizer's fp32 copies
}

TEST(CaptureMemory, RefusesWhatItCannotReplay) {
  const CaptureDocument doc = load_capture(test::source_path(GPT));
  auto refused = [&](const std::function<void()>& f, const std::string& key) {
    try {
      f();
      ADD_FAILURE() << "replayed; expected a refusal at " << key;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key_path(), key) << e.what();
      EXPECT_EQ(e.source(), doc.source);
    }
  };
  refused([&] { replay_capture_memory(doc, -1); }, "symbols.L");
  refused([&] { replay_capture_memory(doc, CaptureLayerSequence{{"decoder", 2}, {"encoder", 1}}); }, "model.layer_sequence[1]");
  refused([&] { replay_capture_memory(doc, CaptureLayerSequence{{"decoder", -2}}); }, "model.layer_sequence[0]");
  refused([&] { replay_capture_memory(doc, std::int64_t{1} << 40); }, "model.layer_sequence");
  CaptureDocument two = doc;
  two.layer_sequence = {{"decoder", 1}, {"other", 1}};
  refused([&] { replay_capture_memory(two, 3); }, "model.layer_sequence");
}

}  // namespace
}  // namespace trainsim::wl
