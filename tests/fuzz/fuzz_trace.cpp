// Fuzzes the profiler-trace reader (planner/validate/profiler_trace.cpp, `trainsim validate
// --measured TRACE`), which streams a file under its limits: the bytes as a file (plain, or gzip
// when they start with gzip's magic) and the same bytes gzipped. An accepted trace's summary must
// be finite: times non-negative, shares in [0, 1], a step longer than zero.
#include <cmath>

#include "fuzz_common.hpp"
#include "fuzz_files.hpp"
#include "profiler_trace.hpp"

namespace {

void expect_share(const char* what, double value) {
  if (!(value >= 0 && value <= 1)) trainsim::fuzz::violated(what, value);
}

void expect_summary(const trainsim::planner::TraceSummary& t) {
  using trainsim::fuzz::expect_quantity;
  if (!(t.step_s > 0) || !std::isfinite(t.step_s)) trainsim::fuzz::violated("step_s", t.step_s);
  for (const auto& [what, v] : {std::pair{"gpu_span_s", t.gpu_span_s}, {"compute_busy_s", t.compute_busy_s},
                                {"nccl_busy_s", t.nccl_busy_s}, {"exposed_communication_s", t.exposed_communication_s},
                                {"gemm_kernel_s", t.gemm_kernel_s}, {"attention_kernel_s", t.attention_kernel_s},
                                {"other_kernel_s", t.other_kernel_s}, {"optimizer_kernel_s", t.optimizer_kernel_s},
                                {"nccl_kernel_s", t.nccl_kernel_s}, {"copy_s", t.copy_s}}) {
    expect_quantity(what, v);
  }
  expect_share("idle_fraction", t.idle_fraction);
  expect_share("no_compute_fraction", t.no_compute_fraction);
  if (t.peak_allocated_bytes) expect_quantity("peak_allocated_bytes", *t.peak_allocated_bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  fuzz::read_plain_and_gzipped(fuzz::as_text(data, size),
                               [](const std::string& path) { expect_summary(planner::read_profiler_trace(path)); });
  return 0;
}
