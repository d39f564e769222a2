// calibration.reference_kernels: the trainsim reference's own kernels by class, as
// trainsim-calibrate --only reference_kernels measures them. The strict loader (unknown class,
// repeated class, bad sizes and rates, unknown keys: ConfigErrors naming file and key), the round
// trip through the writer, the class list shared with workloads/stacks/reference_kernels.hpp, and the
// profile of the measured run.
#include "reference_kernel_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <string>

#include "../../workloads/stacks/reference_kernels.hpp"
#include "bad_section_case.hpp"
#include "config_error.hpp"
#include "profile_loader.hpp"
#include "test_support.hpp"

namespace trainsim::hw {
namespace {

nlohmann::json curve(const char* what, double small_GBps, double large_GBps) {
  return {{"what", what}, {"points", {{{"bytes", 1 << 20}, {"GBps", small_GBps}}, {{"bytes", 1 << 30}, {"GBps", large_GBps}}}}};
}

nlohmann::json section() {
  return {{"curves", {curve("causal_softmax_fwd", 900, 2900), curve("column_sum_bf16", 500, 2100),
                      curve("split_qkv", 800, 2500)}},
          {"source", "test"}};
}

ClusterProfile load(const nlohmann::json& s, std::string* path = nullptr) {
  nlohmann::json j = test::read_source_json("hwprofiles/dgx2.json");
  j["calibration"]["reference_kernels"] = s;
  test::ScratchDir dir;
  const std::string p = dir.write("profile.json", j.dump());
  if (path != nullptr) *path = p;
  return load_profile_file(p);
}

TEST(ReferenceKernelsCalibration, LoadsCurvesByClass) {
  const ClusterProfile p = load(section());
  const auto& k = p.calibration.reference_kernels;
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[1].what, "column_sum_bf16");
  EXPECT_EQ(k[1].points[1].bytes, 1 << 30);
  EXPECT_EQ(k[1].points[1].value, 2100);
  EXPECT_EQ(p.calibration.reference_kernels_source, "test");
  EXPECT_FALSE(p.calibration.empty());
}

TEST(ReferenceKernelsCalibration, RoundTripsThroughTheWriter) {
  const ClusterProfile p = load(section());
  test::ScratchDir dir;
  const ClusterProfile q = load_profile_file(dir.write("again.json", profile_to_json(p).dump()));
  EXPECT_EQ(reference_kernels_to_json(q.calibration), reference_kernels_to_json(p.calibration));
}

TEST(ReferenceKernelsCalibration, TheLoaderKnowsEveryClassTheStackPrices) {
  ASSERT_EQ(std::size(REFERENCE_KERNEL_CLASSES), std::size(wl::REFERENCE_KERNELS));
  for (wl::ReferenceKernel k : wl::REFERENCE_KERNELS) {
    const std::string name = wl::reference_kernel_class(k);
    EXPECT_NE(std::find(std::begin(REFERENCE_KERNEL_CLASSES), std::end(REFERENCE_KERNEL_CLASSES), name),
              std::end(REFERENCE_KERNEL_CLASSES))
        << name;
  }
}

// The profiles trainsim-calibrate wrote on the lent GPUs (reports/validation/reference/logs/) load
// through the strict loader: the H100's with eleven layer classes, the H200's with every class.
void expect_rates_within(const ClusterProfile& p, double hbm_GBps, double floor_GBps, std::size_t min_points) {
  for (const BandwidthCurve& c : p.calibration.reference_kernels) {
    EXPECT_GE(c.points.size(), min_points) << c.what;
    // Below the GPU's HBM bandwidth and above a floor: a rate outside is a unit or formula slip.
    for (const CurvePoint& q : c.points) {
      EXPECT_LT(q.value, hbm_GBps) << c.what;
      EXPECT_GT(q.value, floor_GBps) << c.what << " at " << q.bytes;
    }
  }
}

TEST(ReferenceKernelsCalibration, TheMeasuredRunsProfilesHaveTheirClasses) {
  const std::string profiles = std::string(TRAINSIM_SOURCE_DIR) + "/reports/validation/reference/profiles/";
  const ClusterProfile h100 = load_profile_file(profiles + "h100-reference-kernels.profile.json");
  EXPECT_EQ(h100.calibration.reference_kernels.size(), 11u);
  for (const BandwidthCurve& c : h100.calibration.reference_kernels) EXPECT_GE(c.points.size(), 7u) << c.what;
  expect_rates_within(h100, 3350, 3350 / 4, 7);
  const ClusterProfile h200 = load_profile_file(profiles + "h200-reference-kernels.profile.json");
  EXPECT_EQ(h200.calibration.reference_kernels.size(), std::size(REFERENCE_KERNEL_CLASSES));
  // A fifth of the H200's 4.8 TB/s: the LayerNorm parameter pass at its smallest shape (b1 h1024)
  // reaches 1.05 TB/s there.
  expect_rates_within(h200, 4800, 4800 / 5, 5);
}

using BadCase = test::BadSectionCase;

class BadReferenceKernels : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadReferenceKernels, IsAConfigErrorNamingFileAndKey) {
  test::expect_bad_section(section(), GetParam(), [](const nlohmann::json& broken) { load(broken); });
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadReferenceKernels,
    ::testing::Values(
        BadCase{"unknown class", [](nlohmann::json& s) { s["curves"][1]["what"] = "softmax"; },
                "calibration.reference_kernels.curves[1].what", "one of layernorm_fwd, layernorm_bwd_input"},
        BadCase{"a repeated class", [](nlohmann::json& s) { s["curves"][2]["what"] = "causal_softmax_fwd"; },
                "calibration.reference_kernels.curves[2].what", "each class once"},
        BadCase{"unknown key in a curve", [](nlohmann::json& s) { s["curves"][0]["group_size"] = 1; },
                "calibration.reference_kernels.curves[0].group_size", "unknown key"},
        BadCase{"unknown key in the section", [](nlohmann::json& s) { s["kernels"] = 1; },
                "calibration.reference_kernels.kernels", "unknown key"},
        BadCase{"no source", [](nlohmann::json& s) { s.erase("source"); }, "calibration.reference_kernels.source",
                "string"},
        BadCase{"sizes not ascending", [](nlohmann::json& s) { s["curves"][0]["points"][1]["bytes"] = 1000; },
                "calibration.reference_kernels.curves[0].points[1].bytes", "strictly ascending"},
        BadCase{"a zero rate", [](nlohmann::json& s) { s["curves"][2]["points"][0]["GBps"] = 0; },
                "calibration.reference_kernels.curves[2].points[0].GBps", "GB/s"},
        BadCase{"a rate as text", [](nlohmann::json& s) { s["curves"][2]["points"][0]["GBps"] = "fast"; },
                "calibration.reference_kernels.curves[2].points[0].GBps", "number"}));

}  // namespace
}  // namespace trainsim::hw
