// calibration.torch_offload: PyTorch's CPU offload path as measured by
// calibrate/scripts/torch_offload_bench.py. The strict loader (every bad entry is a ConfigError
// naming the file and the key), the nearest-count lookups, the round trip through the writer, and
// the committed measured profiles' section.
#include <gtest/gtest.h>

#include <string>

#include "bad_section_case.hpp"
#include "config_error.hpp"
#include "profile_loader.hpp"
#include "test_support.hpp"
#include "torch_offload_calibration.hpp"

namespace trainsim::hw {
namespace {

nlohmann::json curve(const char* what, int gpus, double small_GBps, double large_GBps) {
  return {{"what", what},
          {"gpus", gpus},
          {"points", {{{"bytes", 1 << 20}, {"GBps", small_GBps}}, {{"bytes", 64 << 20}, {"GBps", large_GBps}}}}};
}

nlohmann::json section() {
  return {{"curves",
           {curve("d2h_pageable", 1, 8, 1.5), curve("d2h_pageable", 4, 7, 1.2), curve("cpu_grad_add", 4, 2, 10),
            curve("h2d_pinned", 1, 40, 54)}},
          {"adamw",
           {{{"processes", 1}, {"threads_per_process", 64}, {"params_per_s_per_process", 7e8}},
            {{"processes", 4},
             {"threads_per_process", 16},
             {"params_per_s_per_process", 1.4e9},
             {"seconds_per_tensor", {{{"elements", 1024}, {"seconds", 4e-5}}, {{"elements", 4194304}, {"seconds", 3e-3}}}}}}},
          {"source", "test"}};
}

ClusterProfile load(const nlohmann::json& s, std::string* path = nullptr) {
  nlohmann::json j = test::read_source_json("hwprofiles/dgx2.json");
  j["calibration"]["torch_offload"] = s;
  test::ScratchDir dir;
  const std::string p = dir.write("profile.json", j.dump());
  if (path != nullptr) *path = p;
  return load_profile_file(p);
}

TEST(TorchOffloadCalibration, LoadsCurvesAndRates) {
  const ClusterProfile p = load(section());
  ASSERT_TRUE(p.calibration.torch_offload);
  const TorchOffload& t = *p.calibration.torch_offload;
  ASSERT_EQ(t.curves.size(), 4u);
  EXPECT_EQ(t.curves[1].what, "d2h_pageable");
  EXPECT_EQ(t.curves[1].group_size, 4);
  EXPECT_EQ(t.curves[1].points[1].bytes, 64 << 20);
  EXPECT_EQ(t.curves[1].points[1].value, 1.2);
  ASSERT_EQ(t.adamw.size(), 2u);
  EXPECT_EQ(t.adamw[1].threads_per_process, 16);
  EXPECT_EQ(t.adamw[1].params_per_s_per_process, 1.4e9);
  EXPECT_TRUE(t.adamw[0].seconds_per_tensor.empty());  // optional
  ASSERT_EQ(t.adamw[1].seconds_per_tensor.size(), 2u);
  EXPECT_EQ(t.adamw[1].seconds_per_tensor[1].elements, 4194304);
  EXPECT_EQ(t.adamw[1].seconds_per_tensor[1].seconds, 3e-3);
  EXPECT_EQ(t.source, "test");
}

TEST(TorchOffloadCalibration, LooksUpTheNearestGpuAndProcessCount) {
  const TorchOffload t = *load(section()).calibration.torch_offload;
  EXPECT_EQ(torch_offload_curve(t, "d2h_pageable", 1)->group_size, 1);
  EXPECT_EQ(torch_offload_curve(t, "d2h_pageable", 2)->group_size, 1);  // a tie goes to fewer
  EXPECT_EQ(torch_offload_curve(t, "d2h_pageable", 3)->group_size, 4);
  EXPECT_EQ(torch_offload_curve(t, "d2h_pageable", 8)->group_size, 4);
  EXPECT_EQ(torch_offload_curve(t, "cpu_grad_add", 1)->group_size, 4);  // the only one measured
  EXPECT_EQ(torch_offload_curve(t, "d2h_pinned", 1), nullptr);
  EXPECT_EQ(torch_offload_adamw(t, 2)->processes, 1);
  EXPECT_EQ(torch_offload_adamw(t, 4)->processes, 4);
}

TEST(TorchOffloadCalibration, RoundTripsThroughTheWriter) {
  const ClusterProfile p = load(section());
  test::ScratchDir dir;
  const std::string again = dir.write("again.json", profile_to_json(p).dump());
  const ClusterProfile q = load_profile_file(again);
  ASSERT_TRUE(q.calibration.torch_offload);
  EXPECT_EQ(torch_offload_to_json(*q.calibration.torch_offload), torch_offload_to_json(*p.calibration.torch_offload));
}

TEST(TorchOffloadCalibration, TheCommittedMeasuredProfilesHaveIt) {
  for (const char* name : {"h200x4-measured", "h200x2-measured"}) {
    const ClusterProfile p = builtin_profile(name);
    ASSERT_TRUE(p.calibration.torch_offload) << name;
    const TorchOffload& t = *p.calibration.torch_offload;
    EXPECT_EQ(t.curves.size(), 12u) << name;  // 4 kinds x 1, 2, 4 ranks
    EXPECT_EQ(t.adamw.size(), 3u) << name;
    // As measured (reports/calibration/offload/h200x4/, `adam`): at every process count a tensor
    // of 1024 elements costs more than 1024 parameters at the big-tensor rate, many times over.
    for (const CpuOptimizerRate& r : t.adamw) {
      ASSERT_EQ(r.seconds_per_tensor.size(), 4u) << name;
      EXPECT_GT(r.seconds_per_tensor[0].seconds, 10 * 1024 / r.params_per_s_per_process) << name << " at " << r.processes;
    }
    // As measured (reports/calibration/offload/): a fresh pageable destination above glibc's
    // 32 MiB mmap threshold copies several times slower than one below it, at every rank count.
    for (int gpus : {1, 2, 4}) {
      const auto& pts = torch_offload_curve(t, "d2h_pageable", gpus)->points;
      double below = 0, above = 0;
      for (const CurvePoint& c : pts) {
        if (c.bytes == 30 << 20) below = c.value;
        if (c.bytes == 50 << 20) above = c.value;
      }
      EXPECT_GT(below, 5 * above) << name << " at " << gpus;
    }
  }
}

using BadCase = test::BadSectionCase;

class BadTorchOffload : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadTorchOffload, IsAConfigErrorNamingFileAndKey) {
  test::expect_bad_section(section(), GetParam(), [](const nlohmann::json& broken) { load(broken); });
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadTorchOffload,
    ::testing::Values(
        BadCase{"unknown curve", [](nlohmann::json& s) { s["curves"][2]["what"] = "h2d_pageable_fresh"; },
                "calibration.torch_offload.curves[2].what", "one of d2h_pageable, d2h_pinned, h2d_pinned, cpu_grad_add"},
        BadCase{"unknown key in a curve", [](nlohmann::json& s) { s["curves"][0]["group_size"] = 2; },
                "calibration.torch_offload.curves[0].group_size", "unknown key"},
        BadCase{"unknown key in the section", [](nlohmann::json& s) { s["threads"] = 16; },
                "calibration.torch_offload.threads", "unknown key"},
        BadCase{"a repeated curve", [](nlohmann::json& s) { s["curves"][1]["gpus"] = 1; },
                "calibration.torch_offload.curves[1].gpus", "one curve per (what, gpus)"},
        BadCase{"sizes not ascending", [](nlohmann::json& s) { s["curves"][3]["points"][1]["bytes"] = 1000; },
                "calibration.torch_offload.curves[3].points[1].bytes", "strictly ascending"},
        BadCase{"a zero rate", [](nlohmann::json& s) { s["curves"][0]["points"][0]["GBps"] = 0; },
                "calibration.torch_offload.curves[0].points[0].GBps", "[1e-6, 1e5]"},
        BadCase{"the smallest double as a rate", [](nlohmann::json& s) { s["curves"][0]["points"][0]["GBps"] = 5e-324; },
                "calibration.torch_offload.curves[0].points[0].GBps", "[1e-6, 1e5]"},
        BadCase{"no GPUs", [](nlohmann::json& s) { s["curves"][0]["gpus"] = 0; },
                "calibration.torch_offload.curves[0].gpus", "got 0"},
        BadCase{"a repeated process count", [](nlohmann::json& s) { s["adamw"][1]["processes"] = 1; },
                "calibration.torch_offload.adamw[1].processes", "one run per process count"},
        BadCase{"a missing rate", [](nlohmann::json& s) { s["adamw"][0].erase("params_per_s_per_process"); },
                "calibration.torch_offload.adamw[0].params_per_s_per_process", "got nothing"},
        BadCase{"tensor sizes not ascending",
                [](nlohmann::json& s) { s["adamw"][1]["seconds_per_tensor"][1]["elements"] = 1024; },
                "calibration.torch_offload.adamw[1].seconds_per_tensor[1].elements", "strictly ascending"},
        BadCase{"a zero time a tensor", [](nlohmann::json& s) { s["adamw"][1]["seconds_per_tensor"][0]["seconds"] = 0; },
                "calibration.torch_offload.adamw[1].seconds_per_tensor[0].seconds", "(0, 1e4]"},
        BadCase{"an empty tensor list", [](nlohmann::json& s) { s["adamw"][1]["seconds_per_tensor"] = nlohmann::json::array(); },
                "calibration.torch_offload.adamw[1].seconds_per_tensor", "non-empty"},
        BadCase{"no source", [](nlohmann::json& s) { s.erase("source"); }, "calibration.torch_offload.source",
                "got nothing"}));

}  // namespace
}  // namespace trainsim::hw
