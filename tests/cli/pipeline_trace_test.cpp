// A Perfetto (Chrome trace) view of a 4-stage 1F1B step: each stage runs p - s - 1 warm-up
// forwards, then alternates forward and backward (steady state), then drains its backwards
// (cool-down); every activation and gradient crossing a stage boundary is a send on one stage
// linked by a flow arrow to the receive on the next (Narayanan et al. SC'21 Fig. 4).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "test_support.hpp"

namespace trainsim {
namespace {

TEST(PipelineTrace, OneFOneBShowsWarmUpSteadyStateCoolDownAndTheSends) {
  test::ScratchDir dir;
  const std::string trace = (dir.path() / "pipe.json").string();
  const auto r = test::run_trainsim("simulate --model gpt2-1.5b --hw dgx-a100 --gpus 4 --pp 4 --global-batch 8 --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(test::read_file(trace));
  std::map<int, std::string> stage_of_pid;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") stage_of_pid[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
  }
  // The compute track of each stage, in time order: F or B per micro-batch pass (a pass spans
  // several ops; consecutive ops of one pass count once).
  std::map<int, std::vector<std::pair<double, std::string>>> passes;
  int sends = 0, starts = 0, finishes = 0;
  std::set<std::pair<int, int>> linked;  // (sending pid, receiving pid)
  std::map<int, int> flow_from;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "X" && e["tid"] == 0) {
      const std::string name = e["name"];
      const auto mb = name.find(" mb");
      if (mb == std::string::npos) continue;
      const char kind = name.rfind("forward", 0) == 0 ? 'F' : name.rfind("backward", 0) == 0 ? 'B' : 0;
      if (kind == 0) continue;
      passes[e["pid"].get<int>()].push_back({e["ts"].get<double>(), std::string(1, kind) + name.substr(mb + 3)});
    }
    if (ph == "X" && e["tid"] == 5) ++sends;
    if (ph == "s") {
      ++starts;
      flow_from[e["id"].get<int>()] = e["pid"].get<int>();
    }
    if (ph == "f") {
      ++finishes;
      linked.insert({flow_from.at(e["id"].get<int>()), e["pid"].get<int>()});
    }
  }
  ASSERT_EQ(passes.size(), 4u);
  for (const auto& [pid, list] : passes) {
    auto sorted = list;
    std::stable_sort(sorted.begin(), sorted.end());
    std::vector<std::string> order;
    for (const auto& [t, p] : sorted) {
      if (order.empty() || order.back() != p) order.push_back(p);
    }
    const int stage = pid;  // simulated GPU s runs stage s (one per stage)
    EXPECT_NE(stage_of_pid[pid].find("stage " + std::to_string(stage)), std::string::npos) << stage_of_pid[pid];
    std::vector<std::string> expected;
    const int p = 4, m = 8, warm = p - stage - 1;
    for (int i = 0; i < warm; ++i) expected.push_back("F" + std::to_string(i));
    for (int i = 0; i < m - warm; ++i) {
      expected.push_back("F" + std::to_string(i + warm));
      expected.push_back("B" + std::to_string(i));
    }
    for (int i = m - warm; i < m; ++i) expected.push_back("B" + std::to_string(i));
    EXPECT_EQ(order, expected) << "stage " << stage;
  }
  // 8 micro-batches x 3 boundaries x (activation forward + gradient back).
  EXPECT_EQ(sends, 8 * 3 * 2);
  EXPECT_EQ(starts, sends);
  EXPECT_EQ(finishes, sends);
  for (int s = 0; s < 3; ++s) {
    EXPECT_TRUE(linked.count({s, s + 1})) << "activations from stage " << s;
    EXPECT_TRUE(linked.count({s + 1, s})) << "gradients into stage " << s;
  }
}

}  // namespace
}  // namespace trainsim
