#include "bench_runs.hpp"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <stdexcept>

namespace trainsim::bench {

// Runs `trainsim args...` and captures its standard output.
Run run_once(const std::string& trainsim, const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv{const_cast<char*>(trainsim.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(trainsim.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buffer[1 << 16];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  Run r;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // wait4 reports the child's peak, which Linux takes as the larger of its own and that of the
  // children it waited for: the simulator's forked process included.
  r.max_rss_MiB = static_cast<double>(usage.ru_maxrss) / 1024.0;
  // User and system CPU of the child and the processes it waited for (the replays' forks).
  r.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
            static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("trainsim failed: " + out.substr(0, 200));
  r.answer = nlohmann::json::parse(out);
  return r;
}

// Splits on spaces, except inside double quotes (for --megatron-args "...").
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string token;
  bool quoted = false, any = false;
  for (char c : s) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (c == ' ' && !quoted) {
      if (any) out.push_back(token);
      token.clear();
      any = false;
    } else {
      token += c;
      any = true;
    }
  }
  if (any) out.push_back(token);
  return out;
}

Repeated run_repeated(const std::string& trainsim, const std::string& command, int repeat,
                      const std::function<void()>& before_each) {
  Repeated r;
  std::vector<std::pair<double, double>> runs;  // wall, CPU
  for (int i = 0; i < repeat; ++i) {
    before_each();
    r.last = run_once(trainsim, split(command));
    runs.emplace_back(r.last.wall_s, r.last.cpu_s);
    r.max_rss_MiB = std::max(r.max_rss_MiB, r.last.max_rss_MiB);
  }
  std::sort(runs.begin(), runs.end());
  r.wall_s = runs[runs.size() / 2].first;
  r.cpu_s = runs[runs.size() / 2].second;
  r.wall_min_s = runs.front().first;
  r.wall_max_s = runs.back().first;
  return r;
}

std::string load_average() {
  std::ifstream loadavg("/proc/loadavg");
  double one = 0, five = 0, fifteen = 0;
  if (!(loadavg >> one >> five >> fifteen)) return "unknown";
  return fmt::format("{:.2f} {:.2f} {:.2f}", one, five, fifteen);
}

std::string host_description() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  struct utsname u {};
  uname(&u);
  return fmt::format("{} ({} cores online), {} {}", model, sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release);
}

}  // namespace trainsim::bench
