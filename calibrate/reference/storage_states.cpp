#include "storage_states.hpp"

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "../errors.hpp"

namespace trainsim::calibrate::ref {
namespace {

constexpr std::size_t REQUEST_BYTES = std::size_t{8} << 20;

}  // namespace

StorageStates::StorageStates(const std::string& dir, std::size_t count, std::size_t chunk, int depth,
                             const std::string& stem)
    : count_(count),
      chunk_(chunk),
      dir_(dir),
      file_(dir_.create(dir_.unique_name(stem), O_DIRECT)),
      io_(open_async_io(depth)),
      buffers_(2, chunk * 3 * sizeof(float)) {
  if (chunk_ == 0 || chunk_ % 1024 != 0) throw CalibrationError("StorageStates: chunk must be a positive multiple of 1024");
  if (static_cast<std::size_t>(depth) < 2 * ((chunk_bytes() + REQUEST_BYTES - 1) / REQUEST_BYTES)) {
    throw CalibrationError("StorageStates: queue depth too small for a read and a write of one chunk in flight");
  }
}

int StorageStates::issue(bool write, std::size_t c, void* buffer) {
  const std::size_t total = chunk_bytes();
  int n = 0;
  for (std::size_t at = 0; at < total; at += REQUEST_BYTES) {
    const std::size_t bytes = std::min(REQUEST_BYTES, total - at);
    io_->prepare(write, file_.fd(), static_cast<char*>(buffer) + at, bytes, static_cast<off_t>(c * total + at),
                 (static_cast<std::uint64_t>(write) << 63) | bytes);
    ++n;
  }
  io_->submit();
  (write ? bytes_written : bytes_read) += static_cast<double>(total);
  return n;
}

void StorageStates::drain(int requests) {
  std::vector<IoCompletion> done;
  while (requests > 0) {
    done.clear();
    io_->wait(done);
    for (const IoCompletion& d : done) {
      const long expected = static_cast<long>(d.tag & ~(std::uint64_t{1} << 63));
      if (d.result != expected) {
        // Drain the rest first: the kernel may still be writing into our buffers.
        requests -= static_cast<int>(done.size());
        while (requests > 0) {
          done.clear();
          io_->wait(done);
          requests -= static_cast<int>(done.size());
        }
        throw CalibrationError("optimizer states on storage: a " + std::string(d.tag >> 63 ? "write" : "read") +
                               " of " + std::to_string(expected) + " bytes returned " + std::to_string(d.result) +
                               (d.result < 0 ? std::string(" (") + std::strerror(static_cast<int>(-d.result)) + ")" : ""));
      }
    }
    requests -= static_cast<int>(done.size());
  }
}

void StorageStates::initialize(const std::function<void(std::size_t, std::size_t, float*)>& fill) {
  for (std::size_t c = 0; c < chunks(); ++c) {
    float* b = static_cast<float*>(buffers_.at(0));
    std::fill(b, b + 3 * chunk_, 0.0f);
    const std::size_t first = c * chunk_, n = std::min(chunk_, count_ - first);
    fill(first, n, b);
    drain(issue(true, c, b));
  }
}

void StorageStates::adam_step(const AdamHyper& hyper, const float* grads, std::uint16_t* half_params, ThreadPool& pool) {
  const Isa isa = best_isa();
  auto wait_timed = [&](int requests) {
    const auto t0 = std::chrono::steady_clock::now();
    drain(requests);
    io_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  wait_timed(issue(false, 0, buffers_.at(0)));
  for (std::size_t c = 0; c < chunks(); ++c) {
    float* cur = static_cast<float*>(buffers_.at(static_cast<int>(c % 2)));
    int pending = 0;
    if (c + 1 < chunks()) pending += issue(false, c + 1, buffers_.at(static_cast<int>((c + 1) % 2)));
    const std::size_t first = c * chunk_, n = std::min(chunk_, count_ - first);
    AdamTensors t{cur, grads + first, cur + chunk_, cur + 2 * chunk_, half_params + first, n};
    trainsim::calibrate::adam_step(hyper, t, HalfType::BF16, isa, pool);
    pending += issue(true, c, cur);
    wait_timed(pending);
  }
}

StorageProbe StorageStates::probe_stream(std::size_t n) {
  if (n == 0 || n > chunks()) {
    throw CalibrationError("storage probe: " + std::to_string(n) + " chunks asked, the state file has " +
                           std::to_string(chunks()) + " (1 to " + std::to_string(chunks()) + ")");
  }
  const double r0 = bytes_read, w0 = bytes_written;
  const auto t0 = std::chrono::steady_clock::now();
  // adam_step's loop with the update taken out: what was read into a buffer goes back from it.
  drain(issue(false, 0, buffers_.at(0)));
  for (std::size_t c = 0; c < n; ++c) {
    int pending = 0;
    if (c + 1 < n) pending += issue(false, c + 1, buffers_.at(static_cast<int>((c + 1) % 2)));
    pending += issue(true, c, buffers_.at(static_cast<int>(c % 2)));
    drain(pending);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {bytes_read - r0, bytes_written - w0, seconds};
}

void StorageStates::read_master(float* out) {
  for (std::size_t c = 0; c < chunks(); ++c) {
    float* b = static_cast<float*>(buffers_.at(0));
    drain(issue(false, c, b));
    bytes_read -= static_cast<double>(chunk_bytes());  // a check, not part of any step
    const std::size_t first = c * chunk_, n = std::min(chunk_, count_ - first);
    std::copy_n(b, n, out + first);
  }
}

}  // namespace trainsim::calibrate::ref
