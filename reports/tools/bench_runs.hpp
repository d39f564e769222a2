#pragma once
// What trainsim-bench's sections share: running the real CLI as a child process and measuring it
// (wall time from fork to exit, user and system CPU and peak RSS of the process tree from wait4),
// repeating a command, and describing the machine it ran on.

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainsim::bench {

struct Run {
  double wall_s = 0;
  double cpu_s = 0;
  double max_rss_MiB = 0;
  nlohmann::json answer;
};

// Runs `trainsim args...` and parses its standard output as JSON; throws if it fails.
Run run_once(const std::string& trainsim, const std::vector<std::string>& args);

// Splits on spaces, except inside double quotes (for --megatron-args "...").
std::vector<std::string> split(const std::string& s);

// The same command `repeat` times: the median, least and largest wall, the largest peak RSS, and
// the last run's answer.
struct Repeated {
  double wall_s = 0, wall_min_s = 0, wall_max_s = 0, max_rss_MiB = 0;
  double cpu_s = 0;  // of the run with the median wall
  Run last;
};

// `before_each` runs before every run (a cold run clears its cache there).
Repeated run_repeated(const std::string& trainsim, const std::string& command, int repeat,
                      const std::function<void()>& before_each = [] {});

// The 1-, 5- and 15-minute load averages when the run ends: a load above the core count means
// other processes shared the CPU, so the wall times are upper bounds of a quiet machine's.
std::string load_average();
// The CPU model, the cores online and the kernel.
std::string host_description();

}  // namespace trainsim::bench
