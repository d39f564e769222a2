#pragma once
// Asynchronous direct I/O with a fixed number of requests in flight (the queue depth): io_uring
// where the kernel allows it, libaio otherwise. Both come from Debian and are linked statically
// so the binary needs neither shared library where it runs.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace trainsim::calibrate {

struct IoCompletion {
  std::uint64_t tag = 0;
  long result = 0;  // bytes transferred, or -errno
};

class AsyncIo {
 public:
  virtual ~AsyncIo() = default;
  virtual std::string_view backend() const = 0;
  // Queues one request; nothing reaches the kernel until submit().
  virtual void prepare(bool write, int fd, void* buffer, std::size_t bytes, off_t offset, std::uint64_t tag) = 0;
  virtual void submit() = 0;
  // Blocks until at least one request completes; appends every completion available.
  virtual void wait(std::vector<IoCompletion>& out) = 0;
};

// Opens a queue for `depth` requests in flight. `backend` is "auto" (io_uring, else libaio),
// "io_uring" or "libaio". Throws CalibrationError if the backend cannot be opened.
std::unique_ptr<AsyncIo> open_async_io(int depth, std::string_view backend = "auto");

}  // namespace trainsim::calibrate
