#include "output_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <random>

#include "config_error.hpp"

namespace trainsim {
namespace {

// --- the registry -------------------------------------------------------------------------
// Fixed storage so the signal handler touches no allocator: paths are copied in at
// registration and the handler only calls kill(), waitpid() and unlink(), which are
// async-signal-safe.
constexpr int MAX_PATHS = 64;
constexpr std::size_t MAX_PATH_CHARS = 4096;
std::array<std::array<char, MAX_PATH_CHARS>, MAX_PATHS> g_paths{};
std::array<std::atomic<bool>, MAX_PATHS> g_path_used{};

constexpr int MAX_CHILDREN = 8;
std::array<std::atomic<pid_t>, MAX_CHILDREN> g_children{};

constexpr std::array<int, 3> INTERRUPTS{SIGINT, SIGTERM, SIGHUP};
std::array<struct sigaction, 3> g_previous{};
std::array<std::atomic<bool>, 3> g_installed{};

std::atomic<bool> g_defer_first{false};
std::atomic<int> g_interrupt{0};

void on_signal(int sig) {
  if (sig != SIGHUP && g_defer_first.load() && g_interrupt.load() == 0) {
    g_interrupt.store(sig);
    return;
  }
  for (auto& child : g_children) {
    const pid_t pid = child.load();
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  remove_registered_files();
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  // Blocked while this handler runs: delivered, with the default action, when it returns.
  ::raise(sig);
}

sigset_t interrupt_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : INTERRUPTS) sigaddset(&set, sig);
  return set;
}

// --- messages -----------------------------------------------------------------------------
std::string quoted(const std::string& s) { return "\"" + s + "\""; }

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

std::string random_suffix() {
  static std::mt19937_64 rng([] {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device() ^ static_cast<std::uint64_t>(::getpid());
  }());
  static constexpr char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string s(6, 'x');
  for (char& c : s) c = ALPHABET[rng() % (sizeof ALPHABET - 1)];
  return s;
}

}  // namespace

// --- registry functions -------------------------------------------------------------------

int register_cleanup_path(const std::string& absolute_path) {
  if (absolute_path.empty() || absolute_path.size() >= MAX_PATH_CHARS) return -1;
  for (int i = 0; i < MAX_PATHS; ++i) {
    bool expected = false;
    // Claim the slot first, then fill it; the handler may see a half-written path only if a
    // signal lands between the two, and then finds an empty string, because the first byte is
    // written last.
    if (g_path_used[static_cast<std::size_t>(i)].compare_exchange_strong(expected, true)) {
      auto& buf = g_paths[static_cast<std::size_t>(i)];
      buf[0] = '\0';
      std::memcpy(buf.data() + 1, absolute_path.c_str() + 1, absolute_path.size());  // with the NUL
      std::atomic_signal_fence(std::memory_order_seq_cst);
      buf[0] = absolute_path[0];
      return i;
    }
  }
  return -1;
}

void unregister_cleanup_path(int slot) noexcept {
  if (slot < 0 || slot >= MAX_PATHS) return;
  g_paths[static_cast<std::size_t>(slot)][0] = '\0';
  std::atomic_signal_fence(std::memory_order_seq_cst);
  g_path_used[static_cast<std::size_t>(slot)].store(false);
}

void remove_registered_files() noexcept {
  for (std::size_t i = 0; i < MAX_PATHS; ++i) {
    if (g_path_used[i].load() && g_paths[i][0] != '\0') ::unlink(g_paths[i].data());
  }
}

int register_cleanup_child(pid_t pid) {
  for (int i = 0; i < MAX_CHILDREN; ++i) {
    pid_t expected = 0;
    if (g_children[static_cast<std::size_t>(i)].compare_exchange_strong(expected, pid)) return i;
  }
  return -1;
}

void unregister_cleanup_child(int slot) noexcept {
  if (slot >= 0 && slot < MAX_CHILDREN) g_children[static_cast<std::size_t>(slot)].store(0);
}

void install_cleanup_signal_handlers() {
  for (std::size_t i = 0; i < INTERRUPTS.size(); ++i) {
    if (g_installed[i].load()) continue;
    struct sigaction previous {};
    ::sigaction(INTERRUPTS[i], nullptr, &previous);
    if (previous.sa_handler == SIG_IGN) continue;  // nohup, background jobs: stay ignored
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sa.sa_mask = interrupt_set();  // one handler at a time
    g_previous[i] = previous;
    ::sigaction(INTERRUPTS[i], &sa, nullptr);
    g_installed[i].store(true);
  }
}

