#pragma once
// The framework driver (calibrate/framework/, Python): the PyTorch parts of a calibration. This
// side finds it, asks whether PyTorch with CUDA is there, which parts it has and what they cost,
// runs the chosen ones, and turns their raw results into profile sections (the driver's
// `sections`, which is where the merge scripts' logic went).
//
// The interpreter is TRAINSIM_CALIBRATE_PYTHON (default python3 on the PATH); the package is
// found in TRAINSIM_CALIBRATE_FRAMEWORK (a directory holding framework/), else beside the binary
// (BIN/../calibrate, the layout of a build folder in the repository), else in the source tree the
// binary was built from.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "options.hpp"

namespace trainsim::calibrate {

struct FrameworkProbe {
  bool available = false;
  std::string why_not;  // one line: why the framework parts cannot run here
  nlohmann::ordered_json facts;  // torch, cuda, gpu as the driver said them
};

struct FrameworkPartInfo {
  std::string name, what;
  std::vector<double> seconds;  // cumulative estimated seconds at 1, 2, ... sizes (the mode's sizes)
};

struct FrameworkCatalog {
  double startup_seconds = 0;
  std::vector<FrameworkPartInfo> parts;
};

class FrameworkDriver {
 public:
  // Where the driver is (see above); never fails: a missing one shows in probe().
  static FrameworkDriver locate();

  std::string describe() const;  // "python3 -m framework (in DIR)"
  FrameworkProbe probe() const;
  FrameworkCatalog catalog(Mode mode) const;  // throws CalibrationError on a malformed answer
  // Runs `selection` (part name, sizes) in order, writing DIR/<part>.json as each finishes;
  // `on_event` gets each event line the driver prints (JSON).
  ChildResult run(const std::string& dir, Mode mode, const std::vector<std::pair<std::string, int>>& selection,
                  const std::function<void(const nlohmann::json&)>& on_event, std::optional<double> seconds_left) const;
  // The profile sections of the framework raw results {part: document}; throws CalibrationError
  // (the driver cannot run) or UsageError on `where` (the documents are not the driver's).
  // `bf16_peak_TFLOPs`: the profile's bf16 peak, which the in-step GEMM efficiencies are relative to
  // (0: unknown, and the section that needs it is left out with a note).
  nlohmann::ordered_json sections(const nlohmann::ordered_json& parts, const std::string& where,
                                  double bf16_peak_TFLOPs = 0) const;

 private:
  std::string python_;
  std::string package_dir_;  // holds framework/
  ChildRun command(std::vector<std::string> args) const;
};

}  // namespace trainsim::calibrate
