#include "isolation.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "engine.hpp"
#include "output_files.hpp"

namespace trainsim::sim {
namespace {

void write_all(int fd, const char* p, std::size_t left) {
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

// A part on the pipe: its length (8 bytes, host order: both ends are this process's image), then
// its bytes.
void write_part(int fd, const std::string& text) {
  const std::uint64_t n = text.size();
  write_all(fd, reinterpret_cast<const char*>(&n), sizeof n);
  write_all(fd, text.data(), text.size());
}

std::vector<std::string> read_parts(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t pos = 1;  // after the status byte
  while (pos < text.size()) {
    std::uint64_t n = 0;
    if (text.size() - pos < sizeof n) throw std::runtime_error("simulation: the simulator process returned a truncated answer");
    std::memcpy(&n, text.data() + pos, sizeof n);
    pos += sizeof n;
    if (text.size() - pos < n) throw std::runtime_error("simulation: the simulator process returned a truncated answer");
    parts.emplace_back(text, pos, static_cast<std::size_t>(n));
    pos += static_cast<std::size_t>(n);
  }
  return parts;
}

// The forked child, reaped on every way out of the parent: waited for normally, killed first when
// the parent leaves early (an exception while reading its answer).
class Child {
 public:
  Child(pid_t pid, int slot) : pid_(pid), slot_(slot) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (reaped_) return;
    ::kill(pid_, SIGKILL);
    wait();
  }
  int wait() {
    // Unregistered before the wait: the pid cannot be reused until it is reaped, so the signal
    // handler never kills a stranger; an interrupt in between leaves the child to
    // PR_SET_PDEATHSIG.
    unregister_cleanup_child(slot_);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    return status;
  }

 private:
  pid_t pid_;
  int slot_;
  bool reaped_ = false;
};

}  // namespace

std::vector<std::string> run_isolated_parts(const std::function<std::vector<std::string>()>& fn) {
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
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("simulation: pipe failed: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  pid_t pid = -1;
  int slot = -1;
  {
    // Interrupts held back across the fork: the parent registers the child before any handler
    // can run, and the child drops the parent's handlers and registry before any can run there.
    HoldInterrupts hold;
    pid = ::fork();
    if (pid > 0) {
      slot = register_cleanup_child(pid);
    } else if (pid == 0) {
      // Die with the parent; if it is already gone (re-parented before the prctl), stop now.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(4);
      reset_cleanup_in_child();
    }
  }
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("simulation: fork failed: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::close(fds[0]);
    int code = 0;
    try {
      char arg0[] = "trainsim";
      char log1[] = "--log=root.thres:critical";
      char log2[] = "--log=xbt_cfg.thres:critical";
      char* argv[] = {arg0, log1, log2, nullptr};
      int argc = 3;
      configure_simgrid(&argc, argv);
      const std::vector<std::string> parts = fn();
      write_all(fds[1], "0", 1);
      for (const auto& part : parts) write_part(fds[1], part);
    } catch (const std::exception& e) {
      write_all(fds[1], "1", 1);
      write_all(fds[1], e.what(), std::strlen(e.what()));
      code = 3;
    }
    ::close(fds[1]);
    ::_exit(code);
  }
  ::close(fds[1]);
  Child child(pid, slot);
  std::string text;
  {
    char buffer[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      try {
        text.append(buffer, static_cast<std::size_t>(n));
      } catch (...) {
        ::close(fds[0]);
        throw;
      }
    }
  }
  ::close(fds[0]);
  const int status = child.wait();
  if (WIFSIGNALED(status)) {
    throw std::runtime_error("simulation: the simulator process died of signal " + std::to_string(WTERMSIG(status)));
  }
  if (text.empty()) throw std::runtime_error("simulation: the simulator process returned nothing");
  if (text[0] == '1') throw std::runtime_error(text.substr(1));
  return read_parts(text);
}

std::string run_isolated(const std::function<std::string()>& fn) {
  std::vector<std::string> parts = run_isolated_parts([&fn] { return std::vector<std::string>{fn()}; });
  if (parts.size() != 1) throw std::runtime_error("simulation: the simulator process returned an unexpected answer");
  return std::move(parts.front());
}

}  // namespace trainsim::sim
