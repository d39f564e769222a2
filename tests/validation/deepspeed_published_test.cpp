// Validation against DeepSpeed's published throughput (reports/validation/deepspeed_published/):
// every point of points.json (ZeRO-Offload, ZeRO-Infinity, DeepSpeed's Azure runs; each with its
// paper, figure, configuration and the assumptions its replay needs) is replayed with
// `trainsim simulate --stack deepspeed` on the profile of the machine that ran it, and its TFLOP/s
// per GPU compared with the published one. A point must be within 15% unless known_gaps.json lists
// it with its reason; a listed point that comes within 15% fails too (remove it from the list).
// report.md and results.json beside the points are regenerated and compared
// (TRAINSIM_UPDATE_REPORTS=1 rewrites them). No constant is fitted to any point: a source whose
// code base's compute rate is known only from a run outside the points (`compute_fit`: the run, the
// efficiency it gives the profile's GEMMs) replays on its profile with that efficiency, and the fit
// is checked to reproduce its own row.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <vector>

#include "test_support.hpp"

namespace trainsim {
namespace {

constexpr double TOLERANCE = 0.15;
const std::string DIR = "reports/validation/deepspeed_published/";

struct Replayed {
  bool fits = false;
  std::string reason;  // why it cannot run, when it cannot
  double tflops = 0, step_s = 0;
};

// The profile of a source with a compute fit: its profile with every GEMM at the fitted efficiency
// (one entry of calibration.gemm: the nearest entry is the only one), at `peak_TFLOPs` where given
// (the fit row's machine). Written into `dir`; returns the path.
std::string fitted_profile(const nlohmann::json& source, const test::ScratchDir& dir, double peak_TFLOPs = 0) {
  auto profile = test::read_source_json("hwprofiles/" + source["profile"].get<std::string>() + ".json");
  const auto& fit = source["compute_fit"];
  profile["calibration"]["gemm"] = nlohmann::json::array(
      {{{"precision", "fp16"}, {"m", 4096.0}, {"n", 4096.0}, {"k", 4096.0}, {"efficiency", fit["gemm_efficiency"]}}});
  std::string name = profile["name"].get<std::string>() + "-fitted";
  if (peak_TFLOPs > 0) {
    profile["gpu"]["peak_TFLOPs"]["fp16"] = peak_TFLOPs;
    name += "-fit-row";
  }
  profile["name"] = name;
  return dir.write(name + ".json", profile.dump(2));
}

// The run as DeepSpeed's Megatron-LM launched it: the model and tensor parallelism through
// Megatron-LM's arguments, the point's ds_config where its assumptions give one, else the source's
// where it published one (`ds_config`: a file path, or empty), ZeRO and its offloads through
// trainsim's flags, the stack, on `hw` (the point's
// profile, or its source's fitted one). The published run ran, so it fits when the replay's
// reserved peak is within the usable memory: no headroom (the planner's 5% is a margin for
// configurations nobody has run; the replay's reserved peak is within a few percent of measured
// ones, reports/validation/report.md, peak_reserved).
std::string command_of(const nlohmann::json& p, const std::string& stack, const std::string& ds_config, const std::string& hw) {
  const auto& m = p["model"];
  const int gpus = p["gpus"], tp = p["tp"], micro = p["micro_batch"], accum = p["grad_accum"];
  const int global = micro * accum * (gpus / tp);
  std::string args = fmt::format(
      "--tensor-model-parallel-size {} --num-layers {} --hidden-size {} --num-attention-heads {} --seq-length {} "
      "--max-position-embeddings {} --vocab-size {} --micro-batch-size {} --global-batch-size {} --fp16 "
      "--checkpoint-activations",
      tp, m["layers"].get<int>(), m["hidden"].get<int>(), m["heads"].get<int>(), m["seq"].get<int>(),
      m["seq"].get<int>(), m["vocab"].get<int>(), micro, global);
  return fmt::format(
      "simulate --hw {} --gpus {} --megatron-args \"{}\"{} --stack {} --zero {} --offload-params {} "
      "--offload-optimizer {} --offload-activations {} --memory-headroom 0 --format json",
      hw, gpus, args, ds_config.empty() ? "" : " --deepspeed " + ds_config, stack, p["zero"].get<int>(), p["offload_params"].get<std::string>(),
      p["offload_optimizer"].get<std::string>(), p["checkpoints"] == "cpu" ? "cpu" : "none");
}

Replayed replay(const nlohmann::json& p, const std::string& stack, const std::string& ds_config, const std::string& hw) {
  const auto out = test::run_trainsim(command_of(p, stack, ds_config, hw));
  Replayed r;
  if (out.exit_code != 0) {
    // A configuration the stack refuses (exit 2 with its reason): the first line of the error.
    EXPECT_EQ(out.exit_code, 2) << p["name"] << ": " << out.err;
    r.reason = out.err.substr(0, out.err.find('\n'));
    if (const auto at = r.reason.find("error: "); at != std::string::npos) r.reason = "refused: " + r.reason.substr(at + 7);
    return r;
  }
  const auto j = nlohmann::json::parse(out.out);
  r.fits = j["fits"].get<bool>();
  if (!r.fits) {
    r.reason = j["infeasible_reason"].is_string() ? j["infeasible_reason"].get<std::string>() : "does not fit";
    return r;
  }
  r.tflops = j["hardware_tflops_per_gpu"].get<double>();
  r.step_s = j["step_time_s"].get<double>();
  return r;
}

std::string strategy_of(const nlohmann::json& p) {
  std::string s = fmt::format("ZeRO-{}", p["zero"].get<int>());
  if (p["offload_params"] != "none") s += fmt::format(", params {}", p["offload_params"].get<std::string>());
  if (p["offload_optimizer"] != "none") s += fmt::format(", optimizer {}", p["offload_optimizer"].get<std::string>());
  if (p["checkpoints"] == "cpu") s += ", checkpoints cpu";
  if (p.contains("ds_config") && p["ds_config"].value("/activation_checkpointing/partition_activations"_json_pointer, false)) {
    s += " partitioned over MP";
  }
  if (p["tp"].get<int>() > 1) s += fmt::format(", MP {}", p["tp"].get<int>());
  return s;
}

std::string number(double v) { return fmt::format("{}", v); }

TEST(DeepSpeedPublished, EveryPointWithin15PercentOrAKnownGap) {
  const auto doc = test::read_source_json(DIR + "points.json");
  const auto gaps_doc = test::read_source_json(DIR + "known_gaps.json");
  std::map<std::string, std::string> gaps;
  for (const auto& g : gaps_doc["gaps"]) {
    for (const auto& n : g["names"]) gaps[n.get<std::string>()] = g["reason"].get<std::string>();
  }
  // Each source's published ds_config, as a file.
  test::ScratchDir dir;
  std::map<std::string, std::string> ds_configs, fitted;
  for (const auto& [key, s] : doc["sources"].items()) {
    if (s.contains("ds_config")) ds_configs[key] = dir.write(key + ".json", s["ds_config"]["config"].dump(2));
    if (s.contains("compute_fit")) fitted[key] = fitted_profile(s, dir);
  }
  std::set<std::string> names;
  for (const auto& p : doc["points"]) names.insert(p["name"].get<std::string>());
  for (const auto& [name, reason] : gaps) EXPECT_TRUE(names.count(name)) << "known_gaps.json names no point: " << name;

  // Every replay, deepspeed and idealized per point, a few at a time: the points are independent.
  std::vector<std::pair<Replayed, Replayed>> replays;
  {
    const auto& points = doc["points"];
    std::vector<std::future<Replayed>> running;
    constexpr std::size_t AT_ONCE = 4;
    std::vector<Replayed> done;
    for (std::size_t i = 0; i < points.size() * 2; ++i) {
      const auto& p = points[i / 2];
      const std::string name = p["name"];
      if (p.contains("ds_config") && !ds_configs.count(name)) ds_configs[name] = dir.write(name + ".json", p["ds_config"].dump(2));
      const std::string ds_config = ds_configs.count(name) ? ds_configs[name] : ds_configs.count(p["source"]) ? ds_configs[p["source"]] : "";
      const std::string hw = fitted.count(p["source"]) ? fitted[p["source"]] : p["hw"].get<std::string>();
      // The papers' accounting without a framework beside DeepSpeed's: what its runtime adds.
      // A source that ran an older DeepSpeed names the stack of that release (`stack`, with `stack_why`).
      const auto& source = doc["sources"][p["source"].get<std::string>()];
      const std::string deepspeed = source.contains("stack") ? source["stack"].get<std::string>() : "deepspeed";
      const std::string stack = i % 2 == 0 ? deepspeed : "idealized";
      running.push_back(std::async(std::launch::async, [&p, stack, ds_config, hw] { return replay(p, stack, ds_config, hw); }));
      if (running.size() == AT_ONCE || i + 1 == points.size() * 2) {
        for (auto& f : running) done.push_back(f.get());
        running.clear();
      }
    }
    for (std::size_t i = 0; i + 1 < done.size(); i += 2) replays.emplace_back(done[i], done[i + 1]);
  }

  std::string table =
      "| point | source, where | GPUs | model (L x h, seq) | strategy | micro x accum | published | predicted | error | status | idealized |\n"
      "| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | --- | ---: |\n";
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  int within = 0, total = 0;
  double sum = 0, worst = 0;
  std::string worst_name;
  std::size_t index = 0;
  for (const auto& p : doc["points"]) {
    const std::string name = p["name"];
    const double published = p["published_tflops_per_gpu"];
    const auto& [r, ideal] = replays[index++];
    const bool listed = gaps.count(name) > 0;
    double error = 0;
    std::string status;
    if (r.fits) {
      error = (r.tflops - published) / published;
      const bool ok = std::fabs(error) <= TOLERANCE;
      ++total;
      sum += std::fabs(error);
      if (std::fabs(error) > std::fabs(worst)) worst = error, worst_name = name;
      if (ok) ++within;
      status = ok ? (listed ? "within (listed as a gap!)" : "ok") : (listed ? "known gap" : "MISS");
      if (listed) {
        EXPECT_FALSE(ok) << name << " is within " << 100 * TOLERANCE << "% (" << 100 * error
                         << "%): remove it from known_gaps.json";
      } else {
        EXPECT_TRUE(ok) << name << ": predicted " << r.tflops << " TFLOP/s, published " << published << " ("
                        << 100 * error << "%); fix the model or list it in known_gaps.json with its reason";
      }
    } else {
      status = listed ? "known gap (does not run)" : "DOES NOT RUN";
      EXPECT_TRUE(listed) << name << " cannot be replayed: " << r.reason;
    }
    const auto& m = p["model"];
    table += fmt::format("| {} | {}: {} ({}) | {} | {} x {}, {} | {} | {} x {} | {} | {} | {} | {} | {} |\n", name,
                         p["source"].get<std::string>(), p["where"].get<std::string>(), p["reading"].get<std::string>(),
                         p["gpus"].get<int>(), m["layers"].get<int>(), m["hidden"].get<int>(), m["seq"].get<int>(),
                         strategy_of(p), p["micro_batch"].get<int>(), p["grad_accum"].get<int>(), number(published),
                         r.fits ? fmt::format("{:.1f}", r.tflops) : "-",
                         r.fits ? fmt::format("{:+.1f}%", 100 * error) : "-", r.fits ? status : status + ": " + r.reason,
                         ideal.fits ? fmt::format("{:.1f}", ideal.tflops) : "does not run");
    nlohmann::ordered_json row = {{"name", name}, {"published_tflops_per_gpu", published}};
    if (r.fits) {
      row["predicted_tflops_per_gpu"] = r.tflops;
      row["error_pct"] = 100 * error;
      row["step_time_s"] = r.step_s;
    } else {
      row["infeasible_reason"] = r.reason;
    }
    row["status"] = status;
    if (ideal.fits) row["idealized_tflops_per_gpu"] = ideal.tflops;
    rows.push_back(row);
  }

  std::string report =
      "# DeepSpeed's published throughput, predicted\n\n"
      "Each point of `points.json` (the paper, figure and configuration it comes from, how its value was read, and the\n"
      "assumptions its replay needs) replayed with `trainsim simulate --stack deepspeed` (or the release its source\n"
      "names, `stack`) on the profile of the machine\n"
      "that ran it; TFLOP/s per GPU counting the activation recompute, as the sources do (`idealized`: the same run\n"
      "with `--stack idealized`, the papers' accounting without a framework). A published run ran, so it replays\n"
      "with no memory headroom (`--memory-headroom 0`): it does not run only where the replay's reserved peak\n"
      "exceeds the usable memory. Target: within 15%; points outside it are listed with their reason in\n"
      "`known_gaps.json`. Generated by `tests/validation/deepspeed_published_test.cpp` (`TRAINSIM_UPDATE_REPORTS=1`\n"
      "rewrites it and `results.json`).\n\n"
      "Fit set and test set: every point below is a test point; no constant was fitted to any of them. The fit set\n"
      "is outside them: where a source's code base has a compute rate known only from another published run\n"
      "(`compute_fit` of its source: the run, and the GEMM efficiency at which its replay takes its published\n"
      "time), that source's points replay on its profile at that efficiency, and the test checks the fit\n"
      "reproduces its row.\n\n"
      "Sources:\n";
  for (const auto& [key, s] : doc["sources"].items()) {
    std::string fit;
    if (s.contains("compute_fit")) {
      const auto& f = s["compute_fit"];
      fit = fmt::format(" Compute fit: GEMMs at {}% of peak, fitted to {} ({}; {} s an iteration). {}",
                        100 * f["gemm_efficiency"].get<double>(), f["fit_row"]["cite"].get<std::string>(),
                        f["fit_row"]["model"].get<std::string>(), f["fit_row"]["step_time_s"].get<double>(),
                        f["why"].get<std::string>());
    }
    if (s.contains("stack")) fit = fmt::format(" Stack: `{}`: {}", s["stack"].get<std::string>(), s["stack_why"].get<std::string>()) + fit;
    report += fmt::format("- `{}`: {}. Hardware: {}. Profile: `{}`.{}{}\n", key, s["cite"].get<std::string>(),
                          s["hardware"].get<std::string>(), s["profile"].get<std::string>(),
                          s.contains("ds_config") ? " ds_config: " + s["ds_config"]["source"].get<std::string>() + "." : "", fit);
  }
  report += "\n" + table;
  report += fmt::format("\n{} of {} replayed points within 15%; mean |error| {:.1f}%, worst {:+.1f}% ({}).\n", within, total,
                        total > 0 ? 100 * sum / total : 0.0, 100 * worst, worst_name);
  report += "\nNot collected:\n";
  for (const auto& n : doc["not_collected"]) report += "- " + n.get<std::string>() + "\n";
  report += "\nAssumptions of each point: `points.json` (`assumptions`).\n";

  nlohmann::ordered_json results = {{"schema_version", 1},
                                    {"kind", "trainsim.published_points_predicted"},
                                    {"provenance",
                                     {{"tool", "tests/validation/deepspeed_published_test.cpp"},
                                      {"inputs", {DIR + "points.json", DIR + "known_gaps.json"}},
                                      {"stack", "deepspeed"}}},
                                    {"rows", rows}};
  const std::string results_text = results.dump(2) + "\n";
  const std::string report_path = test::source_path(DIR + "report.md");
  const std::string results_path = test::source_path(DIR + "results.json");
  if (const char* update = std::getenv("TRAINSIM_UPDATE_REPORTS"); update != nullptr && std::string(update) == "1") {
    std::ofstream(report_path) << report;
    std::ofstream(results_path) << results_text;
  }
  EXPECT_EQ(test::read_file(results_path), results_text) << DIR << "results.json is stale: rerun with TRAINSIM_UPDATE_REPORTS=1";
  EXPECT_EQ(test::read_file(report_path), report) << DIR << "report.md is stale: rerun with TRAINSIM_UPDATE_REPORTS=1";
}

// A compute fit reproduces the row it was fitted to: the fit row's model replayed with Megatron-LM
// alone on one GPU of the fit row's machine (the source's profile at the row's peak) takes the
// row's published iteration time, within 1%. The expected time is the source's arithmetic
// (points.json, `fit_row.cite`), not the replay's; the test fails when the cost model moves under
// the fitted efficiency, and the efficiency must then be fitted again.
TEST(DeepSpeedPublished, ComputeFitReproducesItsRow) {
  const auto doc = test::read_source_json(DIR + "points.json");
  test::ScratchDir dir;
  int fits = 0;
  for (const auto& [key, s] : doc["sources"].items()) {
    if (!s.contains("compute_fit")) continue;
    ++fits;
    const auto& row = s["compute_fit"]["fit_row"];
    const int micro = row["micro_batch"];
    const std::string args = fmt::format(
        "--num-layers {} --hidden-size {} --num-attention-heads {} --seq-length {} --max-position-embeddings {} "
        "--vocab-size {} --micro-batch-size {} --global-batch-size {} --fp16 --checkpoint-activations",
        row["layers"].get<int>(), row["hidden"].get<int>(), row["heads"].get<int>(), row["seq"].get<int>(),
        row["seq"].get<int>(), row["vocab"].get<int>(), micro, micro);
    const std::string hw = fitted_profile(s, dir, row["peak_TFLOPs"].get<double>());
    const auto out = test::run_trainsim(
        fmt::format("simulate --hw {} --gpus 1 --megatron-args \"{}\" --stack megatron --format json", hw, args));
    ASSERT_EQ(out.exit_code, 0) << key << ": " << out.err;
    const auto j = nlohmann::json::parse(out.out);
    ASSERT_TRUE(j["fits"].get<bool>()) << key;
    const double published = row["step_time_s"];
    EXPECT_NEAR(j["step_time_s"].get<double>(), published, 0.01 * published)
        << key << ": the fit row replays in " << j["step_time_s"] << " s, published " << published
        << " s: fit compute_fit.gemm_efficiency again";
  }
  EXPECT_GT(fits, 0) << "points.json has no compute fit to check";
}

}  // namespace
}  // namespace trainsim
