// A profiler trace's summary (profiler_trace.hpp, kind "trainsim.trace_summary"): the extract the
// committed measured runs name instead of their traces. Written from a trace whose figures are
// worked here by hand, read back to the same doubles, and read strictly.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config_error.hpp"
#include "profiler_trace.hpp"
#include "test_support.hpp"

namespace trainsim::planner {
namespace {

// Timestamps in microseconds. GPU span 0..5000 us. Kernels: a GEMM 0-1000, a GEMM 500-2500, an
// all-reduce 2000-4000, a memcpy 4500-5000. ProfilerStep from -100 to 5100.
const char* const TRACE = R"json({"deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],
  "distributedInfo": {"rank": 0, "world_size": 4},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": -100, "dur": 5200},
    {"ph": "X", "cat": "kernel", "name": "nvjet_a", "ts": 0, "dur": 1000},
    {"ph": "X", "cat": "kernel", "name": "nvjet_b", "ts": 500, "dur": 2000},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "ts": 2000, "dur": 2000},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH", "ts": 4500, "dur": 500},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 10, "args": {"Total Allocated": 3000}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 20, "args": {"Total Allocated": 7000}}]})json";

TEST(TraceSummary, HoldsWhatTheTraceGivesAndReadsBackTheSameDoubles) {
  const test::ScratchDir dir;
  const TraceSummary t = read_profiler_trace(dir.write("step.trace.json", TRACE));
  // By hand: step 5200 us (the ProfilerStep); compute = GEMMs 0-2500 and the copy 4500-5000 = 3000
  // us; NCCL 2000 us; all GPU work 0-4000 and 4500-5000 = 4500 us, so exposed = 4500 - 3000.
  EXPECT_NEAR(t.step_s, 5200e-6, 1e-15);
  EXPECT_TRUE(t.step_from_profiler_step);
  EXPECT_NEAR(t.gpu_span_s, 5000e-6, 1e-15);
  EXPECT_NEAR(t.compute_busy_s, 3000e-6, 1e-15);
  EXPECT_NEAR(t.nccl_busy_s, 2000e-6, 1e-15);
  EXPECT_NEAR(t.exposed_communication_s, 1500e-6, 1e-15);
  EXPECT_NEAR(t.idle_fraction, 0.1, 1e-12);        // 500 of 5000 us with nothing on the GPU
  EXPECT_NEAR(t.no_compute_fraction, 0.4, 1e-12);  // 2000 of 5000 us without compute
  EXPECT_EQ(t.kernels, 3u);
  EXPECT_NEAR(t.gemm_kernel_s, 3000e-6, 1e-15);
  EXPECT_NEAR(t.nccl_kernel_s, 2000e-6, 1e-15);
  EXPECT_NEAR(t.copy_s, 500e-6, 1e-15);
  ASSERT_TRUE(t.peak_allocated_bytes.has_value());
  EXPECT_EQ(*t.peak_allocated_bytes, 7000.0);
  EXPECT_EQ(t.gpu, "NVIDIA H200");
  EXPECT_EQ(t.world_size, 4);

  const nlohmann::ordered_json j = trace_summary_json(t, "step.trace.json");
  EXPECT_EQ(j.at("kind"), "trainsim.trace_summary");
  EXPECT_EQ(j.at("source"), "step.trace.json");
  const TraceSummary back = read_trace_summary(dir.write("step.trace_summary.json", j.dump(1)));
  // Bit for bit, not within a tolerance: the validation rows must not move.
  EXPECT_EQ(back.step_s, t.step_s);
  EXPECT_EQ(back.step_from_profiler_step, t.step_from_profiler_step);
  EXPECT_EQ(back.gpu_span_s, t.gpu_span_s);
  EXPECT_EQ(back.compute_busy_s, t.compute_busy_s);
  EXPECT_EQ(back.nccl_busy_s, t.nccl_busy_s);
  EXPECT_EQ(back.exposed_communication_s, t.exposed_communication_s);
  EXPECT_EQ(back.idle_fraction, t.idle_fraction);
  EXPECT_EQ(back.no_compute_fraction, t.no_compute_fraction);
  EXPECT_EQ(back.kernels, t.kernels);
  EXPECT_EQ(back.gemm_kernel_s, t.gemm_kernel_s);
  EXPECT_EQ(back.attention_kernel_s, t.attention_kernel_s);
  EXPECT_EQ(back.other_kernel_s, t.other_kernel_s);
  EXPECT_EQ(back.optimizer_kernel_s, t.optimizer_kernel_s);
  EXPECT_EQ(back.nccl_kernel_s, t.nccl_kernel_s);
  EXPECT_EQ(back.copy_s, t.copy_s);
  EXPECT_EQ(back.peak_allocated_bytes, t.peak_allocated_bytes);
  EXPECT_EQ(back.gpu, t.gpu);
  EXPECT_EQ(back.world_size, t.world_size);
}

TEST(TraceSummary, WithoutMemoryEventsHasNoPeak) {
  const test::ScratchDir dir;
  const TraceSummary t = read_profiler_trace(
      dir.write("t.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 10}]})"));
  const nlohmann::ordered_json j = trace_summary_json(t, "t.json");
  EXPECT_FALSE(j.contains("peak_allocated_bytes"));
  EXPECT_FALSE(read_trace_summary(dir.write("s.json", j.dump())).peak_allocated_bytes.has_value());
}

// Each bad summary is refused with the file and the key in the message.
TEST(TraceSummary, IsReadStrictly) {
  const test::ScratchDir dir;
  const nlohmann::ordered_json good = trace_summary_json(read_profiler_trace(dir.write("step.trace.json", TRACE)), "step.trace.json");
  struct Case {
    const char* what;
    std::function<void(nlohmann::ordered_json&)> edit;
    std::string key;
  };
  const std::vector<Case> cases = {
      {"an unknown key", [](auto& j) { j["step_ms"] = 5.2; }, "step_ms"},
      {"a missing key", [](auto& j) { j.erase("gpu_span_s"); }, "gpu_span_s"},
      {"another kind", [](auto& j) { j["kind"] = "trainsim.measured_run"; }, "kind"},
      {"another version", [](auto& j) { j["schema_version"] = 2; }, "schema_version"},
      {"no source", [](auto& j) { j["source"] = ""; }, "source"},
      {"a fraction above 1", [](auto& j) { j["idle_fraction"] = 1.5; }, "idle_fraction"},
      {"a zero step", [](auto& j) { j["step_s"] = 0; }, "step_s"},
      {"a kernel class unknown", [](auto& j) { j["kernel_s"]["matmul"] = 1e-3; }, "kernel_s.matmul"},
      {"a class missing", [](auto& j) { j["kernel_s"].erase("nccl"); }, "kernel_s.nccl"},
      {"a string for a number", [](auto& j) { j["copy_s"] = "0.5"; }, "copy_s"},
      {"busy past the span", [](auto& j) { j["compute_busy_s"] = 6000e-6; }, "compute_busy_s"},
      {"no GPU activity", [](auto& j) { j["kernels"] = 0; j["copy_s"] = 0.0; }, "kernels"},
  };
  for (const Case& c : cases) {
    nlohmann::ordered_json j = good;
    c.edit(j);
    const std::string path = dir.write("bad.json", j.dump());
    try {
      read_trace_summary(path);
      ADD_FAILURE() << c.what << ": accepted";
    } catch (const ConfigError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(path), std::string::npos) << c.what << ": " << m;
      EXPECT_NE(m.find(c.key), std::string::npos) << c.what << ": " << m;
    }
  }
}

}  // namespace
}  // namespace trainsim::planner
