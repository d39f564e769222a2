// Shared by the `trainsim validate` CLI tests (validate_cli_test.cpp: inputs, costing and bad
// input; validate_report_test.cpp: the report's sections): the committed runs they start from.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"

namespace trainsim::test::validate_cli {

inline const std::string CALL9 = "reports/validation/measured/call9-h200x4/";
inline const std::string RUN = CALL9 + "h200x1_single_L24-h1024_mb4x2";
inline const std::string CALL9_PROFILE = "h200x4-call9.profile.json";
inline const std::string CALL12 = "reports/validation/measured/call12-h200x4/";

inline std::string q(const std::string& s) { return "'" + s + "'"; }

// A copy of the committed single-GPU run (its model and the profile of its host beside it) in
// `dir`, with `edit` applied to its JSON.
inline std::string copy_run(const ScratchDir& dir, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json run = read_source_json(RUN + ".json");
  run["measured"]["trace"] = nullptr;
  edit(run);
  dir.write("h200x1_single_L24-h1024_mb4x2.model.json", read_file(source_path(RUN + ".model.json")));
  dir.write(CALL9_PROFILE, read_file(source_path(CALL9 + CALL9_PROFILE)));
  return dir.write("run.json", run.dump(1));
}

// The smallest Chrome trace with GPU activity: two kernels, one of them NCCL's.
inline const char* const TINY_TRACE =
    R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "sm90_gemm", "ts": 1000, "dur": 80000},)"
    R"( {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "ts": 60000, "dur": 50000}]})";

}  // namespace trainsim::test::validate_cli
