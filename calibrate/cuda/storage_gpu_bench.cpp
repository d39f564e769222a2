// Storage -> pinned host memory -> GPU, as ZeRO-Infinity streams parameters and optimizer state
// from NVMe: O_DIRECT reads into a ring of pinned buffers, each copied to the GPU as soon as it
// arrives and refilled once its copy is done. Every block is checked twice: its sectors when it
// lands in host memory, and the last block again after the trip to the GPU and back.
#include <chrono>
#include <deque>
#include <memory>

#include "../gpu_benchmarks.hpp"
#include "../storage_bench.hpp"
#include "cuda_check.hpp"
#include "device_memory.hpp"

namespace trainsim::calibrate {
namespace {

constexpr std::size_t MiB = 1u << 20;
constexpr std::size_t DEVICE_RING_BYTES = 256 * MiB;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Pipeline {
  AsyncIo& io;
  int fd;
  std::size_t block;
  int depth;
  std::vector<std::unique_ptr<PinnedBuffer>> pinned;
  std::vector<std::unique_ptr<Event>> copied;
  DeviceBuffer& ring;
  const Stream& stream;
  Cursor& cursor;
  std::size_t ring_next = 0;
  std::size_t last_file_offset = 0, last_ring_offset = 0;

  // Moves `total` bytes from the file to the GPU; returns seconds until the last copy finished.
  double run(std::size_t total) {
    const std::size_t requests = std::max<std::size_t>(1, total / block);
    std::vector<std::size_t> offset_of(static_cast<std::size_t>(depth));
    std::deque<int> copying;
    std::vector<IoCompletion> done;
    std::size_t issued = 0, copies = 0;
    int reading = 0;
    auto read_into = [&](int slot) {
      offset_of[static_cast<std::size_t>(slot)] = cursor.take(block);
      io.prepare(false, fd, pinned[static_cast<std::size_t>(slot)]->get(), block,
                 static_cast<off_t>(offset_of[static_cast<std::size_t>(slot)]), static_cast<std::uint64_t>(slot));
      ++issued;
      ++reading;
    };
    // The first failure stops new reads; those in flight are waited for before throwing, since
    // the kernel writes into their pinned buffers until they complete.
    std::string error;
    const double t0 = now_s();
    for (int slot = 0; slot < depth && issued < requests; ++slot) read_into(slot);
    io.submit();
    while (copies < requests && (error.empty() || reading > 0)) {
      // Refill every slot whose copy to the GPU has finished.
      bool refilled = false;
      while (!copying.empty()) {
        const cudaError_t q = cudaEventQuery(copied[static_cast<std::size_t>(copying.front())]->get());
        if (q == cudaErrorNotReady && reading > 0) break;
        if (q == cudaErrorNotReady) {
          CUDA_CHECK(cudaEventSynchronize(copied[static_cast<std::size_t>(copying.front())]->get()));
        } else {
          CUDA_CHECK(q);
        }
        const int slot = copying.front();
        copying.pop_front();
        if (issued < requests && error.empty()) {
          read_into(slot);
          refilled = true;
        }
      }
      if (refilled) io.submit();
      if (reading == 0) continue;
      done.clear();
      io.wait(done);
      for (const auto& c : done) {
        const int slot = static_cast<int>(c.tag);
        --reading;
        const std::size_t off = offset_of[static_cast<std::size_t>(slot)];
        if (!error.empty()) continue;
        if (c.result != static_cast<long>(block)) {
          error = "storage read for the GPU pipeline failed at offset " + std::to_string(off);
          continue;
        }
        if (count_bad_sectors(pinned[static_cast<std::size_t>(slot)]->get(), block, off) != 0) {
          error = "storage-to-GPU check failed: the block at " + std::to_string(off) + " is wrong";
          continue;
        }
        if (ring_next + block > ring.bytes()) ring_next = 0;
        CUDA_CHECK(cudaMemcpyAsync(ring.as<char>() + ring_next, pinned[static_cast<std::size_t>(slot)]->get(), block,
                                   cudaMemcpyHostToDevice, stream.get()));
        copied[static_cast<std::size_t>(slot)]->record(stream.get());
        last_file_offset = off;
        last_ring_offset = ring_next;
        ring_next += block;
        copying.push_back(slot);
        ++copies;
      }
    }
    stream.sync();
    if (!error.empty()) throw CalibrationError(error);
    return now_s() - t0;
  }
};

}  // namespace

void run_storage_gpu_bench(Mode mode, const GpuInfo& info, ScratchDir& dir, Results& results) {
  const bool quick = mode == Mode::QUICK;
  const std::size_t file_bytes = (quick ? 1024 : 2048) * MiB;
  const std::size_t volume = (quick ? 512 : 1024) * MiB;
  const std::vector<std::size_t> blocks = quick ? std::vector<std::size_t>{4 * MiB}
                                                : std::vector<std::size_t>{1 * MiB, 4 * MiB, 8 * MiB};
  const int depth = 16;
  const int dev = info.devices.front().index;
  DeviceGuard guard(dev);
  ScratchFile file = create_pattern_file(dir, file_bytes);
  DeviceBuffer ring(dev, DEVICE_RING_BYTES);
  Stream stream(dev);
  Cursor cursor{file_bytes, 0};
  auto io = open_async_io(depth);
  for (std::size_t block : blocks) {
    Pipeline p{*io, file.fd(), block, depth, {}, {}, ring, stream, cursor};
    for (int i = 0; i < depth; ++i) {
      p.pinned.push_back(std::make_unique<PinnedBuffer>(block));
      p.copied.push_back(std::make_unique<Event>(dev, cudaEventDisableTiming));
    }
    p.run(std::min(volume / 4, file_bytes));  // warm-up
    std::vector<double> seconds;
    for (int s = 0; s < 3; ++s) seconds.push_back(p.run(volume));
    std::vector<unsigned char> back(block);
    CUDA_CHECK(cudaMemcpy(back.data(), ring.as<char>() + p.last_ring_offset, block, cudaMemcpyDeviceToHost));
    if (count_bad_sectors(back.data(), block, p.last_file_offset) != 0) {
      throw CalibrationError("storage-to-GPU check failed: the last block differs after the copy to the GPU");
    }
    Measurement m;
    m.bench = "storage_gpu";
    m.what = "storage_to_gpu";
    m.params = {{"block_bytes", block}, {"depth", depth},   {"bytes_per_sample", volume},
                {"gpu", dev},           {"io", std::string(io->backend())}, {"o_direct", true}};
    m.unit = "GBps";
    m.stats = summarize(rates(static_cast<double>(volume) / 1e9, seconds));
    m.check = "every 4 KiB sector checked on arrival in pinned memory; the last block read back from the GPU and "
              "checked again";
    results.add(std::move(m));
  }
}

}  // namespace trainsim::calibrate
