#pragma once
// Runs another program (the framework driver) and reads what it prints, line by line, with a
// deadline. The child is registered with the interrupt cleanup (hwprofiles/io/output_files.hpp),
// so SIGINT, SIGTERM or SIGHUP to trainsim-calibrate kills it as well; its finished files stay.

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trainsim::calibrate {

struct ChildRun {
  std::vector<std::string> argv;                              // argv[0] searched in PATH
  std::vector<std::pair<std::string, std::string>> env;       // set in the child, beside the inherited ones
  std::string stdin_text;                                     // written to its standard input, then closed
  std::function<void(const std::string&)> on_line;            // each line of its standard output
  std::optional<double> seconds_left;                         // killed (SIGTERM, then SIGKILL) past this
  std::size_t max_output_bytes = 64u << 20;                   // more is an error: nothing reads without bound
};

struct ChildResult {
  bool started = false;      // false: the program could not be executed (why in `error`)
  bool timed_out = false;    // killed at the deadline
  int exit_code = -1;        // its exit status, or -1 when killed by a signal
  std::string error;         // why it could not start, or the signal that ended it
  std::string stderr_tail;   // the last 4 KiB of its standard error
};

// Runs it to the end (or the deadline). Throws CalibrationError only when the output passes
// max_output_bytes.
ChildResult run_child(const ChildRun& run);

}  // namespace trainsim::calibrate