void defer_first_interrupt() noexcept { g_defer_first.store(true); }
int interrupt_requested() noexcept { return g_interrupt.load(); }

void reset_cleanup_in_child() noexcept {
  g_defer_first.store(false);
  g_interrupt.store(0);
  for (std::size_t i = 0; i < MAX_PATHS; ++i) {
    g_paths[i][0] = '\0';
    g_path_used[i].store(false);
  }
  for (auto& child : g_children) child.store(0);
  for (std::size_t i = 0; i < INTERRUPTS.size(); ++i) {
    if (g_installed[i].load()) {
      ::sigaction(INTERRUPTS[i], &g_previous[i], nullptr);
      g_installed[i].store(false);
    }
  }
}

HoldInterrupts::HoldInterrupts() noexcept {
  const sigset_t set = interrupt_set();
  ::pthread_sigmask(SIG_BLOCK, &set, &saved_);
}

HoldInterrupts::~HoldInterrupts() { ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }

// --- OutputSet ----------------------------------------------------------------------------

OutputSet::~OutputSet() {
  discard_temporaries();
  close_directories();
}

void OutputSet::add(std::string flag, std::string path, std::string text, std::string hint) {
  Entry e;
  e.flag = std::move(flag);
  e.path = std::move(path);
  e.text = std::move(text);
  e.hint = std::move(hint);
  entries_.push_back(std::move(e));
}

void OutputSet::check_one(Entry& e) {
  auto refuse = [&e](const std::string& expected, const std::string& why) {
    throw ConfigError(e.flag, e.flag, expected, quoted(e.path) + " (" + why + ")");
  };
  if (e.path.empty()) throw ConfigError(e.flag, e.flag, "a file path", "an empty path");
  const auto slash = e.path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : e.path.substr(0, slash);
  e.name = slash == std::string::npos ? e.path : e.path.substr(slash + 1);
  const std::string hint = e.hint.empty() ? "" : "; " + e.hint;
  const char* expected = "a regular file or the name of a new one";
  if (e.name.empty() || e.name == "." || e.name == "..") refuse(expected, "a directory" + hint);

  e.dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (e.dir_fd < 0) {
    const int err = errno;
    refuse("a path in an existing directory", err == ENOENT    ? "no directory " + dir
                                              : err == ENOTDIR ? dir + " is not a directory"
                                                               : dir + ": " + std::strerror(err));
  }
  struct stat dir_st {};
  if (::fstat(e.dir_fd, &dir_st) != 0) refuse("a path in an existing directory", dir + ": " + std::strerror(errno));
  e.dir_dev = dir_st.st_dev;
  e.dir_ino = dir_st.st_ino;
  if (::faccessat(e.dir_fd, ".", W_OK, 0) != 0) {
    refuse("a path in a directory this user can write", dir + ": " + std::strerror(errno));
  }
  char resolved[PATH_MAX];
  if (::realpath(dir.c_str(), resolved) == nullptr) {
    refuse("a path in an existing directory", dir + ": " + std::strerror(errno));
  }
  e.dir_path = resolved;
  if (e.dir_path == "/") e.dir_path.clear();  // so that dir_path + "/" + name is "/name"

  struct stat st {};
  if (::fstatat(e.dir_fd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      e.target_exists = false;
      return;
    }
    refuse(expected, std::strerror(err));
  }
  if (S_ISLNK(st.st_mode)) {
    struct stat to {};
    if (::fstatat(e.dir_fd, e.name.c_str(), &to, 0) != 0) {
      refuse(expected, std::string("a symbolic link to nothing: ") + std::strerror(errno) + hint);
    }
    if (!S_ISREG(to.st_mode)) refuse(expected, "a symbolic link to " + kind_of(to.st_mode) + hint);
    st = to;  // a link to a regular file is replaced by the new file; its target is left alone
  } else if (!S_ISREG(st.st_mode)) {
    refuse(expected, kind_of(st.st_mode) + hint);
  }
  e.target_exists = true;
  e.target_dev = st.st_dev;
  e.target_ino = st.st_ino;
}

void OutputSet::check() {
  discard_temporaries();
  close_directories();
  for (Entry& e : entries_) check_one(e);
  for (std::size_t j = 0; j < entries_.size(); ++j) {
    const Entry& b = entries_[j];
    for (std::size_t i = 0; i < j; ++i) {
      const Entry& a = entries_[i];
      const bool same_entry = a.dir_dev == b.dir_dev && a.dir_ino == b.dir_ino && a.name == b.name;
      const bool same_file =
          a.target_exists && b.target_exists && a.target_dev == b.target_dev && a.target_ino == b.target_ino;
      if (same_entry || same_file) {
        throw ConfigError(b.flag, b.flag,
                          "a different file from " + (a.flag == b.flag ? std::string("the other ") + a.flag : a.flag + "'s"),
                          quoted(b.path) + " (the same file as " + quoted(a.path) + ": two outputs with the same path)");
      }
    }
  }
}

