// `trainsim-calibrate reference` through the built binary (label unit): argument errors exit 2
// naming the flag and write nothing; without a GPU it says so and exits 3; the measured-run JSON
// it would write has the keys `trainsim validate` reads.
#include <gtest/gtest.h>

#include <filesystem>

#include "errors.hpp"
#include "reference/reference_result.hpp"
#include "run_binary.hpp"

namespace trainsim::calibrate {
namespace {

using test::run_calibrate;
using test::TempDir;
namespace fs = std::filesystem;

TEST(ReferenceCli, ArgumentErrorsExit2NameTheFlag) {
  TempDir dir;
  const std::string out = (dir.path() / "out").string();
  const std::vector<std::pair<std::string, std::string>> cases{
      {"reference --out " + out + " --heads 5 --hidden 64", "--heads"},
      {"reference --out " + out + " --mode zero7", "--mode"},
      {"reference --out " + out + " --recompute some", "--recompute"},
      {"reference --out " + out + " --layers 0", "--layers"},
      {"reference --out " + out + " --mode single --gpus 2", "--gpus"},
      {"reference --out " + out + " --lr 3", "--lr"},
      {"reference --layers 2", "--out"},
      {"reference --out " + out + " --teleport", "--teleport"},
      {"reference --out " + out + " --mode gpipe --gpus 1", "--gpus"},
      {"reference --out " + out + " --mode 1f1b --gpus 4 --layers 3", "--layers"},
      {"reference --out " + out + " --mode zero3 --gpus 2 --storage-dir /tmp", "--storage-dir"},
      {"reference --out " + out + " --mode infinity --gpus 2 --storage-probe-chunks 4", "--storage-probe-chunks"},
      {"reference --out " + out + " --mode infinity --gpus 2 --storage-dir /tmp --storage-probe-chunks -1", "--storage-probe-chunks"},
      {"reference --out " + out + " --mode infinity --gpus 2 --storage-dir /tmp --storage-probe-chunks 4x", "--storage-probe-chunks"},
      {"reference --out " + out + " --mode infinity --gpus 2 --storage-dir /tmp --storage-probe-chunks", "--storage-probe-chunks"},
      // L24-h1024 over 2 ranks: 43 chunks of 4 Mi parameters per rank's state file.
      {"reference --out " + out + " --mode infinity --gpus 2 --storage-dir /tmp --storage-probe-chunks 44", "--storage-probe-chunks"},
      // Host checkpoints: a known place, with layer recompute, not for the pipelines, not for --check.
      {"reference --out " + out + " --recompute layer --checkpoints disk", "--checkpoints"},
      {"reference --out " + out + " --recompute layer --checkpoints", "--checkpoints"},
      {"reference --out " + out + " --checkpoints host", "--checkpoints"},
      {"reference --out " + out + " --mode zero3 --gpus 2 --recompute none --checkpoints host", "--checkpoints"},
      {"reference --out " + out + " --mode gpipe --gpus 2 --recompute layer --checkpoints host", "--checkpoints"},
      {"reference --out " + out + " --mode 1f1b --gpus 2 --recompute layer --checkpoints host", "--checkpoints"},
      {"reference --check --out " + out + " --recompute layer --checkpoints host", "--checkpoints"},
  };
  for (const auto& [args, flag] : cases) {
    const auto r = run_calibrate(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << args << "\n" << r.err;
    EXPECT_FALSE(fs::exists(out)) << args;
  }
}

TEST(ReferenceCli, WithoutAGpuSaysSoAndExits3) {
  TempDir dir;
  const std::string out = (dir.path() / "out").string();
  const auto r = run_calibrate("reference --check --out " + out, "CUDA_VISIBLE_DEVICES=");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("GPU"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(ReferenceJson, MeasuredRunHasTheValidateKeys) {
  ref::ReferenceRun run;
  run.options = ref::parse_reference_options({"--out", "x", "--mode", "zero3", "--gpus", "2", "--grad-accum", "2"});
  run.gpu_name = "NVIDIA H200";
  for (int r = 0; r < 2; ++r) {
    ref::RankMeasurement m;
    m.step_times_s = {0.30, 0.32 + 0.01 * r, 0.31};
    m.busy.assign(3, ref::StreamBusy{0.25, 0.1, 0, 0, 0, 0.01, 0.02, 0});
    m.peak_allocated_bytes = 1e9;
    m.peak_reserved_bytes = 1.1e9;
    run.ranks.push_back(m);
  }
  run.losses = {10.9, 10.8};
  const auto j = ref::measured_run_json(run, "x.model.json");
  EXPECT_EQ(j["kind"], "trainsim.measured_run");
  EXPECT_EQ(j["strategy"]["zero"], 3);
  EXPECT_EQ(j["strategy"]["global_batch"], 4 * 2 * 2);
  // Per step the slowest rank; the median of (0.30, 0.33, 0.31).
  EXPECT_DOUBLE_EQ(j["measured"]["step_time_s"].get<double>(), 0.31);
  EXPECT_EQ(j["measured"]["peak_allocated_bytes"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["measured"]["busy"]["exposed_communication_s"].get<double>(), 0.02);
  EXPECT_NEAR(j["stack"]["details"]["streams_per_rank"][0]["compute_idle_s"].get<double>(), 0.31 - 0.25, 1e-12);
  EXPECT_EQ(j["name"], "zero3_L24-h1024_mb4x2");
  // 6 N T plus attention for L24 h1024 V50304 s2048, 16 sequences.
  const double per_seq = 2 * 2048.0 * (12 * 24 * 1024.0 * 1024 + 50304.0 * 1024) + 4 * 24 * 2048.0 * 2048 * 1024;
  EXPECT_DOUBLE_EQ(ref::step_flops(run.options), 3 * per_seq * 16);
}

// measured.busy is rank 0's (the measured-run schema) and validate sets it beside the replay's
// stage 0: a pipeline row's bubble is stage 0's whole-step idle share, not the stages' mean.
TEST(ReferenceJson, PipelineBubbleIsStageZeros) {
  ref::ReferenceRun run;
  run.options = ref::parse_reference_options({"--out", "x", "--mode", "gpipe", "--gpus", "2", "--grad-accum", "4"});
  for (const double compute : {0.20, 0.28}) {
    ref::RankMeasurement m;
    m.step_times_s = {0.30, 0.30, 0.30};
    m.busy.assign(3, ref::StreamBusy{compute, 0, 0, 0, 0, 0, 0, 0.1});
    m.peak_allocated_bytes = m.peak_reserved_bytes = 1e9;
    run.ranks.push_back(m);
  }
  const auto j = ref::measured_run_json(run, "x.model.json");
  const auto& streams = j["stack"]["details"]["streams_per_rank"];
  EXPECT_NEAR(streams[0]["bubble_fraction"].get<double>(), 1 - 0.20 / 0.30, 1e-12);
  EXPECT_NEAR(streams[1]["bubble_fraction"].get<double>(), 1 - 0.28 / 0.30, 1e-12);
  EXPECT_NEAR(j["measured"]["busy"]["bubble_fraction"].get<double>(), 1 - 0.20 / 0.30, 1e-12);
}

TEST(ReferenceJson, InfinityRecordsItsOffloadAndHostBytes) {
  ref::ReferenceRun run;
  run.options = ref::parse_reference_options({"--out", "x", "--mode", "infinity", "--gpus", "2", "--cpu-threads", "8"});
  ref::RankMeasurement m;
  m.step_times_s = {1.0};
  m.busy.assign(1, ref::StreamBusy{0.5, 0.1, 0.2, 0, 0.3, 0, 0.05, 0});
  m.bytes_h2d = 2e9;
  m.bytes_d2h = 4e9;
  m.peak_allocated_bytes = m.peak_reserved_bytes = 1e9;
  run.ranks = {m, m};
  const auto j = ref::measured_run_json(run, "x.model.json");
  EXPECT_EQ(j["strategy"]["zero"], 3);
  EXPECT_EQ(j["strategy"]["offload_optimizer"], "cpu");
  EXPECT_EQ(j["strategy"]["offload_params"], "cpu");
  EXPECT_EQ(j["name"], "infinity_L24-h1024_mb4x1");
  const auto& r0 = j["stack"]["details"]["streams_per_rank"][0];
  EXPECT_DOUBLE_EQ(r0["cpu_optimizer_s"].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(r0["host_transfer_busy_s"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(r0["bytes_from_host"].get<double>(), 2e9);
  EXPECT_DOUBLE_EQ(r0["bytes_to_host"].get<double>(), 4e9);
  EXPECT_NE(j["stack"]["details"]["offload"].get<std::string>().find("8 threads"), std::string::npos);
}

// The probe's option: off by default, bounded by the rank's state file (its chunks: the padded
// shard over STATE_CHUNK_PARAMS; the measured rows moved 43 x 48 MiB per rank per step at L24).
TEST(ReferenceOptions, StorageProbeChunksAreBoundedByTheStateFile) {
  const std::vector<std::string> base{"--out", "x", "--mode", "infinity", "--gpus", "2", "--storage-dir", "/tmp"};
  EXPECT_EQ(ref::parse_reference_options(base).storage_probe_chunks, 0);
  EXPECT_EQ(ref::state_file_chunks(ref::parse_reference_options(base)), 43);
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return ref::parse_reference_options(a);
  };
  EXPECT_EQ(with({"--storage-probe-chunks", "43"}).storage_probe_chunks, 43);
  EXPECT_THROW(with({"--storage-probe-chunks", "44"}), UsageError);
  // The L32-h2560 row: 1.326 B parameters per rank, 317 chunks (its 15.955 GB read per step).
  const auto l32 = with({"--layers", "32", "--hidden", "2560", "--heads", "20", "--storage-probe-chunks", "64"});
  EXPECT_EQ(ref::state_file_chunks(l32), 317);
  EXPECT_EQ(l32.storage_probe_chunks, 64);
  EXPECT_EQ(l32.name, "infinity-storage_L32-h2560_mb4x1");  // the probe does not rename the row
  EXPECT_THROW(ref::parse_reference_options({"--out", "x", "--mode", "infinity", "--storage-probe-chunks", "1"}), UsageError);
}

// --checkpoints host (with --recompute layer) in single, zero3 and infinity; gpu, the default,
// keeps the rows' names and strategy as before but for the explicit offload_activations "none".
TEST(ReferenceOptions, HostCheckpointsNeedLayerRecompute) {
  const auto gpu = ref::parse_reference_options({"--out", "x", "--mode", "zero3", "--gpus", "2", "--recompute", "layer"});
  EXPECT_EQ(gpu.checkpoints, ref::Checkpoints::GPU);
  EXPECT_EQ(gpu.name, "zero3-ckpt_L24-h1024_mb4x1");
  for (const std::string mode : {"single", "zero3", "infinity"}) {
    const auto o = ref::parse_reference_options({"--out", "x", "--mode", mode, "--gpus", mode == "single" ? "1" : "2",
                                                 "--recompute", "layer", "--checkpoints", "host", "--grad-accum", "2"});
    EXPECT_EQ(o.checkpoints, ref::Checkpoints::HOST) << mode;
    EXPECT_EQ(o.name, mode + "-ckpthost_L24-h1024_mb4x2");
  }
  EXPECT_THROW(ref::parse_reference_options({"--out", "x", "--checkpoints", "host"}), UsageError);
  EXPECT_THROW(ref::parse_reference_options({"--out", "x", "--mode", "1f1b", "--gpus", "2", "--recompute", "layer",
                                             "--checkpoints", "host"}),
               UsageError);
  EXPECT_NE(ref::reference_usage().find("--checkpoints gpu|host"), std::string::npos);
}

// The row states what the simulator replays for it: offload_activations "cpu" (SAVE_CHECKPOINT /
// LOAD_CHECKPOINT, sim/schedules/data_parallel_schedule.cpp), how, and per rank the copies' bytes
// and busy time.
TEST(ReferenceJson, HostCheckpointsAreOffloadedActivations) {
  ref::ReferenceRun run;
  run.options = ref::parse_reference_options(
      {"--out", "x", "--mode", "zero3", "--gpus", "2", "--recompute", "layer", "--checkpoints", "host"});
  ref::RankMeasurement m;
  m.step_times_s = {0.3};
  ref::StreamBusy b;
  b.compute_s = 0.25;
  b.checkpoint_out_s = 0.02;
  b.checkpoint_in_s = 0.03;
  m.busy = {b};
  m.checkpoint_bytes_to_host = m.checkpoint_bytes_from_host = 24 * 8192 * 1024 * 4.0;
  m.peak_allocated_bytes = m.peak_reserved_bytes = 1e9;
  run.ranks = {m, m};
  auto j = ref::measured_run_json(run, "x.model.json");
  EXPECT_EQ(j["strategy"]["offload_activations"], "cpu");
  EXPECT_EQ(j["strategy"]["recompute"], "full");
  EXPECT_EQ(j["name"], "zero3-ckpthost_L24-h1024_mb4x1");
  EXPECT_NE(j["stack"]["details"]["checkpoints"].get<std::string>().find("pinned host memory"), std::string::npos);
  const auto& r1 = j["stack"]["details"]["streams_per_rank"][1];
  EXPECT_DOUBLE_EQ(r1["checkpoint_out_busy_s"].get<double>(), 0.02);
  EXPECT_DOUBLE_EQ(r1["checkpoint_in_busy_s"].get<double>(), 0.03);
  EXPECT_DOUBLE_EQ(r1["checkpoint_bytes_to_host"].get<double>(), 24 * 8192 * 1024 * 4.0);
  run.options.checkpoints = ref::Checkpoints::GPU;
  j = ref::measured_run_json(run, "x.model.json");
  EXPECT_EQ(j["strategy"]["offload_activations"], "none");
  EXPECT_FALSE(j["stack"]["details"].contains("checkpoints"));
  EXPECT_FALSE(j["stack"]["details"]["streams_per_rank"][0].contains("checkpoint_bytes_to_host"));
}

TEST(ReferenceJson, StorageProbesAreRecordedPerRankAndStep) {
  ref::ReferenceRun run;
  run.options = ref::parse_reference_options(
      {"--out", "x", "--mode", "infinity", "--gpus", "2", "--storage-dir", "/tmp", "--storage-probe-chunks", "2"});
  for (int r = 0; r < 2; ++r) {
    ref::RankMeasurement m;
    m.step_times_s = {1.0, 1.1};
    m.busy.assign(2, ref::StreamBusy{});
    m.peak_allocated_bytes = m.peak_reserved_bytes = 1e9;
    const double chunk2 = 2.0 * 48 * 1048576;
    m.storage_probes = {{chunk2, chunk2, 0.5 + 0.1 * r}, {chunk2, chunk2, 0.25}};
    run.ranks.push_back(m);
  }
  const auto j = ref::measured_run_json(run, "x.model.json");
  const auto& p = j["stack"]["details"]["storage_probes"];
  EXPECT_EQ(p["chunks"], 2);
  EXPECT_DOUBLE_EQ(p["chunk_bytes"].get<double>(), 48.0 * 1048576);
  ASSERT_EQ(p["per_rank"].size(), 2u);
  ASSERT_EQ(p["per_rank"][1].size(), 2u);
  EXPECT_DOUBLE_EQ(p["per_rank"][1][0]["seconds"].get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(p["per_rank"][1][0]["read_GBps"].get<double>(), 2.0 * 48 * 1048576 / 0.6 / 1e9);
  EXPECT_DOUBLE_EQ(p["per_rank"][0][1]["write_GBps"].get<double>(), 2.0 * 48 * 1048576 / 0.25 / 1e9);
  EXPECT_DOUBLE_EQ(p["per_rank"][0][1]["bytes_written"].get<double>(), 2.0 * 48 * 1048576);
  // Without the flag there is no such key.
  run.options.storage_probe_chunks = 0;
  EXPECT_FALSE(ref::measured_run_json(run, "x.model.json")["stack"]["details"].contains("storage_probes"));
}

}  // namespace
}  // namespace trainsim::calibrate
