// Fuzzes the measured-run reader (planner/validate/measured_run.cpp, `trainsim validate --measured
// RUN`) and the two small documents it reads beside traces: the bytes as a measured run, as a
// trace's sidecar (`--sidecar`) and as a trace summary (profiler_trace.cpp,
// measured.trace_summary), each from a file through the strict reader under its limits
// (measured_json.hpp). The files a run names beside it (model.json, capture.json) exist, so an
// accepted run is read to its end; its step time and peaks must come out finite and positive.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fuzz_common.hpp"
#include "fuzz_files.hpp"
#include "measured_json.hpp"
#include "measured_run.hpp"
#include "profiler_trace.hpp"

namespace {

// A directory holding the files a run may name beside it, made once per process and removed at its
// exit.
class BesideDirectory {
 public:
  BesideDirectory() {
    char pattern[] = "/tmp/fuzz_measured_run.XXXXXX";
    if (mkdtemp(pattern) == nullptr) std::abort();
    path_ = pattern;
    for (const char* name : {"model.json", "capture.json", "trace.json", "summary.json", "profile.json"}) {
      std::ofstream(std::filesystem::path(path_) / name) << "{}";
    }
  }
  ~BesideDirectory() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const std::string& beside_directory() {
  static const BesideDirectory dir;
  return dir.path();
}

void expect_run(const trainsim::planner::MeasuredRun& r) {
  using trainsim::fuzz::violated;
  if (!trainsim::planner::ran_out_of_memory(r) && !r.from_trace && !(r.step_time_s > 0 && std::isfinite(r.step_time_s))) {
    violated("step_time_s", r.step_time_s);
  }
  for (const auto* peaks : {&r.peak_allocated_bytes, &r.peak_reserved_bytes}) {
    for (const double b : *peaks) {
      if (!(b > 0 && std::isfinite(b))) violated("peak bytes", b);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  const fuzz::MemoryFile file(fuzz::as_text(data, size));
  // How a directory of runs tells a run from a trace or another document, without building it.
  fuzz::guarded([&] { planner::is_measured_run_file(file.path()); });
  fuzz::guarded([&] { expect_run(planner::measured_run_from_json(planner::parse_measured_json(file.path()), beside_directory())); });
  fuzz::guarded([&] { expect_run(planner::measured_run_from_trace("step.trace.json", file.path(), "")); });
  fuzz::guarded([&] {
    const planner::TraceSummary t = planner::read_trace_summary(file.path());
    fuzz::expect_quantity("trace summary step_s", t.step_s);
  });
  return 0;
}
