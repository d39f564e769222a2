// The C++ side of the framework parts with a stand-in driver (stub_driver/: the protocol of
// calibrate/framework/, the raw documents of committed runs, the real merge logic): one run writes
// one profile with the framework sections; rebuild writes it again byte for byte; an interrupted
// run keeps its finished parts and --resume measures only the rest; without PyTorch the run says
// so in one line and writes the profile without those sections.
#include <gtest/gtest.h>

#include <filesystem>

#include "profile_loader.hpp"
#include "run_binary.hpp"

namespace trainsim::calibrate {
namespace {

using test::run_calibrate;
using test::TempDir;
namespace fs = std::filesystem;

const std::string STUB = std::string("TRAINSIM_CALIBRATE_FRAMEWORK=") + TRAINSIM_TEST_SOURCE_DIR + "/tests/calibrate/stub_driver";

const hw::BandwidthCurve* kernel(const hw::ClusterProfile& p, const std::string& what) {
  for (const auto& c : p.calibration.kernels) {
    if (c.what == what) return &c;
  }
  return nullptr;
}

TEST(FrameworkRun, OneRunWritesOneProfileThatRebuildWritesAgainByteForByte) {
  TempDir dir;
  const std::string out = dir.str() + "/out", again = dir.str() + "/again";
  const auto r = run_calibrate("--quick --only host_memory,framework --base dgx-h200 --name stub-run --out " + out, STUB);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[3/3] torch_fsdp_kernels"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("about"), std::string::npos) << r.out;
  const hw::ClusterProfile p = hw::load_profile_file(out + "/profile.json");
  // The same raw runs were merged into the built-in profiles by the scripts this replaces
  // (merge_torch_calibration.py into h200x2-measured, merge_fsdp_kernels.py into h200x4-measured).
  ASSERT_TRUE(p.calibration.host_dispatch && p.calibration.host_dispatch->op_us);
  EXPECT_EQ(*p.calibration.host_dispatch->op_us, *hw::builtin_profile("h200x2-measured").calibration.host_dispatch->op_us);
  const auto* mine = kernel(p, "torch_foreach_cast_fp32_to_bf16");
  const hw::ClusterProfile h200x4 = hw::builtin_profile("h200x4-measured");
  const auto* builtin = kernel(h200x4, "torch_foreach_cast_fp32_to_bf16");
  ASSERT_TRUE(mine && builtin);
  ASSERT_EQ(mine->points.size(), builtin->points.size());
  for (std::size_t i = 0; i < mine->points.size(); ++i) EXPECT_EQ(mine->points[i].value, builtin->points[i].value) << i;

  const auto rb = run_calibrate("rebuild " + out + "/raw_results.json --out " + again, STUB);
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_EQ(test::slurp(again + "/profile.json"), test::slurp(out + "/profile.json"));
}

void expect_same_curves(const std::vector<hw::BandwidthCurve>& mine, const std::vector<hw::BandwidthCurve>& merged,
                        const std::string& what) {
  ASSERT_EQ(mine.size(), merged.size()) << what;
  for (std::size_t c = 0; c < mine.size(); ++c) {
    EXPECT_EQ(mine[c].what, merged[c].what) << what;
    EXPECT_EQ(mine[c].group_size, merged[c].group_size) << what << " " << mine[c].what;
    ASSERT_EQ(mine[c].points.size(), merged[c].points.size()) << what << " " << mine[c].what;
    for (std::size_t i = 0; i < mine[c].points.size(); ++i) {
      EXPECT_EQ(mine[c].points[i].bytes, merged[c].points[i].bytes) << what << " " << mine[c].what << " " << i;
      EXPECT_EQ(mine[c].points[i].value, merged[c].points[i].value) << what << " " << mine[c].what << " " << i;
    }
  }
}

// The stand-in driver's four more parts hold the committed raw runs that the merge scripts put into
// the built-in profiles; the one run's profile has the same figures, so the merge scripts are no
// user step.
TEST(FrameworkRun, OneRunWritesTheStackOffloadAndInStepSectionsTheMergeScriptsWrote) {
  TempDir dir;
  const std::string out = dir.str() + "/out", again = dir.str() + "/again";
  const std::string env = STUB + " STUB_DRIVER_ALL_PARTS=1";
  const auto r = run_calibrate("--quick --only host_memory,framework --base dgx-h200 --name stub-run --out " + out, env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[7/7] torch_offload"), std::string::npos) << r.out;
  const hw::ClusterProfile p = hw::load_profile_file(out + "/profile.json");
  const hw::ClusterProfile h200x2 = hw::builtin_profile("h200x2-measured");
  const hw::ClusterProfile h200x4 = hw::builtin_profile("h200x4-measured");

  // merge_torch_calibration.py merged reports/calibration/h200x2/host_dispatch/torch/ into
  // h200x2-measured; resplit_pipeline_dispatch.py then split the two pipelines' layer time by the
  // measured forward share from their rounded halves' sum, so those two figures agree to the last
  // of their 4 significant digits (670.7 here, 670.8 there: 1F1B's forward), the rest exactly.
  ASSERT_TRUE(p.calibration.host_dispatch);
  const auto& mine = p.calibration.host_dispatch->stacks;
  const auto& merged = h200x2.calibration.host_dispatch->stacks;
  ASSERT_EQ(mine.size(), merged.size());
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const auto& a = mine[i];
    const auto& b = merged[i];
    EXPECT_EQ(a.stack, b.stack);
    EXPECT_EQ(a.ranks, b.ranks) << a.stack;
    const bool resplit = a.stack.rfind("pytorch-pipelining:", 0) == 0;
    const double split_tolerance = resplit ? 1e-3 * (b.layer_forward_us + b.layer_backward_us) : 0.0;
    EXPECT_NEAR(a.layer_forward_us, b.layer_forward_us, split_tolerance) << a.stack;
    EXPECT_NEAR(a.layer_backward_us, b.layer_backward_us, split_tolerance) << a.stack;
    EXPECT_EQ(a.micro_batch_forward_us, b.micro_batch_forward_us) << a.stack;
    EXPECT_EQ(a.micro_batch_backward_us, b.micro_batch_backward_us) << a.stack;
    EXPECT_EQ(a.sync_layer_us, b.sync_layer_us) << a.stack;
    EXPECT_EQ(a.optimizer_step_us, b.optimizer_step_us) << a.stack;
    EXPECT_EQ(a.optimizer_layer_us, b.optimizer_layer_us) << a.stack;
  }

  // merge_offload_calibration.py merged reports/calibration/offload/h200x4/ into h200x4-measured.
  ASSERT_TRUE(p.calibration.torch_offload && h200x4.calibration.torch_offload);
  expect_same_curves(p.calibration.torch_offload->curves, h200x4.calibration.torch_offload->curves, "torch_offload");
  const auto& adamw = p.calibration.torch_offload->adamw;
  const auto& merged_adamw = h200x4.calibration.torch_offload->adamw;
  ASSERT_EQ(adamw.size(), merged_adamw.size());
  for (std::size_t i = 0; i < adamw.size(); ++i) {
    EXPECT_EQ(adamw[i].processes, merged_adamw[i].processes);
    EXPECT_EQ(adamw[i].params_per_s_per_process, merged_adamw[i].params_per_s_per_process);
    ASSERT_EQ(adamw[i].seconds_per_tensor.size(), merged_adamw[i].seconds_per_tensor.size());
    for (std::size_t k = 0; k < adamw[i].seconds_per_tensor.size(); ++k) {
      EXPECT_EQ(adamw[i].seconds_per_tensor[k].elements, merged_adamw[i].seconds_per_tensor[k].elements);
      EXPECT_EQ(adamw[i].seconds_per_tensor[k].seconds, merged_adamw[i].seconds_per_tensor[k].seconds);
    }
  }

  // merge_layer_attention.py merged reports/calibration/step-attention/ (both GPUs) and, for the
  // sequence lengths the steps did not run, reports/calibration/layer-kernels/ into h200x4-measured.
  ASSERT_EQ(p.calibration.attention.size(), h200x4.calibration.attention.size());
  for (std::size_t i = 0; i < p.calibration.attention.size(); ++i) {
    const auto& a = p.calibration.attention[i];
    const auto& b = h200x4.calibration.attention[i];
    EXPECT_EQ(a.head_dim, b.head_dim) << i;
    EXPECT_EQ(a.seq, b.seq) << i;
    EXPECT_EQ(a.batch_heads, b.batch_heads) << i;
    EXPECT_EQ(a.forward_TFLOPs, b.forward_TFLOPs) << i;
    EXPECT_EQ(a.backward_TFLOPs, b.backward_TFLOPs) << i;
  }

  // merge_fsdp_kernels.py --part kernels merged these five of reports/calibration/layer-kernels/.
  for (const char* name : {"torch_bias_grad_bf16", "torch_add_fp32_bf16", "torch_split_cat_bf16",
                           "torch_swiglu_split_fwd_bf16", "torch_rotary_split_fwd_bf16"}) {
    const auto* a = kernel(p, name);
    const auto* b = kernel(h200x4, name);
    ASSERT_TRUE(a && b) << name;
    expect_same_curves({*a}, {*b}, name);
  }

  const auto rb = run_calibrate("rebuild " + out + "/raw_results.json --out " + again, STUB);
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_EQ(test::slurp(again + "/profile.json"), test::slurp(out + "/profile.json"));
}

TEST(FrameworkRun, AnInterruptedRunKeepsItsFinishedPartsAndResumeMeasuresTheRest) {
  TempDir dir;
  const std::string out = dir.str() + "/out";
  // The driver hangs in its second part; once the first is kept the run is stopped from outside,
  // as `timeout` does.
  const std::string kept = out + "/parts/framework/torch_host.json";
  const std::string cmd = STUB + " STUB_DRIVER_HANG=torch_fsdp_kernels " + TRAINSIM_CALIBRATE_BINARY +
                          " --quick --only host_memory,framework --base dgx-h200 --name stub-run --out " + out +
                          " >/dev/null 2>&1 & p=$!; for i in $(seq 600); do [ -f " + kept +
                          " ] && break; sleep 0.1; done; sleep 0.3; kill -TERM $p; wait $p";
  EXPECT_NE(std::system(("sh -c '" + cmd + "'").c_str()), 0);
  EXPECT_TRUE(fs::exists(out + "/parts/host_memory.json"));
  EXPECT_TRUE(fs::exists(out + "/parts/framework/torch_host.json"));
  EXPECT_FALSE(fs::exists(out + "/parts/framework/torch_fsdp_kernels.json"));
  EXPECT_FALSE(fs::exists(out + "/profile.json"));
  // A new run into it would mix two runs: refused, naming --resume.
  const auto fresh = run_calibrate("--quick --only host_memory --out " + out);
  EXPECT_EQ(fresh.exit_code, 2);
  EXPECT_NE(fresh.err.find("--resume"), std::string::npos) << fresh.err;
  EXPECT_EQ(run_calibrate("--resume " + out + " --quick").exit_code, 2);

  const auto resumed = run_calibrate("--resume " + out, STUB);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.out.find("[host_memory] finished in an earlier run: kept"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("[torch_host] finished in an earlier run: kept"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("[torch_fsdp_kernels] done"), std::string::npos) << resumed.out;
  const hw::ClusterProfile p = hw::load_profile_file(out + "/profile.json");
  EXPECT_TRUE(kernel(p, "torch_split_copy_bf16"));
  EXPECT_TRUE(p.calibration.host_dispatch);
}

TEST(FrameworkRun, WithoutPyTorchTheRunSaysSoInOneLineAndWritesTheProfile) {
  TempDir dir;
  const std::string out = dir.str() + "/out";
  // The real driver with an interpreter that has no torch with CUDA (Debian's is CPU-only).
  const auto r = run_calibrate("--quick --only host_memory,framework --base dgx-h200 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("framework parts skipped: PyTorch"), std::string::npos) << r.out;
  const hw::ClusterProfile p = hw::load_profile_file(out + "/profile.json");
  EXPECT_TRUE(p.calibration.attention.empty());
  EXPECT_FALSE(p.calibration.host_dispatch);
}

TEST(FrameworkRun, BudgetIsCheckedAndWhatItLeavesOutIsPrinted) {
  TempDir dir;
  const auto low = run_calibrate("--quick --only host_memory --budget 5 --out " + dir.str() + "/a");
  EXPECT_EQ(low.exit_code, 2);
  EXPECT_NE(low.err.find("--budget"), std::string::npos) << low.err;
  const std::string out = dir.str() + "/b";
  const auto r = run_calibrate("--quick --only host_memory,framework --budget 10 --base dgx-h200 --out " + out, STUB);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // host_memory 0.4 s, start 1 + torch_host 2, torch_fsdp_kernels 1 of 1 (quick): all fit in 10 s.
  EXPECT_NE(r.out.find("plan: 3 parts"), std::string::npos) << r.out;
  const auto full = run_calibrate("--full --only host_memory,framework --budget 10 --base dgx-h200 --out " + dir.str() + "/c", STUB);
  ASSERT_EQ(full.exit_code, 0) << full.err;
  // host_memory 0.5 (full), start 1 + torch_host 2, torch_fsdp_kernels 2 sizes 2: 5.5 s; 3 sizes (8) would be 11.5.
  EXPECT_NE(full.out.find("torch_fsdp_kernels: 2 of 3 sizes"), std::string::npos) << full.out;
}

}  // namespace
}  // namespace trainsim::calibrate
