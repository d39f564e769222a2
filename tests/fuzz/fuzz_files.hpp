#pragma once
// For the targets whose loaders read a path, not text (profiler traces, measured runs and their
// sidecars, allocator records): the fuzzed bytes as a file, in memory (memfd_create, no disk
// traffic), reached through /proc/self/fd/N like any path a user gives; and the same bytes gzipped,
// so that the gzip path of a reader meets structured text, not only the random bytes a fuzzer
// rarely turns into a valid gzip stream.

#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_common.hpp"

namespace trainsim::fuzz {

class MemoryFile {
 public:
  explicit MemoryFile(std::string_view bytes) : fd_(memfd_create("fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) fail("memfd_create");
    for (std::size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n <= 0) fail("write");
      done += static_cast<std::size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemoryFile() { ::close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] static void fail(const char* what) {
    std::perror(what);  // the harness, not the input: stop rather than report a false finding
    std::exit(1);
  }
  int fd_;
  std::string path_;
};

// One gzip member holding `bytes` (what torch.profiler's .json.gz and gzip(1) write).
inline std::string gzip(std::string_view bytes) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::string out(deflateBound(&z, static_cast<uLong>(bytes.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Runs `read(path)` on the bytes as a file and on the same bytes gzipped, each guarded (a
// ConfigError is the expected refusal, fuzz_common.hpp).
template <class Read>
void read_plain_and_gzipped(std::string_view bytes, Read read) {
  for (const std::string& form : {std::string(bytes), gzip(bytes)}) {
    guarded([&] {
      const MemoryFile file(form);
      read(file.path());
    });
  }
}

}  // namespace trainsim::fuzz
