// `trainsim validate` on runs that say whether they ran out of GPU memory (measured.oom, issue 39)
// and on runs that carry the capture of their layer ("capture"): an OOM row has one row, "fits",
// passing where trainsim predicts the configuration does not fit; a row said to have run gets the
// same row beside its usual ones; a row's own capture predicts it as --capture does. Bad input is a
// ConfigError naming the file and the key (exit 2, nothing written).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "validate_cli_support.hpp"

namespace trainsim::test {
namespace {

namespace fs = std::filesystem;
using namespace validate_cli;

// The committed single-GPU run (GPT, 24 layers of 1024, micro-batch 4 x 2048, on a 4 x H200 host)
// at micro-batch `mb`, its measured block replaced by an out-of-memory one.
void make_oom(nlohmann::json& j, int mb) {
  j["strategy"]["micro_batch"] = mb;
  j["strategy"]["global_batch"] = mb;
  j["measured"] = {{"oom", true}, {"oom_message", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.14 GiB"}};
}

// Every row of the summary, by run and metric.
std::map<std::pair<std::string, std::string>, nlohmann::json> rows_of(const nlohmann::json& summary) {
  std::map<std::pair<std::string, std::string>, nlohmann::json> rows;
  for (const auto& r : summary.at("rows")) rows[{r.at("name").get<std::string>(), r.at("metric").get<std::string>()}] = r;
  return rows;
}

std::size_t rows_of_run(const nlohmann::json& summary, const std::string& name) {
  std::size_t n = 0;
  for (const auto& r : summary.at("rows")) n += r.at("name") == name ? 1 : 0;
  return n;
}

// One directory of runs: the run as committed (no measured.oom: no fits row), said to have run
// ("oom": false), the same configuration marked out of memory (trainsim predicts it fits: the row
// fails), one 64 times its micro-batch (the memory model alone overflows: not replayed) and one at
// micro-batch 44 (the memory model near the limit: the replay's reserved peak, about 139 GiB against
// the 131.4 GiB an H200 of this profile may hold, decides).
TEST(ValidateOom, FitsRowsAgainstWhetherTheRunRanOutOfMemory) {
  ScratchDir dir;
  auto write = [&](const std::string& file, const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    copy_run(dir, [&](nlohmann::json& j) {
      j["name"] = name;
      edit(j);
    });
    fs::rename(dir.path() / "run.json", dir.path() / file);
  };
  write("as_committed.json", "as_committed", [](nlohmann::json&) {});
  write("ran.json", "ran", [](nlohmann::json& j) { j["measured"]["oom"] = false; });
  write("tiny_oom.json", "tiny_oom", [](nlohmann::json& j) { make_oom(j, 4); });
  write("huge_oom.json", "huge_oom", [](nlohmann::json& j) { make_oom(j, 256); });
  write("near_oom.json", "near_oom", [](nlohmann::json& j) { make_oom(j, 44); });
  write("ran_near.json", "ran_near", [](nlohmann::json& j) {
    j["strategy"]["micro_batch"] = 44;
    j["strategy"]["global_batch"] = 44;
    j["measured"]["oom"] = false;
  });

  const CommandResult r = run_trainsim("validate --measured " + q(dir.path().string()) + " --no-trace --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  auto rows = rows_of(summary);
  auto fits = [&](const std::string& name) -> const nlohmann::json& {
    const auto it = rows.find({name, "fits"});
    if (it == rows.end()) ADD_FAILURE() << name << " has no fits row";
    static const nlohmann::json none = {{"predicted", -1}, {"measured", -1}, {"within_tolerance", false}, {"note", ""}};
    return it == rows.end() ? none : it->second;
  };

  // Without the key: no fits row, the rows as before.
  EXPECT_FALSE(rows.count({"as_committed", "fits"}));
  EXPECT_TRUE(rows.count({"as_committed", "step_time"}));
  // Said to have run: its usual rows and a fits row, predicted to fit, passing.
  for (const char* metric : {"step_time", "peak_allocated", "peak_reserved"}) EXPECT_TRUE(rows.count({"ran", metric})) << metric;
  EXPECT_EQ(fits("ran")["predicted"], 1.0);
  EXPECT_EQ(fits("ran")["measured"], 1.0);
  EXPECT_TRUE(fits("ran")["within_tolerance"].get<bool>());
  EXPECT_EQ(fits("ran")["unit"], "boolean");

  // Out of memory: one row each, fits, measured 0.
  for (const char* name : {"tiny_oom", "huge_oom", "near_oom"}) {
    EXPECT_EQ(rows_of_run(summary, name), 1u) << name;
    EXPECT_EQ(fits(name)["measured"], 0.0) << name;
  }
  // The configuration that ran, marked out of memory: predicted to fit, so its row fails (+1).
  EXPECT_EQ(fits("tiny_oom")["predicted"], 1.0);
  EXPECT_FALSE(fits("tiny_oom")["within_tolerance"].get<bool>());
  EXPECT_EQ(fits("tiny_oom")["error_abs"], 1.0);
  // 64 times the micro-batch: the memory model's bytes overflow beyond its tolerance, nothing replayed.
  EXPECT_EQ(fits("huge_oom")["predicted"], 0.0);
  EXPECT_TRUE(fits("huge_oom")["within_tolerance"].get<bool>());
  const std::string huge_note = fits("huge_oom")["note"];
  EXPECT_NE(huge_note.find("the memory model puts"), std::string::npos) << huge_note;
  EXPECT_NE(huge_note.find("nothing is replayed"), std::string::npos) << huge_note;
  // Near the limit: the replay decides, and it overflows.
  EXPECT_EQ(fits("near_oom")["predicted"], 0.0);
  EXPECT_TRUE(fits("near_oom")["within_tolerance"].get<bool>());
  const std::string near_note = fits("near_oom")["note"];
  EXPECT_NE(near_note.find("the replay reserves"), std::string::npos) << near_note;
  EXPECT_NE(near_note.find("over the"), std::string::npos) << near_note;
  // The same configuration said to have run: predicted not to fit, so its fits row fails beside its
  // step-time row.
  EXPECT_EQ(fits("ran_near")["predicted"], 0.0);
  EXPECT_FALSE(fits("ran_near")["within_tolerance"].get<bool>());
  EXPECT_TRUE(rows.count({"ran_near", "step_time"}));

  // Each note gives the predicted peak and the GPU's capacity, and the rule.
  for (const char* name : {"ran", "tiny_oom", "huge_oom", "near_oom"}) {
    const std::string note = fits(name)["note"];
    EXPECT_NE(note.find(" GiB of HBM less "), std::string::npos) << name << ": " << note;
    EXPECT_NE(note.find("% headroom"), std::string::npos) << name << ": " << note;
    EXPECT_NE(note.find("planner/memory_fit.hpp"), std::string::npos) << name << ": " << note;
  }
  // The run's own record: what ran out and the allocator's message.
  bool found = false;
  for (const auto& run : summary.at("runs")) {
    if (run.at("name") != "huge_oom") continue;
    found = true;
    EXPECT_EQ(run.at("oom"), true);
    EXPECT_NE(run.at("oom_message").get<std::string>().find("CUDA out of memory"), std::string::npos);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(summary.at("stats").at("fits").at("all_rows").at("outside_tolerance"), 2);

  // The table and the report say the same; a known gap may list a fits row.
  const std::string gaps = dir.write(
      "gaps.json", R"({"schema_version": 1, "gaps": [{"metric": "fits", "names": ["tiny_oom"], "reason": "marked OOM by hand"}]})");
  ScratchDir report;
  const CommandResult text = run_trainsim("validate --measured " + q(dir.path().string()) + " --no-trace --known-gaps " + q(gaps) +
                                          " --report-dir " + q(report.path().string()));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("fits: 3 of 5 rows predicted as measured"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("outside (known gap)"), std::string::npos) << text.out;
  const std::string md = read_file((report.path() / "report.md").string());
  EXPECT_NE(md.find("## Whether it fits"), std::string::npos);
  EXPECT_NE(md.find("| huge_oom | fits | OOM | OOM | - | ok |"), std::string::npos) << md;
  EXPECT_NE(md.find("reason: marked OOM by hand"), std::string::npos);
}

// A report without measured.oom anywhere has no section on fitting (the committed report is checked
// byte for byte by measured_runs_test).
TEST(ValidateOom, NoFitsSectionWithoutTheKey) {
  ScratchDir dir, report;
  const std::string run = copy_run(dir, [](nlohmann::json&) {});
  const CommandResult r = run_trainsim("validate --measured " + q(run) + " --no-trace --report-dir " + q(report.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("fits"), std::string::npos) << r.out;
  EXPECT_EQ(read_file((report.path() / "report.md").string()).find("Whether it fits"), std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(read_file((report.path() / "summary.json").string())).at("stats").contains("fits"));
}

const std::string LLAMA_RUN = "reports/validation/measured/llama-h200x2/h200x1_single_llama_L16-h4096_mb1x2";
const std::string LLAMA_CAPTURE = "workloads/captures/llama_model_llama_py.recompute.json";

// The single-GPU Llama 3 8B run in `dir` (its model beside it, no trace), with `edit` applied, as run.json;
// the committed capture of its layer beside it as llama.capture.json.
std::string copy_llama_run(const ScratchDir& dir, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json run = read_source_json(LLAMA_RUN + ".json");
  run["measured"].erase("trace_summary");
  edit(run);
  dir.write("h200x1_single_llama_L16-h4096_mb1x2.model.json", read_file(source_path(LLAMA_RUN + ".model.json")));
  dir.write("llama.capture.json", read_file(source_path(LLAMA_CAPTURE)));
  return dir.write("run.json", run.dump(1));
}

// A row's own capture predicts it exactly as --capture predicts every row, and not as without one.
TEST(ValidateOom, ARowsOwnCaptureIsUsedAsCaptureWouldBe) {
  ScratchDir plain_dir, own_dir;
  const std::string plain = copy_llama_run(plain_dir, [](nlohmann::json&) {});
  const std::string own = copy_llama_run(own_dir, [](nlohmann::json& j) { j["capture"] = "llama.capture.json"; });
  auto summary = [](const std::string& args) {
    const CommandResult r = run_trainsim("validate " + args + " --format json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object({{"rows", nlohmann::json::array()}, {"runs", {{}}}});
  };
  const nlohmann::json with_flag = summary("--measured " + q(plain) + " --capture " + q((plain_dir.path() / "llama.capture.json").string()));
  const nlohmann::json with_own = summary("--measured " + q(own));
  const nlohmann::json without = summary("--measured " + q(plain));
  ASSERT_FALSE(with_own.at("rows").empty());
  EXPECT_EQ(with_own.at("rows"), with_flag.at("rows"));
  EXPECT_NE(with_own.at("rows"), without.at("rows"));
  // The runs' record names the capture each was predicted from (the file and a hash of its bytes).
  EXPECT_NE(with_own.at("runs").at(0).value("capture", "").find("llama.capture.json#"), std::string::npos) << with_own.at("runs");
  EXPECT_FALSE(without.at("runs").at(0).contains("capture"));
}

std::string measured(const ScratchDir& d, const std::function<void(nlohmann::json&)>& edit) {
  return "--measured " + q(copy_run(d, edit));
}

TEST(ValidateOom, BadOomAndCaptureKeysNameFileAndKeyExit2AndWriteNothing) {
  const std::vector<BadCase> cases = {
      {"oom not a boolean", [](const ScratchDir& d) { return measured(d, [](nlohmann::json& j) { j["measured"]["oom"] = "yes"; }); },
       {"run.json", "measured.oom", "true or false", "\"yes\""}},
      {"oom with a step time",
       [](const ScratchDir& d) {
         return measured(d, [](nlohmann::json& j) {
           make_oom(j, 4);
           j["measured"]["step_time_s"] = 0.1;
         });
       },
       {"run.json", "measured.step_time_s", "no other key in measured beside \"oom\": true"}},
      {"oom with peaks",
       [](const ScratchDir& d) {
         return measured(d, [](nlohmann::json& j) {
           make_oom(j, 4);
           j["measured"]["peak_allocated_bytes"] = {1e9};
         });
       },
       {"run.json", "measured.peak_allocated_bytes", "no other key"}},
      {"oom without its message",
       [](const ScratchDir& d) {
         return measured(d, [](nlohmann::json& j) {
           make_oom(j, 4);
           j["measured"].erase("oom_message");
         });
       },
       {"run.json", "measured.oom_message"}},
      {"oom message empty",
       [](const ScratchDir& d) {
         return measured(d, [](nlohmann::json& j) {
           make_oom(j, 4);
           j["measured"]["oom_message"] = "";
         });
       },
       {"run.json", "measured.oom_message", "the allocator's message"}},
      {"oom message not a string",
       [](const ScratchDir& d) {
         return measured(d, [](nlohmann::json& j) {
           make_oom(j, 4);
           j["measured"]["oom_message"] = 7;
         });
       },
       {"run.json", "measured.oom_message", "string"}},
      {"oom message without oom",
       [](const ScratchDir& d) { return measured(d, [](nlohmann::json& j) { j["measured"]["oom_message"] = "x"; }); },
       {"run.json", "measured.oom_message", "only beside \"oom\": true", "no measured.oom"}},
      {"oom message beside oom false",
       [](const ScratchDir& d) {
         return measured(d, [](nlohmann::json& j) {
           j["measured"]["oom"] = false;
           j["measured"]["oom_message"] = "x";
         });
       },
       {"run.json", "measured.oom_message", "\"oom\": false"}},
      {"oom false without a step time",
       [](const ScratchDir& d) {
         return measured(d, [](nlohmann::json& j) {
           j["measured"]["oom"] = false;
           j["measured"].erase("step_time_s");
         });
       },
       {"run.json", "measured.step_time_s"}},
      {"capture missing",
       [](const ScratchDir& d) { return measured(d, [](nlohmann::json& j) { j["capture"] = "absent.capture.json"; }); },
       {"run.json", "capture", "absent.capture.json", "no such file"}},
      {"capture a directory",
       [](const ScratchDir& d) {
         fs::create_directory(d.path() / "dir.capture.json");
         return measured(d, [](nlohmann::json& j) { j["capture"] = "dir.capture.json"; });
       },
       {"run.json", "capture", "not a regular file"}},
      {"capture not beside",
       [](const ScratchDir& d) { return measured(d, [](nlohmann::json& j) { j["capture"] = "../x.capture.json"; }); },
       {"run.json", "capture", "beside"}},
      {"capture not a string",
       [](const ScratchDir& d) { return measured(d, [](nlohmann::json& j) { j["capture"] = 3; }); },
       {"run.json", "capture", "string"}},
      {"capture and --capture",
       [](const ScratchDir& d) {
         const std::string args = "--measured " + q(copy_llama_run(d, [](nlohmann::json& j) { j["capture"] = "llama.capture.json"; }));
         return args + " --capture " + q(source_path(LLAMA_CAPTURE)) + " --report-dir " + q(d.path().string());
       },
       {"run.json", "capture", "either the run's own capture or --capture, not both", "llama.capture.json",
        "llama_model_llama_py.recompute.json"}},
      {"capture and --capture, a directory",
       [](const ScratchDir& d) {
         copy_llama_run(d, [](nlohmann::json& j) { j["capture"] = "llama.capture.json"; });
         return "--measured " + q(d.path().string()) + " --capture " + q(source_path(LLAMA_CAPTURE));
       },
       {"run.json", "capture", "not both"}},
      {"capture not a capture",
       [](const ScratchDir& d) {
         d.write("junk.capture.json", R"({"kind": "trainsim.capture", "schema_version": 9})");
         return measured(d, [](nlohmann::json& j) { j["capture"] = "junk.capture.json"; }) + " --report-dir " + q(d.path().string());
       },
       {"junk.capture.json", "schema_version"}},
  };
  expect_refused(cases, "--no-trace");
}

}  // namespace
}  // namespace trainsim::test
