// Golden tests: the JSON of small ZeRO-2, ZeRO-3 and ZeRO-Infinity simulations against committed
// files. Numbers must agree to 1e-9 relative (the replay is deterministic; the slack only absorbs
// the last printed digit), everything else exactly. A change of the model's predictions is a
// conscious update: TRAINSIM_UPDATE_GOLDEN=1 rewrites the files, and the diff goes into review.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "test_support.hpp"

namespace trainsim {
namespace {

void compare(const nlohmann::json& expected, const nlohmann::json& actual, const std::string& path) {
  if (expected.is_number() && actual.is_number()) {
    const double e = expected.get<double>(), a = actual.get<double>();
    EXPECT_LE(std::fabs(a - e), 1e-9 * std::max(std::fabs(e), 1e-300) + 1e-300) << path << ": golden " << e << ", now " << a;
    return;
  }
  ASSERT_EQ(expected.type(), actual.type()) << path;
  if (expected.is_object()) {
    ASSERT_EQ(expected.size(), actual.size()) << path << ": keys differ";
    for (const auto& [key, value] : expected.items()) {
      ASSERT_TRUE(actual.contains(key)) << path << "." << key << " is missing";
      compare(value, actual[key], path + "." + key);
    }
  } else if (expected.is_array()) {
    ASSERT_EQ(expected.size(), actual.size()) << path;
    for (std::size_t i = 0; i < expected.size(); ++i) compare(expected[i], actual[i], path + "[" + std::to_string(i) + "]");
  } else {
    EXPECT_EQ(expected, actual) << path;
  }
}

void golden(const std::string& name, const std::string& args) {
  const auto r = test::run_trainsim("simulate " + args + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json actual = nlohmann::json::parse(r.out);
  // The measured accuracy every answer carries is the committed validation's, not the replay's
  // (tests/planner/accuracy_measured_test.cpp checks it): a new measured run must not touch these files.
  ASSERT_TRUE(actual.contains("accuracy"));
  actual.erase("accuracy");
  const std::string path = test::source_path("tests/golden/" + name + ".json");
  if (const char* update = std::getenv("TRAINSIM_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    nlohmann::ordered_json in_order = nlohmann::ordered_json::parse(r.out);
    in_order.erase("accuracy");
    std::ofstream(path) << in_order.dump(2) << "\n";
    GTEST_SKIP() << "rewrote " << path;
  }
  compare(nlohmann::json::parse(test::read_file(path)), actual, name);
}

TEST(Golden, Zero2) { golden("simulate_zero2", "--model gpt2-1.5b --hw dgx2 --zero 2 --micro-batch 2"); }

TEST(Golden, Zero3TwoNodes) {
  golden("simulate_zero3", "--model gpt2-1.5b --hw dgx2 --nodes 2 --zero 3 --recompute full --micro-batch 4");
}

TEST(Golden, ZeroInfinityNvme) {
  golden("simulate_zero_infinity",
         "--model gpt2-1.5b --hw dgx2 --zero 3 --offload-params nvme --offload-optimizer nvme --recompute full "
         "--offload-activations cpu --micro-batch 4");
}

}  // namespace
}  // namespace trainsim
