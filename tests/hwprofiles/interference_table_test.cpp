// calibration.interference: the measured table's loader (strict: every bad point is a ConfigError
// naming the file and the key) and its lookup (linear in log(bytes), then in log(GEMM FLOPs),
// clamped at the table's ends).
#include <gtest/gtest.h>

#include <string>

#include "bad_section_case.hpp"
#include "config_error.hpp"
#include "profile_loader.hpp"
#include "test_support.hpp"

namespace trainsim::hw {
namespace {

nlohmann::json point(const char* collective, double bytes, double k, double alone_us, double beside_us, double slowdown) {
  return {{"collective", collective}, {"bytes", bytes},           {"gemm_m", 2048},
          {"gemm_n", 4 * k},          {"gemm_k", k},              {"gemm_alone_us", 100},
          {"collective_alone_us", alone_us}, {"collective_beside_us", beside_us}, {"compute_slowdown", slowdown}};
}

// Two GEMMs (k = 1024 and 4096: 16x the FLOPs apart), all-gather at 1 MB and 100 MB.
nlohmann::json table() {
  nlohmann::json points = nlohmann::json::array();
  points.push_back(point("all_gather", 1e8, 1024, 1000, 1300, 1.4));  // out of order on purpose
  points.push_back(point("all_gather", 1e6, 1024, 10, 110, 1.0));
  points.push_back(point("all_gather", 1e6, 4096, 10, 510, 1.2));
  points.push_back(point("all_gather", 1e8, 4096, 1000, 1900, 1.6));
  return {{"points", points}, {"source", "test"}};
}

Interference load(const nlohmann::json& interference, std::string* path = nullptr) {
  nlohmann::json j = test::read_source_json("hwprofiles/dgx2.json");
  j["calibration"]["interference"] = interference;
  test::ScratchDir dir;
  const std::string p = dir.write("profile.json", j.dump());
  if (path != nullptr) *path = p;
  const ClusterProfile profile = load_profile_file(p);
  if (!profile.calibration.interference) throw std::logic_error("no interference read");
  return *profile.calibration.interference;
}

double flops(double k) { return 2.0 * 2048 * 4 * k * k; }

TEST(InterferenceTable, LoadsSortedByCollectiveGemmAndSize) {
  const Interference t = load(table());
  ASSERT_EQ(t.points.size(), 4u);
  EXPECT_EQ(t.points[0].bytes, 1e6);
  EXPECT_EQ(t.points[1].bytes, 1e8);
  EXPECT_EQ(t.points[0].gemm_k, 1024);
  EXPECT_EQ(t.points[2].gemm_k, 4096);
  EXPECT_EQ(t.source, "test");
}

TEST(InterferenceTable, InterpolatesInLogBytesThenLogGemmFlops) {
  const Interference t = load(table());
  // At a measured cell: beside - alone.
  InterferenceEffect e = interference_effect(t, "all_gather", 1e6, flops(1024));
  EXPECT_NEAR(e.extra_s, 100e-6, 1e-12);
  EXPECT_NEAR(e.compute_slowdown, 1.0, 1e-12);
  // 1e7 is halfway between 1e6 and 1e8 in log: extra (100 + 300) / 2 us beside k = 1024.
  e = interference_effect(t, "all_gather", 1e7, flops(1024));
  EXPECT_NEAR(e.extra_s, 200e-6, 1e-12);
  EXPECT_NEAR(e.compute_slowdown, 1.2, 1e-12);
  // Halfway in log(FLOPs) between the GEMMs (k = 2048 gives 4x the FLOPs of k = 1024, 1/4 of
  // k = 4096's): at 1e6 bytes (100 + 500) / 2 us, at 1e7 bytes ((100 + 300) / 2 + (500 + 900) / 2) / 2.
  e = interference_effect(t, "all_gather", 1e6, flops(2048));
  EXPECT_NEAR(e.extra_s, 300e-6, 1e-12);
  EXPECT_NEAR(e.compute_slowdown, 1.1, 1e-12);
  e = interference_effect(t, "all_gather", 1e7, flops(2048));
  EXPECT_NEAR(e.extra_s, 450e-6, 1e-12);
  EXPECT_NEAR(e.compute_slowdown, (1.2 + 1.4) / 2, 1e-12);
}

TEST(InterferenceTable, ClampsAtTheTablesEnds) {
  const Interference t = load(table());
  EXPECT_NEAR(interference_effect(t, "all_gather", 1e3, flops(1024)).extra_s, 100e-6, 1e-12);
  EXPECT_NEAR(interference_effect(t, "all_gather", 1e10, flops(1024)).extra_s, 300e-6, 1e-12);
  EXPECT_NEAR(interference_effect(t, "all_gather", 1e10, flops(64)).extra_s, 300e-6, 1e-12);
  EXPECT_NEAR(interference_effect(t, "all_gather", 1e10, flops(65536)).extra_s, 900e-6, 1e-12);
  EXPECT_NEAR(interference_effect(t, "all_gather", 1e10, flops(65536)).compute_slowdown, 1.6, 1e-12);
}

TEST(InterferenceTable, ACollectiveWithoutPointsHasNoEffect) {
  const InterferenceEffect e = interference_effect(load(table()), "all_reduce", 1e7, flops(1024));
  EXPECT_EQ(e.extra_s, 0);
  EXPECT_EQ(e.compute_slowdown, 1);
}

TEST(InterferenceTable, TheCommittedMeasuredProfilesHaveTheGrid) {
  for (const char* name : {"h200x4-measured", "h200x2-measured"}) {
    const ClusterProfile p = builtin_profile(name);
    ASSERT_TRUE(p.calibration.interference) << name;
    EXPECT_EQ(p.calibration.interference->points.size(), 75u) << name;  // 5 GEMMs x 3 collectives x 5 sizes
    // Beside a 6144-hidden layer's GEMM a 64 MiB all-gather waits far longer than beside a
    // 1024-hidden one's (the SMs are held for a longer GEMM), as measured.
    const Interference& t = *p.calibration.interference;
    const double small = interference_effect(t, "all_gather", 64.0 * (1 << 20), 2.0 * 8192 * 4096 * 1024).extra_s;
    const double large = interference_effect(t, "all_gather", 64.0 * (1 << 20), 2.0 * 2048 * 24576 * 6144).extra_s;
    EXPECT_GT(large, 3 * small) << name;
  }
}

using BadCase = test::BadSectionCase;

class BadInterference : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInterference, IsAConfigErrorNamingFileAndKey) {
  test::expect_bad_section(table(), GetParam(), [](const nlohmann::json& broken) { load(broken); });
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadInterference,
    ::testing::Values(
        BadCase{"the old scalar form",
                [](nlohmann::json& t) { t = {{"compute_slowdown", 1.09}, {"communication_slowdown", 4.46}, {"source", "x"}}; },
                "calibration.interference.compute_slowdown", "run trainsim-calibrate --only interference"},
        BadCase{"unknown key in a point", [](nlohmann::json& t) { t["points"][1]["extra_us"] = 3; },
                "calibration.interference.points[1].extra_us", "unknown key"},
        BadCase{"missing key in a point", [](nlohmann::json& t) { t["points"][0].erase("compute_slowdown"); },
                "calibration.interference.points[0].compute_slowdown", "got nothing"},
        BadCase{"unknown collective", [](nlohmann::json& t) { t["points"][2]["collective"] = "broadcast"; },
                "calibration.interference.points[2].collective", "one of all_reduce, all_gather, reduce_scatter"},
        BadCase{"slowdown below 1", [](nlohmann::json& t) { t["points"][0]["compute_slowdown"] = 0.9; },
                "calibration.interference.points[0].compute_slowdown", "[1, 100]"},
        BadCase{"beside faster than alone", [](nlohmann::json& t) { t["points"][3]["collective_beside_us"] = 999; },
                "calibration.interference.points[3].collective_beside_us", "at least collective_alone_us"},
        BadCase{"a repeated cell", [](nlohmann::json& t) { t["points"][3]["bytes"] = 1e6; },
                "calibration.interference.points[3].bytes", "one point per"},
        BadCase{"no points", [](nlohmann::json& t) { t["points"] = nlohmann::json::array(); },
                "calibration.interference.points", "non-empty"}));

}  // namespace
}  // namespace trainsim::hw
