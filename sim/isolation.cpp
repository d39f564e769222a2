#include "isolation.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "engine.hpp"

namespace trainsim::sim {
namespace {

void write_all(int fd, const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

std::string run_isolated(const std::function<std::string()>& fn) {
  // For debuggers: TRAINSIM_NO_FORK=1 runs the one simulation of this process in place.
  if (const char* no_fork = std::getenv("TRAINSIM_NO_FORK"); no_fork != nullptr && std::string(no_fork) == "1") {
    char arg0[] = "trainsim";
    char log1[] = "--log=root.thres:critical";
    char* argv[] = {arg0, log1, nullptr};
    int argc = 2;
    configure_simgrid(&argc, argv);
    return fn();
  }
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("simulation: pipe failed: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("simulation: fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    int code = 0;
    char status = '0';
    std::string out;
    try {
      char arg0[] = "trainsim";
      char log1[] = "--log=root.thres:critical";
      char log2[] = "--log=xbt_cfg.thres:critical";
      char* argv[] = {arg0, log1, log2, nullptr};
      int argc = 3;
      configure_simgrid(&argc, argv);
      out = fn();
    } catch (const std::exception& e) {
      status = '1';
      out = e.what();
      code = 3;
    }
    write_all(fds[1], std::string(1, status));
    write_all(fds[1], out);
    ::close(fds[1]);
    ::_exit(code);
  }
  ::close(fds[1]);
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    throw std::runtime_error("simulation: the simulator process died of signal " + std::to_string(WTERMSIG(status)));
  }
  if (text.empty()) throw std::runtime_error("simulation: the simulator process returned nothing");
  if (text[0] == '1') throw std::runtime_error(text.substr(1));
  return text.substr(1);
}

}  // namespace trainsim::sim
