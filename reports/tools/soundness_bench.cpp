#include "soundness_bench.hpp"

#include <sys/wait.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "bench_runs.hpp"

namespace trainsim::bench {

void soundness_section(const std::string& property_test, const std::string& out_dir, const std::string& date,
                       const std::string& command) {
  const std::string report = out_dir + "/.soundness-report.jsonl";
  const std::string log = out_dir + "/.soundness.log";
  std::filesystem::remove(report);
  std::cerr << "Soundness suites (full size; a few minutes on 2 cores):\n";
  const auto start = std::chrono::steady_clock::now();
  const std::string run = fmt::format("TRAINSIM_SUITE_SIZE=full TRAINSIM_SUITE_REPORT='{}' '{}' > '{}' 2>&1", report, property_test, log);
  const int status = std::system(run.c_str());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (status == -1 || !WIFEXITED(status)) throw std::runtime_error("could not run " + property_test);
  const bool passed = WEXITSTATUS(status) == 0;

  nlohmann::ordered_json doc;
  doc["schema_version"] = 1;
  doc["kind"] = "trainsim.soundness_bench";
  doc["context"] = {{"date", date}, {"host", host_description()}, {"command", command}, {"property_test", property_test}};
  doc["passed"] = passed;
  doc["wall_s"] = wall;
  doc["suites"] = nlohmann::ordered_json::array();
  std::ifstream in(report);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) doc["suites"].push_back(nlohmann::ordered_json::parse(line));
  }
  if (doc["suites"].empty()) throw std::runtime_error(property_test + " wrote no suite report (see " + log + ")");
  std::ofstream(out_dir + "/soundness.json") << doc.dump(2) << "\n";

  std::string md = "# The planner's soundness suites, in full\n\n";
  md += fmt::format("Run {} on {}; `{}`: `{}` with `TRAINSIM_SUITE_SIZE=full`, {:.0f} s wall; **{}**. CI runs the same suites "
                    "reduced (`ctest -R 'MemoryConsistency|GradientAccounting|PruningSoundness'`).\n\n",
                    date, host_description(), command, property_test, wall, passed ? "every check passed" : "FAILED (see the log)");
  for (const auto& s : doc["suites"]) {
    const std::string name = s["suite"].get<std::string>();
    if (name == "memory_consistency") {
      md += fmt::format("- **Memory consistency** (planner/memory_fit.hpp): {} random strategies of every family on small "
                        "models and clusters, the memory model's GPU, host and NVMe bytes against the replay's peaks; the model "
                        "may exceed a replayed peak by {:g} of its bytes and fall short by {:g} plus {:.0f} GiB; the largest GPU "
                        "difference found: {:.1f}% of the model's bytes (every case within that band: the largest relative ones are "
                        "small cases, where the bytes allowance dominates).\n",
                        s["cases"].get<long>(), s["over"].get<double>(), s["under"].get<double>(),
                        s["under_bytes"].get<double>() / (1024.0 * 1024 * 1024), 100 * s["worst_gpu"].get<double>());
    } else if (name == "gradient_accounting") {
      md += fmt::format("- **Gradient accounting**: {} strategies, every gradient byte produced reduced or offloaded exactly once "
                        "per step.\n",
                        s["cases"].get<long>());
    } else if (name == "pruning_soundness") {
      md += fmt::format("- **Pruning soundness**: {} searches on small clusters, every pruned configuration replayed ({}, {} of "
                        "them pruned by the tie-break): none below its bound, none belonging in the top K; {} ranked replays "
                        "checked against their bounds.\n",
                        s["searches"].get<long>(), s["pruned_replayed"].get<long>(), s["pruned_by_the_tie_break"].get<long>(),
                        s["ranked_replays_checked"].get<long>());
    } else {
      md += "- " + name + ": " + s.dump() + "\n";
    }
  }
  std::ofstream(out_dir + "/soundness.md") << md;
  std::filesystem::remove(report);
  if (passed) std::filesystem::remove(log);
  std::cerr << "wrote " << out_dir << "/soundness.json, soundness.md" << (passed ? "" : " (FAILED: " + log + ")") << "\n";
}

}  // namespace trainsim::bench
