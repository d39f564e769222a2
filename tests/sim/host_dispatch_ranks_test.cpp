// A stack's host dispatch calibrated at several rank counts (calibration.host_dispatch.stacks[]
// with "ranks"): the loader keeps each entry and refuses ambiguous ones, the writer keeps "ranks",
// and the replay takes the entry at the run's ranks, else the nearest (fewer on a tie). Measured
// reason (workloads/stacks/training_stacks.md): FSDP2's host time per layer at 4 ranks is not its time
// at 2 (5.55 ms against 4.35 on one host), a collective's host side waiting for the slowest rank.
#include <gtest/gtest.h>

#include <string>

#include "bad_section_case.hpp"
#include "config_error.hpp"
#include "host_dispatch.hpp"
#include "profile_loader.hpp"
#include "test_support.hpp"

namespace trainsim::sim {
namespace {

nlohmann::json entry(const char* stack, int ranks, double layer_forward_us) {
  nlohmann::json e = {{"stack", stack},
                      {"layer_forward_us", layer_forward_us},
                      {"layer_backward_us", 2 * layer_forward_us},
                      {"micro_batch_forward_us", 100},
                      {"micro_batch_backward_us", 100},
                      {"sync_layer_us", 0},
                      {"optimizer_step_us", 500},
                      {"optimizer_layer_us", 10}};
  if (ranks > 0) e["ranks"] = ranks;
  return e;
}

// zero3 at 2 and 4 ranks, DDP once without a rank count.
nlohmann::json section() {
  return {{"stacks",
           {entry("pytorch-fsdp:zero3", 2, 2000), entry("pytorch-fsdp:zero3", 4, 3000), entry("pytorch-ddp", 0, 700)}},
          {"source", "test"}};
}

hw::ClusterProfile load(const nlohmann::json& s) {
  nlohmann::json j = test::read_source_json("hwprofiles/dgx2.json");
  j["calibration"]["host_dispatch"] = s;
  test::ScratchDir dir;
  return hw::load_profile_file(dir.write("profile.json", j.dump()));
}

wl::Strategy fsdp_zero3(int gpus) {
  wl::Strategy s;
  s.gpus = s.dp = gpus;
  s.zero_stage = 3;
  s.stack.kind = wl::StackKind::PYTORCH_FSDP;
  return s;
}

TEST(HostDispatchRanks, TheRunsRankCountElseTheNearestFewerOnATie) {
  const hw::ClusterProfile p = load(section());
  const auto forward_us = [&](int gpus) { return stack_dispatch(fsdp_zero3(gpus), p)->layer_forward_us; };
  EXPECT_EQ(forward_us(2), 2000);
  EXPECT_EQ(forward_us(4), 3000);
  EXPECT_EQ(forward_us(1), 2000);
  EXPECT_EQ(forward_us(3), 2000);  // a tie goes to fewer
  EXPECT_EQ(forward_us(8), 3000);
  wl::Strategy ddp = fsdp_zero3(4);
  ddp.stack.kind = wl::StackKind::PYTORCH_DDP;
  ddp.zero_stage = 0;
  EXPECT_EQ(stack_dispatch(ddp, p)->layer_forward_us, 700);  // no rank count: every size
}

TEST(HostDispatchRanks, TheWriterKeepsTheRankCounts) {
  const hw::ClusterProfile p = load(section());
  const nlohmann::json j = nlohmann::json::parse(hw::profile_to_json(p).dump());
  const auto& stacks = j["calibration"]["host_dispatch"]["stacks"];
  ASSERT_EQ(stacks.size(), 3u);
  EXPECT_EQ(stacks[1]["ranks"], 4);
  EXPECT_FALSE(stacks[2].contains("ranks"));
  const hw::ClusterProfile q = load(j["calibration"]["host_dispatch"]);
  EXPECT_EQ(stack_dispatch(fsdp_zero3(4), q)->layer_forward_us, 3000);
}

using BadCase = test::BadSectionCase;

class BadHostDispatchRanks : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadHostDispatchRanks, IsAConfigErrorNamingFileAndKey) {
  test::expect_bad_section(section(), GetParam(), [](const nlohmann::json& broken) { load(broken); });
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadHostDispatchRanks,
    ::testing::Values(
        BadCase{"a repeated rank count", [](nlohmann::json& s) { s["stacks"][1]["ranks"] = 2; },
                "calibration.host_dispatch.stacks[1].ranks", "one entry per (stack, ranks)"},
        BadCase{"a second entry without a rank count", [](nlohmann::json& s) { s["stacks"][1].erase("ranks"); },
                "calibration.host_dispatch.stacks[1].ranks", "on every entry of a stack calibrated at several"},
        BadCase{"no ranks", [](nlohmann::json& s) { s["stacks"][0]["ranks"] = 0; },
                "calibration.host_dispatch.stacks[0].ranks", "got 0"},
        BadCase{"a fractional rank count", [](nlohmann::json& s) { s["stacks"][0]["ranks"] = 2.5; },
                "calibration.host_dispatch.stacks[0].ranks", "integer"}));

}  // namespace
}  // namespace trainsim::sim
