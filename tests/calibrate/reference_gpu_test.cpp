// The reference step on a GPU (label gpu): `reference --check` (GPU against the CPU fp64
// reference, the loss falling over 20 steps like fp64 Adam's, recompute, ZeRO-3 on every visible
// GPU) and one small measured run whose JSON is complete. Skipped, saying why, without a GPU.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_binary.hpp"

namespace trainsim::calibrate {
namespace {

TEST(ReferenceGpu, CheckSuitePasses) {
  test::TempDir dir;
  const std::string out = (dir.path() / "out").string();
  // All visible GPUs: the ZeRO-3 check runs where there are two or more.
  const auto probe = test::run_calibrate("reference --check --gpus 1 --out " + out, "NCCL_NVLS_ENABLE=0");
  if (probe.exit_code == 3) GTEST_SKIP() << "no GPU here: " << probe.err;
  ASSERT_EQ(probe.exit_code, 0) << probe.out << probe.err << test::slurp(out + "/check.json");
  const auto report = nlohmann::json::parse(test::slurp(out + "/check.json"));
  EXPECT_TRUE(report["passed"].get<bool>()) << report.dump(1);
}

TEST(ReferenceGpu, SmallMeasuredRunWritesTheMeasuredRunJson) {
  test::TempDir dir;
  const std::string out = (dir.path() / "out").string();
  const auto r = test::run_calibrate("reference --layers 2 --hidden 256 --heads 4 --vocab 1024 --seq 256 "
                                     "--micro-batch 2 --steps 3 --warmup 1 --name tiny --out " + out,
                                     "NCCL_NVLS_ENABLE=0");
  if (r.exit_code == 3) GTEST_SKIP() << "no GPU here: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(test::slurp(out + "/tiny.json"));
  EXPECT_EQ(j["measured"]["step_times_s"].size(), 3u);
  EXPECT_GT(j["measured"]["step_time_s"].get<double>(), 0);
  EXPECT_GT(j["measured"]["peak_allocated_bytes"][0].get<double>(), 0);
  EXPECT_GT(j["stack"]["details"]["streams_per_rank"][0]["compute_busy_s"].get<double>(), 0);
  const auto losses = j["stack"]["details"]["losses"];
  EXPECT_LT(losses.back().get<double>(), losses.front().get<double>());
  EXPECT_EQ(j["stack"]["name"], "trainsim-reference");
}

// Host checkpoints (--checkpoints host): the run completes, states offload_activations "cpu",
// and per step moves every layer input x(0) .. x(L-1) (fp32 [micro_batch, seq, hidden]) out and
// back once per micro-batch; its arena holds three residual buffers and x(L) instead of L + 1.
// The gradients' equality with GPU checkpoints is the check suite's (CheckSuitePasses).
TEST(ReferenceGpu, HostCheckpointsRunMovesEveryLayerInputOutAndBack) {
  test::TempDir dir;
  const std::string out = (dir.path() / "out").string();
  const std::string model = "--layers 5 --hidden 256 --heads 4 --vocab 1024 --seq 256 --micro-batch 2 --grad-accum 2 "
                            "--steps 2 --warmup 1 --recompute layer --out " + out;
  const auto r = test::run_calibrate("reference " + model + " --checkpoints host --name host", "NCCL_NVLS_ENABLE=0");
  if (r.exit_code == 3) GTEST_SKIP() << "no GPU here: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto g = test::run_calibrate("reference " + model + " --name gpu", "NCCL_NVLS_ENABLE=0");
  ASSERT_EQ(g.exit_code, 0) << g.out << g.err;
  const auto j = nlohmann::json::parse(test::slurp(out + "/host.json"));
  const auto jg = nlohmann::json::parse(test::slurp(out + "/gpu.json"));
  EXPECT_EQ(j["strategy"]["offload_activations"], "cpu");
  EXPECT_EQ(jg["strategy"]["offload_activations"], "none");
  const double x_bytes = 2.0 * 256 * 256 * 4;
  const auto& r0 = j["stack"]["details"]["streams_per_rank"][0];
  EXPECT_DOUBLE_EQ(r0["checkpoint_bytes_to_host"].get<double>(), 5 * 2 * x_bytes);
  EXPECT_DOUBLE_EQ(r0["checkpoint_bytes_from_host"].get<double>(), 5 * 2 * x_bytes);
  EXPECT_GT(r0["checkpoint_out_busy_s"].get<double>(), 0);
  // Six boundaries on the GPU become four (the arena's buffers are 256-byte aligned, x_bytes is).
  EXPECT_DOUBLE_EQ(jg["measured"]["peak_allocated_bytes"][0].get<double>() -
                       j["measured"]["peak_allocated_bytes"][0].get<double>(),
                   2 * x_bytes);
  // The same losses, to the float rounding of atomic adds: the loss itself is summed with
  // atomicAdd (ref_kernels.cu, cross_entropy), so even the first step's, whose forward does not
  // depend on where the checkpoints are, differs in its last bits between two runs (on 2 x H200
  // 6.98888 against 6.98888, not equal bitwise); later steps follow gradients also summed with
  // atomics.
  const auto& lh = j["stack"]["details"]["losses"];
  const auto& lg = jg["stack"]["details"]["losses"];
  ASSERT_EQ(lh.size(), lg.size());
  for (std::size_t i = 0; i < lh.size(); ++i) EXPECT_NEAR(lh[i].get<double>(), lg[i].get<double>(), 1e-5 * lg[i].get<double>());
}

// A pipeline row states the split that ran and its bubble as the simulator defines it: per stage
// the share of the whole step its compute stream is idle; measured.busy holds stage 0's (rank 0's,
// as the measured-run schema says and as validate compares it).
TEST(ReferenceGpu, PipelineRunStatesItsSplitAndWholeStepBubble) {
  test::TempDir dir;
  const std::string out = (dir.path() / "out").string();
  const auto r = test::run_calibrate("reference --mode gpipe --gpus 2 --layers 5 --hidden 256 --heads 4 --vocab 1024 "
                                     "--seq 256 --micro-batch 1 --grad-accum 4 --steps 3 --warmup 1 --name pipe --out " + out,
                                     "NCCL_NVLS_ENABLE=0");
  if (r.exit_code == 3) GTEST_SKIP() << "no GPU here: " << r.err;
  if (r.exit_code == 2 && r.err.find("--gpus") != std::string::npos) GTEST_SKIP() << "fewer than 2 GPUs: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(test::slurp(out + "/pipe.json"));
  EXPECT_EQ(j["strategy"]["first_stage_layers"], 3);
  EXPECT_EQ(j["strategy"]["last_stage_layers"], 2);
  const double step = j["measured"]["step_time_s"].get<double>();
  for (const auto& st : j["stack"]["details"]["streams_per_rank"]) {
    EXPECT_NEAR(st["bubble_fraction"].get<double>(), 1.0 - st["compute_busy_s"].get<double>() / step, 1e-12);
  }
  EXPECT_NEAR(j["measured"]["busy"]["bubble_fraction"].get<double>(),
              j["stack"]["details"]["streams_per_rank"][0]["bubble_fraction"].get<double>(), 1e-12);
}

}  // namespace
}  // namespace trainsim::calibrate
