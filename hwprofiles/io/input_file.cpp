#include "input_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "config_error.hpp"

namespace trainsim {
namespace {

std::string expected_for(std::size_t max_bytes) {
  return fmt::format("a readable regular file of at most {} MiB", max_bytes >> 20);
}

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string size_text(double bytes) { return fmt::format("{:.1f} MiB", bytes / 1048576.0); }

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// open_regular_file, or -1 when nothing is at `path` and `absent_is_empty`.
int open_regular(const std::string& path, const std::string& expected, bool absent_is_empty) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT && absent_is_empty) return -1;
    const std::string why = err == ENOENT ? "a path that does not exist"
                            : err == EACCES ? "a file this user may not read"
                                            : fmt::format("a file that cannot be opened ({})", std::strerror(err));
    throw ConfigError(path, "(file)", expected, why);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    throw ConfigError(path, "(file)", expected, fmt::format("a file that cannot be examined ({})", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) throw ConfigError(path, "(file)", expected, kind_of(st.st_mode));
  return fd.release();
}

std::optional<std::string> read_regular(const std::string& path, std::size_t max_bytes, bool absent_is_empty) {
  const std::string expected = expected_for(max_bytes);
  FileDescriptor fd(open_regular(path, expected, absent_is_empty));
  if (fd.get() < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    throw ConfigError(path, "(file)", expected, fmt::format("a file that cannot be examined ({})", std::strerror(errno)));
  }
  if (static_cast<std::size_t>(st.st_size) > max_bytes) {
    throw ConfigError(path, "(file)", expected, "a file of " + size_text(static_cast<double>(st.st_size)));
  }
  // Read at most one byte past the limit: a file that grows while we read is still bounded.
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t used = 0;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ConfigError(path, "(file)", expected, fmt::format("a read error ({})", std::strerror(errno)));
    if (n == 0) break;
    if (used + static_cast<std::size_t>(n) > max_bytes) {
      throw ConfigError(path, "(file)", expected, "a file that grew past the limit while being read");
    }
    if (used + static_cast<std::size_t>(n) > text.size()) text.resize(used + static_cast<std::size_t>(n));
    std::memcpy(text.data() + used, chunk, static_cast<std::size_t>(n));
    used += static_cast<std::size_t>(n);
  }
  text.resize(used);
  return text;
}

}  // namespace

int open_regular_file(const std::string& path, const std::string& expected) { return open_regular(path, expected, false); }

std::string read_input_file(const std::string& path) { return *read_regular(path, MAX_INPUT_FILE_BYTES, false); }

std::optional<std::string> read_input_file_if_present(const std::string& path, std::size_t max_bytes) {
  return read_regular(path, max_bytes, true);
}

}  // namespace trainsim
