#include "atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "errors.hpp"
#include "scratch_dir.hpp"

namespace trainsim::calibrate {
namespace {

void write_all(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw CalibrationError("cannot write " + path + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      throw CalibrationError("cannot write " + path + ": " + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) throw CalibrationError("cannot flush " + path + ": " + std::strerror(errno));
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& text) {
  AtomicFileSet set;
  set.stage(path, text);
  set.commit();
}

AtomicFileSet::~AtomicFileSet() {
  for (const auto& s : staged_) {
    ::unlink(s.temp_path.c_str());
    unregister_cleanup_path(s.slot);
  }
}

void AtomicFileSet::stage(const std::string& path, const std::string& text) {
  Staged s{path, path + ".tmp-trainsim", -1};
  s.slot = register_cleanup_path(s.temp_path);
  staged_.push_back(s);
  write_all(s.temp_path, text);
}

void AtomicFileSet::commit() {
  for (const auto& s : staged_) {
    if (std::rename(s.temp_path.c_str(), s.final_path.c_str()) != 0) {
      throw CalibrationError("cannot rename " + s.temp_path + " to " + s.final_path + ": " + std::strerror(errno));
    }
    unregister_cleanup_path(s.slot);
  }
  staged_.clear();
}

}  // namespace trainsim::calibrate
