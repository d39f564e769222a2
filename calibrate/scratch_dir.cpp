#include "scratch_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "errors.hpp"

namespace trainsim::calibrate {

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
  // Created and registered with interrupts held back, so an interrupt either finds the file
  // registered or finds no file. openat on the directory descriptor: the file is created in the
  // directory we resolved and checked, even if the path is renamed or replaced by a link meanwhile.
  HoldInterrupts hold;
  const int fd = ::openat(dir_fd_, n.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | extra_open_flags, 0600);
  if (fd < 0) {
    const int err = errno;
    std::string why = std::strerror(err);
    if (err == EINVAL && (extra_open_flags & O_DIRECT)) why += " (this filesystem does not support O_DIRECT)";
    throw CalibrationError("cannot create " + full + ": " + why);
  }
  const int slot = register_cleanup_path(full);
  if (slot < 0) {
    ::close(fd);
    ::unlinkat(dir_fd_, n.c_str(), 0);
    throw CalibrationError("too many temporary files at once in " + path_);
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
  HoldInterrupts hold;
  ::close(fd_);
  ::unlinkat(dir_fd_, name_.c_str(), 0);
  unregister_cleanup_path(slot_);
}

}  // namespace trainsim::calibrate
