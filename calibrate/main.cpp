// trainsim-calibrate: measures this machine and writes a trainsim hardware profile.
// See calibrate/README.md for the benchmarks, their definitions and the exit codes.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "calibrate_run.hpp"
#include "errors.hpp"
#include "options.hpp"
#include "output_files.hpp"
#include "reference/reference_cmd.hpp"

int main(int argc, char** argv) {
  using namespace trainsim::calibrate;
  const std::vector<std::string> args(argv + 1, argv + argc);
  // Scratch files and output temporaries go away on SIGINT/SIGTERM/SIGHUP (output_files.hpp).
  trainsim::install_cleanup_signal_handlers();
  try {
    if (!args.empty() && args[0] == "reference") {
      return ref::run_reference_command(std::vector<std::string>(args.begin() + 1, args.end()));
    }
    const ParsedCommand cmd = parse_command_line(args);
    switch (cmd.action) {
      case Action::HELP: std::printf("%s", usage_text().c_str()); return 0;
      case Action::VERSION: std::printf("trainsim-calibrate %s\n", TOOL_VERSION); return 0;
      case Action::COMPARE: return run_compare(cmd);
      case Action::REBUILD: return run_rebuild(cmd);
      case Action::RUN: return run_calibration(cmd.options);
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "trainsim-calibrate: error: %s\n(see trainsim-calibrate --help)\n", e.what());
    return EXIT_USAGE;
  } catch (const NoGpuError& e) {
    std::fprintf(stderr, "trainsim-calibrate: %s\n", e.what());
    return EXIT_NO_GPU;
  } catch (const CalibrationError& e) {
    std::fprintf(stderr, "trainsim-calibrate: failed: %s\nNo results were written.\n", e.what());
    return EXIT_FAILED;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainsim-calibrate: failed: %s\nNo results were written.\n", e.what());
    return EXIT_FAILED;
  }
  return EXIT_FAILED;
}
