#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <thread>

#include "errors.hpp"
#include "output_files.hpp"

namespace trainsim::calibrate {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

ChildResult run_child(const ChildRun& run) {
  ChildResult result;
  int in[2], out[2], err[2], exec_err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
      ::pipe2(exec_err, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  std::vector<char*> argv;
  for (const auto& a : run.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  int slot = -1;
  {
    HoldInterrupts hold;  // fork and register together: an interrupt in between would leave the child running
    pid = ::fork();
    if (pid == 0) {
      reset_cleanup_in_child();
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      for (const auto& [k, v] : run.env) ::setenv(k.c_str(), v.c_str(), 1);
      ::execvp(argv[0], argv.data());
      const int e = errno;
      (void)!::write(exec_err[1], &e, sizeof e);
      ::_exit(127);
    }
    if (pid > 0) slot = register_cleanup_child(pid);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  ::close(exec_err[1]);
  if (pid < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
    ::close(in[1]);
    ::close(out[0]);
    ::close(err[0]);
    ::close(exec_err[0]);
    return result;
  }
  int exec_errno = 0;
  const bool exec_failed = ::read(exec_err[0], &exec_errno, sizeof exec_errno) == static_cast<ssize_t>(sizeof exec_errno);
  ::close(exec_err[0]);
  result.started = !exec_failed;
  if (exec_failed) result.error = "cannot execute " + run.argv.front() + ": " + std::strerror(exec_errno);

  // The input goes in from a thread of its own: a child that prints before it has read all of its
  // input cannot block the two of us.
  int in_fd = in[1];
  std::thread writer([&in_fd, &run] {
    std::size_t off = 0;
    const std::string& t = run.stdin_text;
    while (off < t.size()) {
      const ssize_t n = ::write(in_fd, t.data() + off, t.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // the child closed its input (EPIPE): it has what it wanted
      off += static_cast<std::size_t>(n);
    }
    close_fd(in_fd);
  });

  const double deadline = run.seconds_left ? now_s() + *run.seconds_left : 0;
  double killed_at = 0;
  std::string line, err_text;
  std::size_t total = 0;
  bool too_much = false;
  int out_fd = out[0], err_fd = err[0];
  char buf[65536];
  while (out_fd >= 0 || err_fd >= 0) {
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    int wait_ms = -1;
    if (run.seconds_left) {
      const double t = now_s();
      if (t >= deadline && killed_at == 0) {
        ::kill(pid, SIGTERM);
        result.timed_out = true;
        killed_at = t;
      }
      if (killed_at != 0 && t >= killed_at + 5) ::kill(pid, SIGKILL);
      wait_ms = killed_at != 0 ? 500 : static_cast<int>(std::max(1.0, (deadline - t) * 1000));
    }
    const int ready = ::poll(fds, 2, wait_ms);
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      int& fd = i == 0 ? out_fd : err_fd;
      if (fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close_fd(fd);
        continue;
      }
      total += static_cast<std::size_t>(n);
      if (total > run.max_output_bytes && !too_much) {
        too_much = true;
        ::kill(pid, SIGKILL);
      }
      if (i == 1) {
        err_text.append(buf, static_cast<std::size_t>(n));
        if (err_text.size() > 8192) err_text.erase(0, err_text.size() - 4096);
        continue;
      }
      for (ssize_t k = 0; k < n; ++k) {
        if (buf[k] == '\n') {
          if (run.on_line) run.on_line(line);
          line.clear();
        } else {
          line += buf[k];
        }
      }
    }
  }
  if (!line.empty() && run.on_line) run.on_line(line);
  writer.join();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  unregister_cleanup_child(slot);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && result.error.empty()) result.error = std::string("killed by ") + strsignal(WTERMSIG(status));
  result.stderr_tail = err_text.size() > 4096 ? err_text.substr(err_text.size() - 4096) : err_text;
  if (too_much) {
    throw CalibrationError(run.argv.front() + " printed more than " + std::to_string(run.max_output_bytes >> 20) +
                           " MiB; stopped");
  }
  return result;
}

}  // namespace trainsim::calibrate
