// The cost model applies calibrated tables explicitly: nearest GEMM shape, curves interpolated
// in log(bytes), collective and copy rates capped at measured bandwidth.
#include "cost_model.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "engine.hpp"
#include "isolation.hpp"
#include "profile_loader.hpp"

namespace trainsim::sim {
namespace {

hw::ClusterProfile calibrated() {
  hw::ClusterProfile p = hw::builtin_profile("dgx-h100");
  p.calibration.gemm = {{hw::ComputePrecision::BF16, 8192, 8192, 8192, 0.7},
                        {hw::ComputePrecision::BF16, 1024, 1024, 1024, 0.4},
                        {hw::ComputePrecision::FP16, 8192, 8192, 8192, 0.9}};
  p.calibration.collectives = {{"all_reduce", 4, {{1e6, 10}, {1e9, 100}}}};
  p.calibration.kernels = {{"copy", 1, {{1e6, 1000}, {1e9, 3000}}}};
  return p;
}

TEST(CostModel, GemmEfficiencyComesFromTheNearestCalibratedShapeOfItsPrecision) {
  const hw::ClusterProfile p = calibrated();
  const CostModel c(p, wl::Numerics::BF16_MIXED);
  const double peak = 989.4e12;
  const wl::Gemm big{"x", 8000, 8000, 8000, 1};
  EXPECT_NEAR(c.gemm_seconds(big), big.flops() / (peak * 0.7), 1e-12);
  const wl::Gemm small{"x", 1000, 1100, 900, 1};
  EXPECT_NEAR(c.gemm_seconds(small), small.flops() / (peak * 0.4), 1e-15);
}

TEST(CostModel, CurvesInterpolateInLogBytesAndClampAtTheirEnds) {
  const std::vector<hw::CurvePoint> curve{{1e6, 10}, {1e9, 100}};
  EXPECT_DOUBLE_EQ(interpolate_curve(curve, 1e6), 10);
  EXPECT_NEAR(interpolate_curve(curve, std::sqrt(1e6 * 1e9)), 55, 1e-9);  // halfway in log space
  EXPECT_DOUBLE_EQ(interpolate_curve(curve, 1e12), 100);
  EXPECT_DOUBLE_EQ(interpolate_curve(curve, 1), 10);
  const CostModel c(calibrated(), wl::Numerics::BF16_MIXED);
  EXPECT_NEAR(c.kernel_seconds({"residual_add", 1e9}), 1e9 / 3000e9, 1e-15);
  EXPECT_DOUBLE_EQ(c.collective_cap(CollectiveKind::ALL_REDUCE, 4, 1e9), 100e9);
  EXPECT_DOUBLE_EQ(c.collective_cap(CollectiveKind::ALL_GATHER, 4, 1e9), 0.0);  // not calibrated: link rate
}

TEST(CostModel, MissingPrecisionIsRefused) {
  EXPECT_THROW(CostModel(hw::builtin_profile("dgx2"), wl::Numerics::BF16_MIXED), std::invalid_argument);
}

TEST(CostModel, ReplayHonoursTheCalibratedBusBandwidth) {
  // A ring all-reduce over 4 NVSwitch GPUs (450 GB/s links) capped at a measured 100 GB/s bus
  // bandwidth: 2(n-1) latency steps plus 2(n-1)/n S at 100 GB/s.
  const hw::ClusterProfile p = calibrated();
  const double S = 1e9;
  const std::string out = run_isolated([&] {
    PlatformSpec spec;
    for (int g = 0; g < 4; ++g) spec.gpus.push_back({0, g, {}});
    spec.rings = {RingSpec{{{{0, 0}, {0, 1}, {0, 2}, {0, 3}}}, false}};
    Platform platform(p, spec);
    GraphBuilder b(4);
    Op op;
    op.kind = OpKind::COLLECTIVE;
    op.stream = Stream::COMM;
    op.participants = {0, 1, 2, 3};
    op.ring = 0;
    op.group_size = 4;
    op.latency_s = ring_latency_s(p, ring_steps(CollectiveKind::ALL_REDUCE, 4), 4, 1);
    op.bytes = S;
    b.add(op);
    RateCaps caps;
    caps.per_op = {CostModel(p, wl::Numerics::BF16_MIXED).collective_cap(CollectiveKind::ALL_REDUCE, 4, S)};
    return fmt::format("{:.17g}", replay(b.graph(), platform, caps).makespan);
  });
  const double expected = 6 * 2e-6 + 1.5 * S / 100e9;
  EXPECT_NEAR(std::stod(out), expected, 1e-6 * expected);
}

}  // namespace
}  // namespace trainsim::sim
