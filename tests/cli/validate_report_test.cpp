// `trainsim validate --report-dir`: the report's sections beside the rows: a run's launches, its
// host's steal, how host-bound its prediction is, what faulting pages would cost an offload run, and
// one configuration measured on several hosts.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "validate_cli_support.hpp"

namespace trainsim::test {
namespace {

namespace fs = std::filesystem;
using namespace validate_cli;

// A run timed in several launches (measured.launches) shows every launch beside its prediction, in
// the report's own section and in summary.json; a run without launches has no such section.
TEST(ValidateCli, LaunchesAreShownBesideThePrediction) {
  const nlohmann::json committed = read_source_json(RUN + ".json");
  ASSERT_EQ(committed.at("measured").at("launches").size(), 3U);
  ScratchDir with, without;
  ASSERT_EQ(run_trainsim("validate --measured " + q(copy_run(with, [](nlohmann::json&) {})) + " --no-trace --report-dir " +
                         q(with.path().string()))
                .exit_code,
            0);
  const std::string report = read_file(with.path() / "report.md");
  EXPECT_NE(report.find("## Rows measured in several launches"), std::string::npos);
  // Each launch's step in ms in launch order, then their median (the row's step).
  std::vector<std::string> launch_ms;
  for (const auto& l : committed.at("measured").at("launches")) launch_ms.push_back(fmt::format("{:.1f}", 1e3 * l.at("step_time_s").get<double>()));
  const std::string line = fmt::format("| h200x1_single_L24-h1024_mb4x2 | {} | {:.1f} |", fmt::join(launch_ms, ", "),
                                       1e3 * committed.at("measured").at("step_time_s").get<double>());
  EXPECT_NE(report.find(line), std::string::npos) << line << "\n" << report;
  const nlohmann::json summary = nlohmann::json::parse(read_file(with.path() / "summary.json"));
  EXPECT_EQ(summary.at("rows").at(0).at("metric"), "step_time");
  EXPECT_EQ(summary.at("rows").at(0).at("measured_launches").size(), 3U);
  ASSERT_EQ(run_trainsim("validate --measured " + q(copy_run(without, [](nlohmann::json& j) { j["measured"].erase("launches"); })) +
                         " --no-trace --report-dir " + q(without.path().string()))
                .exit_code,
            0);
  EXPECT_EQ(read_file(without.path() / "report.md").find("several launches"), std::string::npos);
}

// The host's steal over the timed steps (provenance.cpu_steal_fraction), where a run recorded it,
// stands beside its launches in the report (a column only then) and on its step-time row in
// summary.json.
TEST(ValidateCli, HostStealIsShownWhereTheRunRecordedIt) {
  ScratchDir with, without;
  const auto run_with = copy_run(with, [](nlohmann::json& j) { j["provenance"]["cpu_steal_fraction"] = 0.117; });
  ASSERT_EQ(run_trainsim("validate --measured " + q(run_with) + " --no-trace --report-dir " + q(with.path().string())).exit_code, 0);
  const std::string report = read_file(with.path() / "report.md");
  EXPECT_NE(report.find("| predicted within the launches | replay's host sensitivity | host's steal |"), std::string::npos) << report;
  EXPECT_NE(report.find(" 11.7% |\n"), std::string::npos) << report;
  const nlohmann::json summary = nlohmann::json::parse(read_file(with.path() / "summary.json"));
  EXPECT_DOUBLE_EQ(summary.at("rows").at(0).at("host_cpu_steal_fraction").get<double>(), 0.117);
  ASSERT_EQ(run_trainsim("validate --measured " + q(copy_run(without, [](nlohmann::json&) {})) + " --no-trace --report-dir " +
                         q(without.path().string()))
                .exit_code,
            0);
  EXPECT_EQ(read_file(without.path() / "report.md").find("steal"), std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(read_file(without.path() / "summary.json")).at("rows").at(0).contains("host_cpu_steal_fraction"));
}

// Each launch's steal (measured.launches[].cpu_steal_fraction) stands in launch order beside the
// launches, in place of the row's, and in summary.json (null where a launch did not record it).
TEST(ValidateCli, EachLaunchsHostStealIsShownInLaunchOrder) {
  ScratchDir d;
  const auto run = copy_run(d, [](nlohmann::json& j) {
    auto& l = j.at("measured").at("launches");
    l.at(0)["cpu_steal_fraction"] = 0.216;
    l.at(2)["cpu_steal_fraction"] = 0.011;
    j["provenance"]["cpu_steal_fraction"] = 0.5;  // the row's: not shown when its launches have theirs
  });
  ASSERT_EQ(run_trainsim("validate --measured " + q(run) + " --no-trace --report-dir " + q(d.path().string())).exit_code, 0);
  const std::string report = read_file(d.path() / "report.md");
  EXPECT_NE(report.find("| 21.6%, not recorded, 1.1% |\n"), std::string::npos) << report;
  EXPECT_EQ(report.find("50.0%"), std::string::npos) << report;
  const nlohmann::json row = nlohmann::json::parse(read_file(d.path() / "summary.json")).at("rows").at(0);
  EXPECT_EQ(row.at("measured_launches_host_cpu_steal_fraction"), nlohmann::json::parse("[0.216, null, 0.011]"));
}

// How host-bound each prediction is (summary.json's predicted_host_sensitivity, a column beside the
// launches): near 1 for a small FSDP2 step, whose replay waits on its host's dispatch, near 0 for
// the same model under DDP, whose GPU work hides its host; absent where the profile has no host
// dispatch figures to move.
TEST(ValidateCli, HostSensitivitySaysHowHostBoundThePredictionIs) {
  const auto sensitivity = [](const std::string& name) {
    ScratchDir d;
    const CommandResult r = run_trainsim("validate --measured " + q(source_path(GPT_RUNS + name + ".json")) + " --no-trace --report-dir " +
                                         q(d.path().string()));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(read_file(d.path() / "report.md").find("| replay's host sensitivity |"), std::string::npos);
    return nlohmann::json::parse(read_file(d.path() / "summary.json")).at("rows").at(0).at("predicted_host_sensitivity").get<double>();
  };
  EXPECT_GT(sensitivity("h200x2_fsdp2-zero2_L24-h1024_mb4x2"), 0.8);
  EXPECT_LT(sensitivity("h200x2_ddp_L24-h1024_mb4x2"), 0.1);
  ScratchDir none;
  const std::string run = copy_run(none, [](nlohmann::json&) {});
  nlohmann::json profile = read_source_json(GPT_RUNS + GPT_RUNS_PROFILE);
  profile.at("calibration").erase("host_dispatch");
  none.write(GPT_RUNS_PROFILE, profile.dump(1));
  ASSERT_EQ(run_trainsim("validate --measured " + q(run) + " --no-trace --report-dir " + q(none.path().string())).exit_code, 0);
  EXPECT_FALSE(nlohmann::json::parse(read_file(none.path() / "summary.json")).at("rows").at(0).contains("predicted_host_sensitivity"));
  EXPECT_EQ(read_file(none.path() / "report.md").find("host sensitivity"), std::string::npos);
}

// FSDP2's accumulating copies (workloads/stacks/training_stacks.md, "FSDP2"): beside the replay's step
// (resident pages) the report gives the step with every such copy below glibc's 32 MiB threshold
// faulting in, a second replay on the profile's pageable curve made so; its excess over the replay
// is, within 5%, the simulator's own note's sum of those copies' fault costs (two computations of
// one cost). A run without such copies has neither.
TEST(ValidateCli, OffloadRowsSayWhatFaultingPagesWouldCost) {
  ScratchDir d;
  const std::string run = "reports/validation/measured/gpt-small-offload/h200x2_fsdp2-offload_L24-h1024_mb4x2.json";
  const CommandResult r = run_trainsim("validate --measured " + q(source_path(run)) + " --no-trace --report-dir " + q(d.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json row = nlohmann::json::parse(read_file(d.path() / "summary.json")).at("rows").at(0);
  const double resident = row.at("predicted").get<double>(), faulting = row.at("predicted_with_pages_faulting").get<double>();
  const std::string report = read_file(d.path() / "report.md");
  EXPECT_NE(report.find("## FSDP2 offload: the accumulating copies' pages"), std::string::npos);
  const std::string said = "every page faults in: up to ";
  const auto at = report.find(said);
  ASSERT_NE(at, std::string::npos) << report;
  const double note_s = std::stod(report.substr(at + said.size())) / 1e3;
  EXPECT_GT(note_s, 0.1);
  EXPECT_NEAR(faulting - resident, note_s, 0.05 * note_s) << "resident " << resident << " faulting " << faulting;

  ScratchDir ddp;
  ASSERT_EQ(run_trainsim("validate --measured " + q(source_path(GPT_RUNS + "h200x2_ddp_L24-h1024_mb4x2.json")) + " --no-trace --report-dir " +
                         q(ddp.path().string()))
                .exit_code,
            0);
  EXPECT_FALSE(nlohmann::json::parse(read_file(ddp.path() / "summary.json")).at("rows").at(0).contains("predicted_with_pages_faulting"));
  EXPECT_EQ(read_file(ddp.path() / "report.md").find("accumulating copies' pages"), std::string::npos);
}

// One configuration run on two hosts (the same model, strategy and stack; each run costed on its own
// host's profile) gets the report's section on several hosts, both runs in it; one run alone, or two
// configurations on one host each, do not.
TEST(ValidateCli, ConfigurationOnSeveralHostsIsShownTogether) {
  const auto report_of = [](const ScratchDir& d, const ScratchDir& out) {
    const CommandResult r = run_trainsim("validate --measured " + q(d.path().string()) + " --no-trace --report-dir " + q(out.path().string()));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return read_file(out.path() / "report.md");
  };
  const std::string section = "## Configurations measured on several hosts";
  ScratchDir two, two_out;
  const std::string first = copy_run(two, [](nlohmann::json&) {});
  nlohmann::json again = nlohmann::json::parse(read_file(first));
  ASSERT_TRUE(again.contains("profile"));
  again["name"] = "h200x1_single_L24-h1024_mb4x2_elsewhere";
  again.erase("profile");  // costed on the built-in profile of its GPU: another host's calibration
  two.write("again.json", again.dump(1));
  const std::string report = report_of(two, two_out);
  const auto at = report.find(section);
  ASSERT_NE(at, std::string::npos) << report;
  const std::string part = report.substr(at, report.find("\n## ", at + 1) - at);
  EXPECT_NE(part.find("One configuration ran on more than one host"), std::string::npos) << part;
  EXPECT_NE(part.find("| h200x1_single_L24-h1024_mb4x2 | gpt-small-data-parallel-h200x2-host |"), std::string::npos) << part;
  EXPECT_NE(part.find("| h200x1_single_L24-h1024_mb4x2_elsewhere | "), std::string::npos) << part;

  ScratchDir other, other_out;  // a different configuration (two micro-batches more) on the other profile
  copy_run(other, [](nlohmann::json&) {});
  nlohmann::json bigger = again;
  bigger["strategy"]["global_batch"] = bigger["strategy"]["global_batch"].get<int>() * 2;
  other.write("bigger.json", bigger.dump(1));
  EXPECT_EQ(report_of(other, other_out).find(section), std::string::npos);
}

}  // namespace
}  // namespace trainsim::test
