#pragma once
// A file read whole or a chunk at a time, gunzipped when it is gzipped (plain files come through
// unchanged): profiler traces and allocator records are committed as .json.gz. Either way the
// decoded size is bounded: a 4.9 MB gzip unpacks to 5 GB of spaces, and nothing a user gives may
// exhaust the machine.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim {

// The decoded bytes of a (maybe gzipped) regular file, a chunk at a time, at most `max_bytes` in
// all: past that, a ConfigError naming the file and the limit (what only, "... of at most N MiB
// once unpacked"). Memory: one chunk.
class BoundedFileReader {
 public:
  BoundedFileReader(const std::string& path, std::string_view what, std::size_t max_bytes);
  ~BoundedFileReader();
  BoundedFileReader(const BoundedFileReader&) = delete;
  BoundedFileReader& operator=(const BoundedFileReader&) = delete;

  // The next decoded chunk; empty at the end of the file.
  std::string_view next();
  std::size_t decoded_bytes() const { return decoded_; }
  const std::string& path() const { return path_; }
  // "a readable profiler trace ... of at most 1024 MiB once unpacked": what the limit error says.
  std::string limit_text() const;

 private:
  std::string path_, what_;
  std::size_t max_bytes_;
  std::size_t decoded_ = 0;
  void* file_ = nullptr;  // gzFile
  std::vector<char> buffer_;
};

// Throws ConfigError naming `path`, with `what` as the expectation ("a readable profiler trace
// ..."), when the file cannot be opened or read, or holds more than `max_bytes` once unpacked.
std::string read_maybe_gzipped(const std::string& path, std::string_view what, std::size_t max_bytes);

}  // namespace trainsim
