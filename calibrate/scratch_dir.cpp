#include "scratch_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "errors.hpp"

namespace trainsim::calibrate {
namespace {

// Fixed storage so the signal handler touches no allocator: paths are copied in at
// registration and the handler only calls unlink(), which is async-signal-safe.
constexpr int MAX_SLOTS = 64;
constexpr std::size_t MAX_PATH_CHARS = 4096;
std::array<std::array<char, MAX_PATH_CHARS>, MAX_SLOTS> g_paths{};
std::array<std::atomic<bool>, MAX_SLOTS> g_used{};

void on_signal(int sig) {
  remove_registered_files();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

int register_cleanup_path(const std::string& absolute_path) {
  if (absolute_path.size() >= MAX_PATH_CHARS) return -1;
  for (int i = 0; i < MAX_SLOTS; ++i) {
    bool expected = false;
    // Claim the slot first, then fill it; the handler may see a half-written path only if a
    // signal lands between the two, and then unlink() fails harmlessly on the partial name
    // because the first byte is written last.
    if (g_used[i].compare_exchange_strong(expected, true)) {
      auto& buf = g_paths[i];
      buf[0] = '\0';
      std::memcpy(buf.data() + 1, absolute_path.c_str() + 1, absolute_path.size());
      std::atomic_signal_fence(std::memory_order_seq_cst);
      buf[0] = absolute_path.empty() ? '\0' : absolute_path[0];
      return i;
    }
  }
  return -1;
}

void unregister_cleanup_path(int slot) noexcept {
  if (slot < 0 || slot >= MAX_SLOTS) return;
  g_paths[slot][0] = '\0';
  g_used[slot].store(false);
}

void remove_registered_files() noexcept {
  for (int i = 0; i < MAX_SLOTS; ++i) {
    if (g_used[i].load() && g_paths[i][0] != '\0') ::unlink(g_paths[i].data());
  }
}

void install_cleanup_signal_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
}

bool ScratchDir::is_plain_name(std::string_view name) {
  return !name.empty() && name.size() < 200 && name != "." && name != ".." &&
         name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

ScratchDir::ScratchDir(const std::string& dir, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path resolved = fs::canonical(dir, ec);
  if (ec || !fs::is_directory(resolved)) {
    throw UsageError(flag, "an existing directory", "\"" + dir + "\"" + (ec ? " (" + ec.message() + ")" : ""));
  }
  path_ = resolved.string();
  dir_fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) throw UsageError(flag, "a directory this user can open", "\"" + dir + "\": " + std::strerror(errno));
  if (::faccessat(dir_fd_, ".", W_OK, 0) != 0) {
    ::close(dir_fd_);
    throw UsageError(flag, "a directory this user can write", "\"" + dir + "\": " + std::strerror(errno));
  }
  install_cleanup_signal_handlers();
}

ScratchDir::~ScratchDir() { ::close(dir_fd_); }

std::string ScratchDir::unique_name(std::string_view stem) {
  return "trainsim-calibrate-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++) + "-" +
         std::string(stem) + ".tmp";
}

ScratchFile ScratchDir::create(std::string_view name, int extra_open_flags) {
  if (!is_plain_name(name)) {
    throw CalibrationError("refusing to create \"" + std::string(name) + "\": only plain file names inside " + path_ +
                           " are allowed (no '/', no \"..\")");
  }
  const std::string n(name);
  const std::string full = path_ + "/" + n;
  // Register before creating, so an interrupt between the two still removes the file.
  const int slot = register_cleanup_path(full);
  if (slot < 0) throw CalibrationError("too many temporary files at once in " + path_);
  // openat on the directory descriptor: the file is created in the directory we resolved and
  // checked, even if the path is renamed or replaced by a link meanwhile.
  const int fd = ::openat(dir_fd_, n.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | extra_open_flags, 0600);
  if (fd < 0) {
    const int err = errno;
    unregister_cleanup_path(slot);
    std::string why = std::strerror(err);
    if (err == EINVAL && (extra_open_flags & O_DIRECT)) why += " (this filesystem does not support O_DIRECT)";
    throw CalibrationError("cannot create " + full + ": " + why);
  }
  return ScratchFile(dir_fd_, fd, n, full, slot);
}

ScratchFile::ScratchFile(int dir_fd, int fd, std::string name, std::string path, int slot)
    : dir_fd_(dir_fd), fd_(fd), name_(std::move(name)), path_(std::move(path)), slot_(slot) {}

ScratchFile::ScratchFile(ScratchFile&& other) noexcept
    : dir_fd_(other.dir_fd_), fd_(other.fd_), name_(std::move(other.name_)), path_(std::move(other.path_)),
      slot_(other.slot_) {
  other.fd_ = -1;
  other.slot_ = -1;
}

ScratchFile::~ScratchFile() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlinkat(dir_fd_, name_.c_str(), 0);
  unregister_cleanup_path(slot_);
}

}  // namespace trainsim::calibrate
