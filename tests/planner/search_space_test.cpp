// The search space (planner/search_space.hpp): axes as data, every strategy well shaped, none
// twice, the same order every time, and the configurations people actually run are in it.
#include <gtest/gtest.h>

#include <set>

#include "config_error.hpp"
#include "families.hpp"
#include "model_loader.hpp"
#include "search_space.hpp"
#include "strategy_identity.hpp"

namespace trainsim::planner {
namespace {

std::vector<wl::Strategy> space(const wl::ModelSpec& m, int gpn, int nodes, std::int64_t batch) {
  SpaceShape shape{&m, gpn, nodes, 0, batch, m.seq_len};
  std::vector<wl::Strategy> out;
  enumerate_space(shape, [&](const wl::Strategy& s) { out.push_back(s); });
  return out;
}

TEST(SearchSpace, AxesAreDataWithADescriptionEach) {
  const auto& axes = search_axes();
  ASSERT_GE(axes.size(), 12u);
  std::set<std::string_view> names;
  for (const Axis& a : axes) {
    EXPECT_FALSE(a.description.empty()) << a.name;
    names.insert(a.name);
  }
  EXPECT_EQ(names.size(), axes.size());
  for (const char* n : {"tp", "pp", "vpp", "schedule", "sp", "zero", "offload_params", "offload_optimizer", "recompute", "micro_batch"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
}

TEST(SearchSpace, EveryStrategyIsShapedOnceAndTheOrderIsFixed) {
  const wl::ModelSpec m = wl::builtin_model("gpt3-175b");
  const auto a = space(m, 8, 2, 64), b = space(m, 8, 2, 64);
  ASSERT_EQ(a.size(), b.size());
  std::set<std::string> seen;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const wl::Strategy& s = a[i];
    EXPECT_EQ(s, b[i]);
    EXPECT_EQ(s.dp * s.tp * s.pp, 16);
    EXPECT_EQ(s.gpus, 16);
    EXPECT_EQ(s.nodes, 2);
    EXPECT_LE(s.tp, 8);  // inside a node
    EXPECT_EQ(64 % (s.micro_batch * s.dp), 0);
    if (s.pp == 1) {
      EXPECT_EQ(s.vpp, 1);
    }
    if (s.vpp > 1) {
      EXPECT_EQ(s.schedule, wl::Schedule::INTERLEAVED);
    }
    EXPECT_TRUE(seen.insert(wl::canonical_text(s)).second) << "twice: " << wl::canonical_text(s);
  }
}

TEST(SearchSpace, HoldsThePublishedConfigurations) {
  const wl::ModelSpec m = wl::builtin_model("gpt3-175b");
  const auto all = space(m, 8, 2, 64);
  auto has = [&](auto pred) { return std::any_of(all.begin(), all.end(), pred); };
  // Megatron-LM: tp 8 x pp 2, interleaved with 2 chunks, sequence parallel, selective recompute.
  EXPECT_TRUE(has([](const wl::Strategy& s) {
    return s.tp == 8 && s.pp == 2 && s.vpp == 2 && s.sp && s.recompute == wl::Recompute::SELECTIVE && s.zero_stage == 1;
  }));
  // ZeRO-Infinity: parameters and optimizer on NVMe, checkpoints on the CPU.
  EXPECT_TRUE(has([](const wl::Strategy& s) {
    return s.zero_stage == 3 && s.offload_params == wl::OffloadTarget::NVME && s.offload_optimizer == wl::OffloadTarget::NVME &&
           s.offload_activations == wl::ActivationOffload::CPU;
  }));
  // ZeRO-Offload with the delayed update, GPipe, PipeDream, 2BW, L2L.
  EXPECT_TRUE(has([](const wl::Strategy& s) { return s.delayed_update && s.offload_optimizer == wl::OffloadTarget::CPU; }));
  for (auto k : {wl::Schedule::GPIPE, wl::Schedule::PIPEDREAM, wl::Schedule::TWO_BW}) {
    EXPECT_TRUE(has([k](const wl::Strategy& s) { return s.pp > 1 && s.schedule == k; }));
  }
  EXPECT_TRUE(has([](const wl::Strategy& s) { return s.l2l; }));
  // Hydra, one shard per layer, alone on each GPU.
  EXPECT_TRUE(has([&m](const wl::Strategy& s) {
    return s.schedule == wl::Schedule::HYDRA && s.shards == m.layers && s.tp == 1 && s.pp == 1 && s.zero_stage == 0;
  }));
  // Every family has members.
  for (const Family& f : families()) EXPECT_TRUE(has([&f](const wl::Strategy& s) { return f.contains(s); })) << f.name;
}

TEST(SearchSpace, FamiliesParseStrictly) {
  EXPECT_EQ(parse_families("zero3,gpipe", "--families").size(), 2u);
  try {
    parse_families("zero3,zero-4", "--families");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--families: expected a comma-separated list of families from: dp, zero1"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("got \"zero-4\""), std::string::npos);
  }
  EXPECT_THROW(parse_families("zero3,zero3", "--families"), ConfigError);
}

TEST(SearchSpace, Divisors) { EXPECT_EQ(divisors(12), (std::vector<int>{1, 2, 3, 4, 6, 12})); }

}  // namespace
}  // namespace trainsim::planner