void OutputSet::write_temporary(Entry& e) {
  // Truncated so that the temporary's name stays within NAME_MAX (255).
  const std::string stem = "." + e.name.substr(0, 200) + ".trainsim-";
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    const std::string name = stem + random_suffix();
    // Created and registered together: an interrupt between the two would leave it behind.
    HoldInterrupts hold;
    fd = ::openat(e.dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
      const int err = errno;
      if (err == EEXIST) continue;
      const std::string why = e.dir_path + "/" + name + ": " + std::strerror(err);
      if (err == EACCES || err == EPERM || err == EROFS) {
        throw ConfigError(e.flag, e.flag, "a path in a directory this user can write", quoted(e.path) + " (" + why + ")");
      }
      throw OutputError(e.flag + ": cannot create a temporary file for " + quoted(e.path) + ": " + why);
    }
    e.slot = register_cleanup_path(e.dir_path + "/" + name);
    if (e.slot < 0) {
      ::unlinkat(e.dir_fd, name.c_str(), 0);
      ::close(fd);
      throw OutputError(e.flag + ": too many temporary files at once (or a path too long) for " + quoted(e.path));
    }
    e.temp_name = name;
  }
  if (fd < 0) throw OutputError(e.flag + ": no free temporary name beside " + quoted(e.path));
  std::size_t done = 0;
  while (done < e.text.size()) {
    const ssize_t n = ::write(fd, e.text.data() + done, e.text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      throw OutputError(e.flag + ": cannot write " + quoted(e.path) + ": " + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    throw OutputError(e.flag + ": cannot write " + quoted(e.path) + ": " + std::strerror(err));
  }
  if (::close(fd) != 0) throw OutputError(e.flag + ": cannot write " + quoted(e.path) + ": " + std::strerror(errno));
}

void OutputSet::prepare() {
  check();
  try {
    for (Entry& e : entries_) write_temporary(e);
  } catch (const OutputError& e) {
    discard_temporaries();
    throw OutputError(std::string(e.what()) + " (nothing was written)");
  } catch (...) {
    discard_temporaries();
    throw;
  }
  prepared_ = true;
}

void OutputSet::commit() {
  if (!prepared_) prepare();
  std::string failure;
  std::size_t renamed = 0;
  {
    HoldInterrupts hold;
    for (Entry& e : entries_) {
      if (::renameat(e.dir_fd, e.temp_name.c_str(), e.dir_fd, e.name.c_str()) != 0) {
        failure = e.flag + ": cannot rename the temporary " + e.dir_path + "/" + e.temp_name + " to " + quoted(e.path) +
                  ": " + std::strerror(errno);
        break;
      }
      unregister_cleanup_path(e.slot);
      e.slot = -1;
      e.temp_name.clear();
      ++renamed;
    }
  }
  if (!failure.empty()) {
    discard_temporaries();
    close_directories();
    prepared_ = false;
    if (renamed > 0) failure += " (" + std::to_string(renamed) + " other output(s) were already in place)";
    throw OutputError(failure);
  }
  // The renames themselves reach the disk with the directories (best effort: some file systems
  // refuse fsync on a directory).
  for (const Entry& e : entries_) ::fsync(e.dir_fd);
  close_directories();
  prepared_ = false;
}

std::vector<std::string> OutputSet::temporary_paths() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) {
    if (!e.temp_name.empty()) out.push_back(e.dir_path + "/" + e.temp_name);
  }
  return out;
}

void OutputSet::discard_temporaries() noexcept {
  for (Entry& e : entries_) {
    if (e.temp_name.empty()) continue;
    HoldInterrupts hold;
    ::unlinkat(e.dir_fd, e.temp_name.c_str(), 0);
    unregister_cleanup_path(e.slot);
    e.slot = -1;
    e.temp_name.clear();
  }
  prepared_ = false;
}

void OutputSet::close_directories() noexcept {
  for (Entry& e : entries_) {
    if (e.dir_fd >= 0 && e.temp_name.empty()) {
      ::close(e.dir_fd);
      e.dir_fd = -1;
    }
  }
}

}  // namespace trainsim
