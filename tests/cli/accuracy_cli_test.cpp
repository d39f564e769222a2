// The measured accuracy that `simulate`, `plan` and `compare` answers carry (planner/accuracy.hpp),
// end to end through the built binary: in the text and the JSON, for the configuration answered.
#include <gtest/gtest.h>

#include <string>

#include "test_support.hpp"

namespace trainsim {
namespace {

bool contains(const nlohmann::json& list, const std::string& item) {
  for (const auto& x : list) {
    if (x == item) return true;
  }
  return false;
}

// The JSON names the configuration's features; each is either a line of some set or unmeasured.
TEST(AccuracyCli, SimulateJsonCarriesTheCardOfItsConfiguration) {
  const auto r = test::run_trainsim("simulate --model gpt2-1.5b --hw dgx2 --nodes 2 --zero 3 --recompute full --micro-batch 4 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto a = nlohmann::json::parse(r.out).at("accuracy");
  EXPECT_TRUE(contains(a.at("features"), "several nodes"));
  EXPECT_TRUE(contains(a.at("features"), "ZeRO-3"));
  EXPECT_TRUE(contains(a.at("features"), "activation recompute"));
  EXPECT_FALSE(a.at("profile_calibrated").get<bool>());
  ASSERT_GE(a.at("sets").size(), 1u);
  EXPECT_FALSE(a.at("sets")[0].at("published").get<bool>());
  EXPECT_GT(a.at("sets")[0].at("all").at("runs").get<int>(), 0);
  for (const auto& f : a.at("features")) {
    bool lined = contains(a.at("not_measured"), f.get<std::string>());
    for (const auto& set : a.at("sets")) {
      for (const auto& l : set.at("features")) lined = lined || l.at("what") == f;
    }
    EXPECT_TRUE(lined) << f;
  }
}

// A calibrated profile's answer carries no warning about its figures; a published one's does.
TEST(AccuracyCli, SimulateTextSaysWhetherTheProfileWasCalibrated) {
  const auto pub = test::run_trainsim("simulate --model gpt2-1.5b --hw dgx2 --zero 2 --micro-batch 2");
  ASSERT_EQ(pub.exit_code, 0) << pub.err;
  EXPECT_NE(pub.out.find("Measured accuracy (mean |error|, worst):"), std::string::npos) << pub.out;
  EXPECT_NE(pub.out.find("dgx2 is not a calibrated profile"), std::string::npos) << pub.out;
  const auto cal = test::run_trainsim("simulate --model gpt2-1.5b --hw h200x4-measured --zero 2 --micro-batch 2");
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  EXPECT_NE(cal.out.find("Measured accuracy (mean |error|, worst):"), std::string::npos) << cal.out;
  EXPECT_EQ(cal.out.find("not a calibrated profile"), std::string::npos) << cal.out;
}

// plan states the accuracy of the configuration it recommends, #1.
TEST(AccuracyCli, PlanJsonCarriesTheCardOfItsRecommendation) {
  test::ScratchDir cache;
  const auto r = test::run_command("XDG_CACHE_HOME='" + cache.path().string() + "' " + std::string(TRAINSIM_BINARY) +
                                   " plan --model gpt2-1.5b --hw dgx2 --nodes 1 --top 1 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j.at("accuracy").is_null());
  EXPECT_FALSE(j.at("accuracy").at("features").empty());
  EXPECT_TRUE(contains(j.at("accuracy").at("features"), "stack idealized"));
}

}  // namespace
}  // namespace trainsim
