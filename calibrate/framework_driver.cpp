#include "framework_driver.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "errors.hpp"
#include "strict_json.hpp"

#ifndef TRAINSIM_CALIBRATE_SOURCE_DIR
#define TRAINSIM_CALIBRATE_SOURCE_DIR ""
#endif

namespace trainsim::calibrate {
namespace {

namespace fs = std::filesystem;

bool holds_driver(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_regular_file(dir / "framework" / "__main__.py", ec);
}

std::string mode_name(Mode mode) { return std::string(to_string(mode)); }

// The driver's answer of one line of JSON; anything else is an error naming the command.
nlohmann::json one_json(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw CalibrationError("the framework driver's answer to " + what + " is not JSON: " + text.substr(0, 200));
  }
}

}  // namespace

FrameworkDriver FrameworkDriver::locate() {
  FrameworkDriver d;
  const char* py = std::getenv("TRAINSIM_CALIBRATE_PYTHON");
  d.python_ = py && *py ? py : "python3";
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("TRAINSIM_CALIBRATE_FRAMEWORK"); env && *env) {
    d.package_dir_ = env;  // named: used as it is, a wrong one shows in probe()
    return d;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "calibrate");
  candidates.emplace_back(TRAINSIM_CALIBRATE_SOURCE_DIR);
  for (const auto& c : candidates) {
    if (holds_driver(c)) {
      d.package_dir_ = c.string();
      return d;
    }
  }
  return d;
}

std::string FrameworkDriver::describe() const {
  return python_ + " -m framework (in " + (package_dir_.empty() ? std::string("no directory found") : package_dir_) + ")";
}

ChildRun FrameworkDriver::command(std::vector<std::string> args) const {
  ChildRun run;
  run.argv = {python_, "-m", "framework"};
  run.argv.insert(run.argv.end(), args.begin(), args.end());
  // The package and nothing of the user's site: the driver imports torch and itself only.
  run.env = {{"PYTHONPATH", package_dir_}, {"PYTHONDONTWRITEBYTECODE", "1"}, {"NCCL_NVLS_ENABLE", "0"}};
  return run;
}

FrameworkProbe FrameworkDriver::probe() const {
  FrameworkProbe p;
  if (!holds_driver(package_dir_)) {
    p.why_not = "the framework driver (calibrate/framework/) was not found beside this binary or in " +
                std::string(TRAINSIM_CALIBRATE_SOURCE_DIR) + " (set TRAINSIM_CALIBRATE_FRAMEWORK to the calibrate/ folder)";
    return p;
  }
  std::string out;
  ChildRun run = command({"probe"});
  run.on_line = [&out](const std::string& line) { out += line; };
  run.seconds_left = 120;  // importing torch and creating a CUDA context; a hung import is not waited for
  const ChildResult r = run_child(run);
  if (!r.started) {
    p.why_not = "Python could not be started (" + r.error + ")";
    return p;
  }
  if (r.exit_code != 0) {
    std::string last = r.stderr_tail;  // the error's last line says what failed
    while (!last.empty() && last.back() == '\n') last.pop_back();
    last = last.substr(last.rfind('\n') + 1);
    p.why_not = "the framework driver's probe failed (" +
                (r.timed_out ? std::string("no answer in 120 s")
                             : r.error.empty() ? "exit " + std::to_string(r.exit_code) : r.error) +
                (last.empty() ? "" : ": " + last) + ")";
    return p;
  }
  const nlohmann::json j = one_json(out, "probe");
  if (!j.is_object() || !j.contains("available") || !j["available"].is_boolean()) {
    throw CalibrationError("the framework driver's probe answered without \"available\": " + out.substr(0, 200));
  }
  p.available = j["available"].get<bool>();
  p.why_not = j.value("why_not", std::string());
  for (const char* k : {"torch", "cuda", "gpu"}) {
    if (j.contains(k)) p.facts[k] = j[k];
  }
  return p;
}

FrameworkCatalog FrameworkDriver::catalog(Mode mode) const {
  std::string out;
  ChildRun run = command({"parts", "--mode", mode_name(mode)});
  run.on_line = [&out](const std::string& line) { out += line; };
  run.seconds_left = 60;
  const ChildResult r = run_child(run);
  if (!r.started || r.exit_code != 0) throw CalibrationError("the framework driver's parts failed: " + r.error + " " + r.stderr_tail);
  const nlohmann::json j = one_json(out, "parts");
  FrameworkCatalog c;
  try {
    c.startup_seconds = j.at("startup_seconds").get<double>();
    for (const auto& p : j.at("parts")) {
      c.parts.push_back({p.at("name").get<std::string>(), p.at("what").get<std::string>(),
                         p.at("seconds").get<std::vector<double>>()});
    }
  } catch (const nlohmann::json::exception& e) {
    throw CalibrationError(std::string("the framework driver's parts answer is not its catalog: ") + e.what());
  }
  return c;
}

ChildResult FrameworkDriver::run(const std::string& dir, Mode mode,
                                 const std::vector<std::pair<std::string, int>>& selection,
                                 const std::function<void(const nlohmann::json&)>& on_event,
                                 std::optional<double> seconds_left) const {
  std::vector<std::string> args{"run", "--out", dir, "--mode", mode_name(mode)};
  for (const auto& [name, sizes] : selection) args.push_back(name + ":" + std::to_string(sizes));
  ChildRun run = command(args);
  run.seconds_left = seconds_left;
  run.on_line = [&on_event](const std::string& line) {
    // Event lines are JSON objects; anything else the measurements print is passed through.
    if (!line.empty() && line.front() == '{') {
      try {
        on_event(nlohmann::json::parse(line));
        return;
      } catch (const nlohmann::json::exception&) {
      }
    }
    std::printf("  %s\n", line.c_str());
    std::fflush(stdout);
  };
  return run_child(run);
}

nlohmann::ordered_json FrameworkDriver::sections(const nlohmann::ordered_json& parts, const std::string& where,
                                                 double bf16_peak_TFLOPs) const {
  if (!holds_driver(package_dir_)) {
    throw CalibrationError("the framework raw results need the framework driver to become profile sections, and it "
                           "was not found (set TRAINSIM_CALIBRATE_FRAMEWORK to the calibrate/ folder)");
  }
  std::string out;
  ChildRun run = command({"sections"});
  nlohmann::ordered_json request{{"parts", parts}};
  if (bf16_peak_TFLOPs > 0) request["bf16_peak_TFLOPs"] = bf16_peak_TFLOPs;
  run.stdin_text = request.dump();
  run.on_line = [&out](const std::string& line) { out += line; };
  run.seconds_left = 120;
  const ChildResult r = run_child(run);
  if (!r.started) throw CalibrationError("Python could not be started for the framework sections: " + r.error);
  if (r.exit_code == 2) throw UsageError(where, "framework raw results written by trainsim-calibrate", r.stderr_tail);
  if (r.exit_code != 0) throw CalibrationError("the framework driver's sections failed: " + r.error + " " + r.stderr_tail);
  try {
    return nlohmann::ordered_json::parse(out);
  } catch (const nlohmann::json::exception&) {
    throw CalibrationError("the framework driver's sections answer is not JSON: " + out.substr(0, 200));
  }
}

}  // namespace trainsim::calibrate
