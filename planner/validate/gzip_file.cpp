#include "gzip_file.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <unistd.h>

#include "config_error.hpp"
#include "input_file.hpp"

namespace trainsim::planner {

std::string read_maybe_gzipped(const std::string& path, std::string_view what, std::size_t max_bytes) {
  // A regular file only (a device, FIFO or directory is refused before anything is read).
  const int fd = open_regular_file(path, std::string(what));
  gzFile f = gzdopen(fd, "rb");  // reads plain files unchanged too; owns fd from here
  if (f == nullptr) {
    ::close(fd);
    throw ConfigError(path, "(file)", std::string(what), "cannot open");
  }
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof(buf));
    if (n < 0) {
      int err = 0;
      const std::string why = gzerror(f, &err);
      gzclose(f);
      throw ConfigError(path, "(file)", std::string(what), "a read error: " + why);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) {
      gzclose(f);
      throw ConfigError(path, "(file)", fmt::format("{} of at most {} MiB", what, max_bytes >> 20), "more");
    }
  }
  gzclose(f);
  return out;
}

}  // namespace trainsim::planner
