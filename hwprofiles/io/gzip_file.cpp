#include "gzip_file.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <unistd.h>

#include <algorithm>

#include "config_error.hpp"
#include "input_file.hpp"

namespace trainsim {

namespace {
constexpr unsigned CHUNK_BYTES = 1 << 20;
}  // namespace

BoundedFileReader::BoundedFileReader(const std::string& path, std::string_view what, std::size_t max_bytes)
    : path_(path), what_(what), max_bytes_(max_bytes), buffer_(CHUNK_BYTES) {
  // A regular file only (a device, FIFO or directory is refused before anything is read).
  const int fd = open_regular_file(path, what_);
  gzFile f = gzdopen(fd, "rb");  // reads plain files unchanged too; owns fd from here
  if (f == nullptr) {
    ::close(fd);
    throw ConfigError(path, "(file)", what_, "cannot open");
  }
  file_ = f;
}

BoundedFileReader::~BoundedFileReader() {
  if (file_ != nullptr) gzclose(static_cast<gzFile>(file_));
}

std::string BoundedFileReader::limit_text() const {
  return fmt::format("{} of at most {} MiB once unpacked", what_, max_bytes_ >> 20);
}

std::string_view BoundedFileReader::next() {
  auto* f = static_cast<gzFile>(file_);
  // Never ask for more than one byte past the limit: the limit is exact, and reading stops there.
  const std::size_t room = max_bytes_ - decoded_ + 1;
  const unsigned ask = static_cast<unsigned>(std::min<std::size_t>(buffer_.size(), room));
  const int n = gzread(f, buffer_.data(), ask);
  if (n < 0) {
    int err = 0;
    throw ConfigError(path_, "(file)", what_, std::string("a read error: ") + gzerror(f, &err));
  }
  decoded_ += static_cast<std::size_t>(n);
  if (decoded_ > max_bytes_) throw ConfigError(path_, "(file)", limit_text(), "more");
  return {buffer_.data(), static_cast<std::size_t>(n)};
}

std::string read_maybe_gzipped(const std::string& path, std::string_view what, std::size_t max_bytes) {
  BoundedFileReader reader(path, what, max_bytes);
  std::string out;
  for (std::string_view chunk = reader.next(); !chunk.empty(); chunk = reader.next()) out.append(chunk);
  return out;
}

}  // namespace trainsim
