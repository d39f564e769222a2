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


const std::string EXPECTED = fmt::format("a readable regular file of at most {} MiB", MAX_INPUT_FILE_BYTES >> 20);

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

}  // namespace

int open_regular_file(const std::string& path, const std::string& expected) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (fd.get() < 0) {
    const int err = errno;
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

std::string read_input_file(const std::string& path) {
  FileDescriptor fd(open_regular_file(path, EXPECTED));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    throw ConfigError(path, "(file)", EXPECTED, fmt::format("a file that cannot be examined ({})", std::strerror(errno)));
  }
  if (static_cast<std::size_t>(st.st_size) > MAX_INPUT_FILE_BYTES) {
    throw ConfigError(path, "(file)", EXPECTED, "a file of " + size_text(static_cast<double>(st.st_size)));
  }
  // Read at most one byte past the limit: a file that grows while we read is still bounded.
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t used = 0;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ConfigError(path, "(file)", EXPECTED, fmt::format("a read error ({})", std::strerror(errno)));
    if (n == 0) break;
    if (used + static_cast<std::size_t>(n) > MAX_INPUT_FILE_BYTES) {
      throw ConfigError(path, "(file)", EXPECTED, "a file that grew past the limit while being read");
    }
    if (used + static_cast<std::size_t>(n) > text.size()) text.resize(used + static_cast<std::size_t>(n));
    std::memcpy(text.data() + used, chunk, static_cast<std::size_t>(n));
    used += static_cast<std::size_t>(n);
  }
  text.resize(used);
  return text;
}

}  // namespace trainsim
