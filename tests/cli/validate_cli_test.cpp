// `trainsim validate`: one measured run, a profiler trace with its sidecar, the profile a run is
// costed on, and bad input (a clear error naming the file, the key and what was expected; exit 2;
// nothing written). The report's sections: validate_report_test.cpp.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <vector>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"
#include "validate_cli_support.hpp"

namespace trainsim::test {
namespace {

using namespace validate_cli;


TEST(ValidateCli, OneMeasuredRunPrintsSignedErrors) {
  const CommandResult r = run_trainsim("validate --measured " + q(source_path(RUN + ".json")) + " --no-trace");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("h200x1_single_L24-h1024_mb4x2"), std::string::npos);
  for (const char* metric : {"step_time", "peak_allocated", "peak_reserved"}) EXPECT_NE(r.out.find(metric), std::string::npos) << metric;
}

// Without --hw a run is costed on the first built-in profile of its GPU calibrated for PyTorch (host
// dispatch, flash attention, torch_* kernels). h200x2-measured holds the 2-GPU machine's host dispatch
// but not the kernels (reports/calibration/h200x2/host_dispatch/), so a 2-GPU H200 run stays on
// h200x4-measured rather than being costed with generic kernel rates.
TEST(ValidateCli, TwoGpuRunIsCostedOnTheProfileCalibratedForPytorch) {
  const nlohmann::json h2 = read_source_json("hwprofiles/h200x2-measured.json");
  ASSERT_TRUE(h2.at("calibration").contains("host_dispatch"));
  ASSERT_FALSE(h2.at("calibration").contains("attention"));
  const std::string run2 = "reports/validation/measured/h200x2/h200x2_ddp_L28-h4096_mb1x2.json";
  const CommandResult r = run_trainsim("validate --measured " + q(source_path(run2)) + " --no-trace --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("provenance").at("profiles"), nlohmann::json::array({"h200x4-measured"}));
}

// A run that names the profile of its own host ("profile", a file beside it) is costed there, and
// --hw still overrides it; without the key it takes the built-in default.
TEST(ValidateCli, RunIsCostedOnTheProfileItNames) {
  ASSERT_EQ(read_source_json(RUN + ".json").at("profile"), GPT_RUNS_PROFILE);
  auto profiles_of = [](const std::string& args) {
    const CommandResult r = run_trainsim("validate " + args + " --no-trace --format json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out).at("provenance").at("profiles") : nlohmann::json();
  };
  ScratchDir named, unnamed;
  EXPECT_EQ(profiles_of("--measured " + q(copy_run(named, [](nlohmann::json&) {}))), nlohmann::json::array({"gpt-small-data-parallel-h200x2-host"}));
  EXPECT_EQ(profiles_of("--measured " + q(copy_run(named, [](nlohmann::json&) {})) + " --hw h200x4-measured"),
            nlohmann::json::array({"h200x4-measured"}));
  EXPECT_EQ(profiles_of("--measured " + q(copy_run(unnamed, [](nlohmann::json& j) { j.erase("profile"); }))),
            nlohmann::json::array({"h200x4-measured"}));
}

TEST(ValidateCli, JsonHasTheSummarySchema) {
  const CommandResult r = run_trainsim("validate --measured " + q(source_path(RUN + ".json")) + " --no-trace --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("schema_version"), 1);
  EXPECT_EQ(j.at("provenance").at("profiles"), nlohmann::json::array({"gpt-small-data-parallel-h200x2-host"}));
  ASSERT_FALSE(j.at("rows").empty());
  for (const auto& row : j.at("rows")) {
    for (const char* key : {"name", "metric", "predicted", "measured", "error_pct"}) EXPECT_TRUE(row.contains(key)) << key;
  }
}

TEST(ValidateCli, TraceWithSidecar) {
  ScratchDir dir;
  dir.write("h200x1_single_L24-h1024_mb4x2.model.json", read_file(source_path(RUN + ".model.json")));
  const nlohmann::json run = read_source_json(RUN + ".json");
  nlohmann::json sidecar = {{"schema_version", 1},       {"kind", "trainsim.trace_sidecar"},
                            {"name", "tiny"},            {"model", "h200x1_single_L24-h1024_mb4x2.model.json"},
                            {"gpu", "NVIDIA H200"},      {"gpus", 1},
                            {"strategy", run["strategy"]}, {"stack", {{"name", "pytorch"}}}};
  const std::string side = dir.write("side.json", sidecar.dump());
  const std::string trace = dir.write("tiny.trace.json", TINY_TRACE);
  const CommandResult r = run_trainsim("validate --measured " + q(trace) + " --sidecar " + q(side) + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j.at("rows").empty());
  EXPECT_EQ(j["rows"][0]["name"], "tiny");
  EXPECT_EQ(j["rows"][0]["metric"], "step_time");
  EXPECT_NEAR(j["rows"][0]["measured"].get<double>(), 0.109, 1e-9);  // first kernel start to last kernel end
}

// A run that names its trace's summary (measured.trace_summary, written by --summarize-trace)
// validates to the same rows as the run naming the trace itself.
TEST(ValidateCli, TraceSummaryGivesTheRowsOfItsTrace) {
  ScratchDir with_trace, with_summary;
  const std::string trace = with_trace.write("tiny.trace.json", TINY_TRACE);
  const std::string by_trace = copy_run(with_trace, [](nlohmann::json& j) { j["measured"]["trace"] = "tiny.trace.json"; });
  const std::string summary = (with_summary.path() / "tiny.trace_summary.json").string();
  const CommandResult s = run_trainsim("validate --summarize-trace " + q(trace) + " -o " + q(summary));
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const nlohmann::json doc = nlohmann::json::parse(read_file(summary));
  EXPECT_EQ(doc.at("kind"), "trainsim.trace_summary");
  EXPECT_EQ(doc.at("source"), "tiny.trace.json");
  EXPECT_NEAR(doc.at("step_s").get<double>(), 0.109, 1e-12);                   // 1000 us to 110000 us
  EXPECT_NEAR(doc.at("exposed_communication_s").get<double>(), 0.029, 1e-12);  // NCCL alone 81000-110000 us
  const std::string by_summary = copy_run(with_summary, [](nlohmann::json& j) {
    j["measured"].erase("trace");
    j["measured"]["trace_summary"] = "tiny.trace_summary.json";
  });
  const CommandResult a = run_trainsim("validate --measured " + q(by_trace) + " --format json");
  const CommandResult b = run_trainsim("validate --measured " + q(by_summary) + " --format json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const nlohmann::json ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(ja.at("rows"), jb.at("rows"));
  EXPECT_EQ(ja.at("runs"), jb.at("runs"));
  // What the summary brought: rank 0's GEMM time, the tiny trace's 80000 us kernel.
  bool gemm = false;
  for (const auto& c : jb.at("runs").at(0).value("kernel_classes", nlohmann::json::array())) {
    if (c.at("class") == "GEMM") gemm = std::abs(c.at("measured_s").get<double>() - 0.08) < 1e-12;
  }
  EXPECT_TRUE(gemm) << "no GEMM time from the summary: " << b.out;
}

TEST(ValidateCli, TraceSummaryRefusals) {
  ScratchDir dir;
  const std::string both = copy_run(dir, [](nlohmann::json& j) {
    j["measured"]["trace"] = "a.trace.json.gz";
    j["measured"]["trace_summary"] = "a.trace_summary.json";
  });
  CommandResult r = run_trainsim("validate --measured " + q(both) + " --no-trace");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("run.json: measured.trace_summary: expected either trace or trace_summary"), std::string::npos) << r.err;
  const std::string missing = copy_run(dir, [](nlohmann::json& j) { j["measured"]["trace_summary"] = "absent.trace_summary.json"; });
  r = run_trainsim("validate --measured " + q(missing));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("absent.trace_summary.json"), std::string::npos) << r.err;
  const std::string trace = dir.write("tiny.trace.json", TINY_TRACE);
  r = run_trainsim("validate --summarize-trace " + q(trace) + " --hw h200x4-measured");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("only -o besides --summarize-trace"), std::string::npos) << r.err;
  r = run_trainsim("validate --summarize-trace " + q(trace) + " --measured " + q(missing));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("exactly one of --measured, --allocator-record and --summarize-trace"), std::string::npos) << r.err;
  r = run_trainsim("validate --summarize-trace " + q(dir.write("not.json", R"({"traceEvents": []})")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not.json: traceEvents"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// What the reference step (issue 11) adds to the schema: per-stream busy times and bytes moved.
TEST(ValidateCli, ReferenceStepBusyTimesAndBytes) {
  ScratchDir dir;
  const std::string run = copy_run(dir, [](nlohmann::json& j) {
    j["measured"]["busy"] = {{"compute_s", 0.12}, {"communication_s", 0.0}, {"exposed_communication_s", 0.0}, {"offload_io_s", 0.0},
                             {"optimizer_s", 0.003}, {"host_s", 0.1}, {"bubble_fraction", 0.0}};
    j["measured"]["bytes"] = {{"collective", 0}, {"p2p", 0}, {"host_to_device", 1e6}, {"device_to_host", 1e6}, {"nvme_read", 0}, {"nvme_write", 0}};
  });
  const CommandResult r = run_trainsim("validate --measured " + q(run) + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> metrics;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const auto& row : j.at("rows")) metrics.insert(row.at("metric").get<std::string>());
  EXPECT_TRUE(metrics.count("compute_busy"));
  EXPECT_TRUE(metrics.count("optimizer_busy"));
}

// Without a sidecar: the model and strategy from the flags, the GPU and its count from the trace.
TEST(ValidateCli, TraceWithFlags) {
  ScratchDir dir;
  const std::string trace = dir.write(
      "flags.trace.json",
      R"({"deviceProperties": [{"id": 0, "name": "NVIDIA H200"}], "distributedInfo": {"rank": 0, "world_size": 2},)"
      R"( "traceEvents": [{"ph": "X", "cat": "kernel", "name": "sm90_gemm", "ts": 0, "dur": 150000}]})");
  const CommandResult r = run_trainsim("validate --measured " + q(trace) + " --model " + q(source_path(RUN + ".model.json")) +
                                       " --gpus 2 --micro-batch 4 --global-batch 16 --stack pytorch-ddp --precision bf16-mixed "
                                       "--seq 2048 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("provenance").at("profiles"), nlohmann::json::array({"h200x4-measured"}));
  EXPECT_EQ(j.at("rows").at(0).at("name"), "flags");
  EXPECT_NEAR(j.at("rows").at(0).at("measured").get<double>(), 0.15, 1e-9);
}

// The storage of the machine a run ran on (machine_storage) replaces the profile's for that run,
// and the step-time row says so. A reference storage-offload row (its own machine_storage taken
// out), its disk a quarter as fast to write.
TEST(ValidateCli, MachineStorageReplacesTheProfilesForThatRun) {
  const std::string row = "reports/validation/reference/h200x2/h200x2_ref-infinity-storage_L24-h1024_mb4x2";
  ScratchDir dir;
  nlohmann::json run = read_source_json(row + ".json");
  run.erase("machine_storage");
  dir.write("h200x2_ref-infinity-storage_L24-h1024_mb4x2.model.json", read_file(source_path(row + ".model.json")));
  const std::string plain = dir.write("plain.json", run.dump(1));
  auto step = [](const std::string& path, nlohmann::json* step_row) {
    const CommandResult r = run_trainsim("validate --measured " + q(path) + " --no-trace --format json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    for (const auto& e : j.at("rows")) {
      if (e.at("metric") == "step_time") {
        *step_row = e;
        return e.at("predicted").get<double>();
      }
    }
    return 0.0;
  };
  nlohmann::json plain_row, own_row;
  const double at_profile = step(plain, &plain_row);
  EXPECT_FALSE(plain_row.contains("storage_basis"));
  // h200x4-measured's storage is 2.429 read, 3.176 write: the reference's chunks keep a read and a
  // write in flight, so the step follows the slower of the two; writing at a quarter of the
  // profile's rate makes the writes (4.3 GB) the slower by far.
  run["machine_storage"] = {{"read_GBps", 2.429}, {"write_GBps", 0.794}, {"source", "a test"}};
  const std::string own = dir.write("own.json", run.dump(1));
  const double at_own = step(own, &own_row);
  EXPECT_GT(at_own, at_profile + 1.0) << "the run's own storage must replace the profile's";
  ASSERT_TRUE(own_row.contains("storage_basis"));
  const std::string basis = own_row.at("storage_basis").get<std::string>();
  EXPECT_NE(basis.find("write 0.794 GB/s"), std::string::npos) << basis;
  EXPECT_NE(basis.find("a test"), std::string::npos) << basis;
  EXPECT_NE(basis.find("h200x4-measured's 2.429 / 3.176"), std::string::npos) << basis;
  const CommandResult text = run_trainsim("validate --measured " + q(own) + " --no-trace");
  EXPECT_NE(text.out.find("storage: the machine it ran on, read 2.429 GB/s, write 0.794 GB/s"), std::string::npos) << text.out;
  // Its machine's mixed read+write figure too: the reference's chunks overlap a read with a write,
  // which the figure caps (the L32 row's own read/write figures are in the file; its own mixed
  // figure is taken out first, so the first replay moves reads and writes on separate channels).
  const std::string big = "reports/validation/reference/h200x2/h200x2_ref-infinity-storage_L32-h2560_mb1x2";
  nlohmann::json l32 = read_source_json(big + ".json");
  l32["machine_storage"].erase("mixed_read_GBps");
  l32["machine_storage"].erase("mixed_write_GBps");
  dir.write("h200x2_ref-infinity-storage_L32-h2560_mb1x2.model.json", read_file(source_path(big + ".model.json")));
  nlohmann::json separate_row, mixed_row;
  const double separate = step(dir.write("l32.json", l32.dump(1)), &separate_row);
  l32["machine_storage"]["mixed_read_GBps"] = 1.1;
  l32["machine_storage"]["mixed_write_GBps"] = 1.1;
  const double capped = step(dir.write("l32_mixed.json", l32.dump(1)), &mixed_row);
  EXPECT_GT(capped, separate + 1.0) << "the run's mixed figure must cap its overlapping reads and writes";
  EXPECT_NE(mixed_row.at("storage_basis").get<std::string>().find("reads and writes at once 1.100 + 1.100 GB/s"), std::string::npos)
      << mixed_row.at("storage_basis");
}

// A pipeline run's busy.definition picks what the replay's bubble counts as busy: "call_spans"
// (CUDA events around the stack's calls: a GPU waiting for its host inside a call is busy) or
// "kernels" (the default: the GPU running work). The committed 2-GPU pipeline runs time calls.
TEST(ValidateCli, PipelineBubbleCountsBusyAsTheRunDefinesIt) {
  const std::string run2 = PIPELINE_RUNS + "h200x2_pipe-gpipe_L24-h1024_mb2x4";
  nlohmann::json run = read_source_json(run2 + ".json");
  ASSERT_EQ(run.at("measured").at("busy").at("definition"), "call_spans");
  run["measured"].erase("trace_summary");
  // Costed on the GPT_RUNS host, whose pipeline dispatch is slower than its GPU work (host-bound
  // calls). On the run's own faster host the order reverses (0.360 by call spans against 0.314
  // by kernels, whose busy time holds the receives' kernels waiting for their sends): what this
  // test checks needs calls bound by their host.
  run["profile"] = GPT_RUNS_PROFILE;
  auto bubble_of = [&](const char* definition) {
    ScratchDir dir;
    nlohmann::json r = run;
    r["measured"]["busy"]["definition"] = definition;
    dir.write("h200x2_pipe-gpipe_L24-h1024_mb2x4.model.json", read_file(source_path(run2 + ".model.json")));
    dir.write(GPT_RUNS_PROFILE, read_file(source_path(GPT_RUNS + GPT_RUNS_PROFILE)));
    const CommandResult out = run_trainsim("validate --measured " + q(dir.write("run.json", r.dump(1))) + " --no-trace --format json");
    EXPECT_EQ(out.exit_code, 0) << out.err;
    const nlohmann::json summary = nlohmann::json::parse(out.out);
    for (const auto& row : summary.at("rows")) {
      if (row.at("metric") == "bubble_fraction") return row.at("predicted").get<double>();
    }
    ADD_FAILURE() << "no bubble row";
    return -1.0;
  };
  const double spans = bubble_of("call_spans"), kernels = bubble_of("kernels");
  // Host-bound: the calls cover much of what the kernels leave idle (a GPU waiting inside a call
  // for its host to issue the next kernel is busy by call spans, idle by kernels): 0.321 against 0.382.
  EXPECT_LT(spans, kernels - 0.05) << spans << " against " << kernels;
  EXPECT_GT(spans, 0.0);
}


TEST(ValidateCli, BadInputNamesFileKeyAndExpectationExits2AndWritesNothing) {
  const std::vector<BadCase> cases = {
      {"no such file", [](const ScratchDir& d) { return "--measured " + q((d.path() / "absent.json").string()); }, {"absent.json", "--measured", "no such file"}},
      {"a device", [](const ScratchDir&) { return std::string("--measured /dev/zero"); }, {"/dev/zero", "not a regular file"}},
      {"unknown key",
       [](const ScratchDir& d) { return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["measured"]["bogus_s"] = 1; })); },
       {"run.json", "measured.bogus_s"}},
      {"wrong type",
       [](const ScratchDir& d) { return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["measured"]["step_time_s"] = "fast"; })); },
       {"run.json", "measured.step_time_s", "seconds"}},
      {"wrong kind",
       [](const ScratchDir& d) { return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["kind"] = "something.else"; })); },
       {"run.json", "kind", "trainsim.measured_run"}},
      {"peaks per rank disagree",
       [](const ScratchDir& d) {
         return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["measured"]["peak_reserved_bytes"].push_back(1e9); }));
       },
       {"run.json", "measured.peak_reserved_bytes", "one peak per rank"}},
      // A measured run names a stack a real run runs: the idealized one is the papers' accounting.
      {"unknown stack",
       [](const ScratchDir& d) { return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["stack"]["name"] = "jax"; })); },
       {"run.json", "stack.name", "one of megatron, deepspeed, deepspeed-0.3, pytorch, pytorch-ddp", "trainsim-reference", "\"jax\""}},
      {"idealized stack",
       [](const ScratchDir& d) { return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["stack"]["name"] = "idealized"; })); },
       {"run.json", "stack.name", "\"idealized\""}},
      {"unknown busy key",
       [](const ScratchDir& d) { return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["measured"]["busy"] = {{"gpu_s", 1}}; })); },
       {"run.json", "measured.busy.gpu_s"}},
      {"unknown busy definition",
       [](const ScratchDir& d) {
         return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["measured"]["busy"] = {{"definition", "events"}}; }));
       },
       {"run.json", "measured.busy.definition", "call_spans"}},
      {"bubble out of range",
       [](const ScratchDir& d) {
         return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["measured"]["busy"] = {{"bubble_fraction", 1.5}}; }));
       },
       {"run.json", "measured.busy.bubble_fraction", "a fraction in [0, 1]"}},
      {"host steal out of range",
       [](const ScratchDir& d) {
         return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["provenance"]["cpu_steal_fraction"] = -0.1; }));
       },
       {"run.json", "provenance.cpu_steal_fraction", "a fraction in [0, 1]", "-0.1"}},
      {"host steal not a number",
       [](const ScratchDir& d) {
         return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["provenance"]["cpu_steal_fraction"] = "4%"; }));
       },
       {"run.json", "provenance.cpu_steal_fraction", "a fraction in [0, 1]"}},
      {"launch's host steal out of range",
       [](const ScratchDir& d) {
         return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["measured"]["launches"][1]["cpu_steal_fraction"] = 1.5; }));
       },
       {"run.json", "measured.launches[1].cpu_steal_fraction", "a fraction in [0, 1]", "1.5"}},
      {"machine storage not positive",
       [](const ScratchDir& d) {
         return "--measured " + q(copy_run(d, [](nlohmann::json& j) {
                  j["machine_storage"] = {{"read_GBps", 0}, {"write_GBps", 2.5}, {"source", "s"}};
                }));
       },
       {"run.json", "machine_storage.read_GBps", "GB/s in (0, 1e4]"}},
      {"machine storage unknown key",
       [](const ScratchDir& d) {
         return "--measured " + q(copy_run(d, [](nlohmann::json& j) {
                  j["machine_storage"] = {{"read_GBps", 2.7}, {"write_GBps", 2.5}, {"source", "s"}, {"iops", 1}};
                }));
       },
       {"run.json", "machine_storage.iops"}},
      {"machine storage mixed figure alone",
       [](const ScratchDir& d) {
         return "--measured " + q(copy_run(d, [](nlohmann::json& j) {
                  j["machine_storage"] = {{"read_GBps", 2.7}, {"write_GBps", 2.5}, {"mixed_read_GBps", 1.1}, {"source", "s"}};
                }));
       },
       {"run.json", "machine_storage.mixed_write_GBps", "together"}},
      {"machine storage without source",
       [](const ScratchDir& d) {
         return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["machine_storage"] = {{"read_GBps", 2.7}, {"write_GBps", 2.5}}; }));
       },
       {"run.json", "machine_storage.source"}},
      {"row not the median launch",
       [](const ScratchDir& d) {
         return "--measured " + q(copy_run(d, [](nlohmann::json& j) {
           for (auto& l : j["measured"]["launches"]) l["step_time_s"] = l["step_time_s"].get<double>() + 1.0;
         }));
       },
       {"run.json", "measured.step_time_s", "the median of measured.launches' step_time_s"}},
      {"even number of launches",
       [](const ScratchDir& d) { return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["measured"]["launches"].erase(2); })); },
       {"run.json", "measured.launches", "an odd number of launches"}},
      {"unknown launch key",
       [](const ScratchDir& d) {
         return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["measured"]["launches"][0]["host"] = "vm"; }));
       },
       {"run.json", "measured.launches[0].host"}},
      {"profile not beside",
       [](const ScratchDir& d) { return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["profile"] = "../host.profile.json"; })); },
       {"run.json", "profile", "beside"}},
      {"model a device",
       [](const ScratchDir& d) {
         std::filesystem::create_symlink("/dev/zero", d.path() / "zero.model.json");
         return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["model"] = "zero.model.json"; }));
       },
       {"zero.model.json", "a readable regular file", "character device"}},
      {"model a directory",
       [](const ScratchDir& d) {
         std::filesystem::create_directory(d.path() / "dir.model.json");
         return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["model"] = "dir.model.json"; }));
       },
       {"dir.model.json", "a readable regular file", "directory"}},
      {"two runs of one name in a directory",
       [](const ScratchDir& d) {
         const std::string first = copy_run(d, [](nlohmann::json&) {});
         d.write("again.json", read_file(first));
         return "--measured " + q(d.path().string());
       },
       {"run.json", "name", "a name no other measured run", "again.json", "h200x1_single_L24-h1024_mb4x2"}},
      {"profile the parent directory",
       [](const ScratchDir& d) { return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["profile"] = ".."; })); },
       {"run.json", "profile", "beside"}},
      {"profile missing",
       [](const ScratchDir& d) { return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["profile"] = "absent.profile.json"; })); },
       {"absent.profile.json"}},
      {"model not beside",
       [](const ScratchDir& d) { return "--measured " + q(copy_run(d, [](nlohmann::json& j) { j["model"] = "../x/model.json"; })); },
       {"run.json", "model", "beside"}},
      {"trace alone", [](const ScratchDir& d) { return "--measured " + q(d.write("t.json", TINY_TRACE)); }, {"--measured", "--sidecar"}},
      {"trace not JSON", [](const ScratchDir& d) { return "--measured " + q(d.write("t.json.gz", "not gzip, not json")) + " --model gpt2-1.5b"; },
       {"t.json.gz", "Chrome trace"}},
      {"trace with a negative duration",
       [](const ScratchDir& d) {
         return "--measured " + q(d.write("t.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "nvjet_x", "ts": 1, "dur": -5}]})")) +
                " --model gpt2-1.5b";
       },
       {"t.json", "traceEvents[0].dur", "a duration from 0 to", "got -5"}},
      {"trace with a duration of 1e308",
       [](const ScratchDir& d) {
         return "--measured " + q(d.write("t.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1e308}]})")) +
                " --model gpt2-1.5b";
       },
       {"t.json", "traceEvents[0].dur", "a duration from 0 to", "got 1e+308"}},
      {"trace without GPU activity",
       [](const ScratchDir& d) { return "--measured " + q(d.write("t.json", R"({"traceEvents": []})")) + " --model gpt2-1.5b"; },
       {"t.json", "traceEvents", "GPU activity"}},
      {"known gap naming no row",
       [](const ScratchDir& d) {
         const std::string gaps = d.write(
             "gaps.json", R"({"schema_version": 1, "gaps": [{"metric": "step_time", "names": ["nope"], "reason": "r"}]})");
         return "--measured " + q(copy_run(d, [](nlohmann::json&) {})) + " --known-gaps " + q(gaps) + " --report-dir " + q(d.path().string());
       },
       {"gaps.json", "gaps.names", "nope"}},
      {"known gap without reason",
       [](const ScratchDir& d) {
         const std::string gaps =
             d.write("gaps.json", R"({"schema_version": 1, "gaps": [{"metric": "step_time", "names": ["x"], "reason": ""}]})");
         return "--measured " + q(copy_run(d, [](nlohmann::json&) {})) + " --known-gaps " + q(gaps) + " --report-dir " + q(d.path().string());
       },
       {"gaps.json", "gaps[0].reason"}},
      {"known gap listing a run twice",
       [](const ScratchDir& d) {
         const std::string gaps = d.write("gaps.json", R"({"schema_version": 1, "gaps": [)"
                                                       R"({"metric": "step_time", "names": ["a"], "reason": "r"},)"
                                                       R"({"metric": "step_time", "names": ["b", "a"], "reason": "s"}]})");
         return "--measured " + q(copy_run(d, [](nlohmann::json&) {})) + " --known-gaps " + q(gaps) + " --report-dir " + q(d.path().string());
       },
       {"gaps.json: gaps[1].names[1]: expected each run listed once per metric (step_time of it is listed at gaps[0].names[0])",
        "got \"a\" again"}},
      {"report dir missing",
       [](const ScratchDir& d) { return "--measured " + q(copy_run(d, [](nlohmann::json&) {})) + " --report-dir " + q((d.path() / "no").string()); },
       {"--report-dir", "an existing directory"}},
  };
  expect_refused(cases, "--no-trace");
}

}  // namespace
}  // namespace trainsim::test
