#pragma once
// ZeRO-Infinity's storage tier for the optimizer (Rajbhandari et al. 2021, sec. 5.1 and 6.3):
// a rank's fp32 master weights and Adam moments live in one O_DIRECT file inside --storage-dir,
// chunk by chunk ([master | exp_avg | exp_avg_sq] of `chunk` parameters each), and one step
// streams them through two page-aligned host buffers: chunk c + 1 is read while CPU-Adam
// updates chunk c, then chunk c is written back (io_uring, else libaio; async_io.hpp). The fp32
// gradients and the bf16 parameters stay in host memory. CUDA-free, so it is tested here.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "../async_io.hpp"
#include "../cpu_adam.hpp"
#include "../scratch_dir.hpp"
#include "../storage_bench.hpp"
#include "../thread_pool.hpp"
#include "storage_probe.hpp"

namespace trainsim::calibrate::ref {

// The reference's transfer unit on storage: 4 Mi parameters, 48 MiB of [master | exp_avg |
// exp_avg_sq] (calibrate/cuda/ref_param_store.cpp builds its StorageStates with it; the replay's
// stack data, workloads/stacks/training_stack.cpp, states the same number).
constexpr std::size_t STATE_CHUNK_PARAMS = std::size_t{4} << 20;

class StorageStates {
 public:
  // `count` parameters; `chunk` parameters per transfer unit (a multiple of 1024). `stem` names
  // the file (ranks of one process each need their own: the scratch names count per ScratchDir).
  StorageStates(const std::string& dir, std::size_t count, std::size_t chunk = STATE_CHUNK_PARAMS, int depth = 16,
                const std::string& stem = "optimizer-states");
  // Writes the initial master weights (fill(first, n, out) writes n values starting at
  // parameter `first`) and zero moments.
  void initialize(const std::function<void(std::size_t, std::size_t, float*)>& fill);
  // One Adam step over every chunk; writes the bf16 copy of the new weights into half_params.
  void adam_step(const AdamHyper& hyper, const float* grads, std::uint16_t* half_params, ThreadPool& pool);
  // Reads the master weights back (tests and checks).
  void read_master(float* out);
  // A calibration of the storage, not a step: streams the first `chunks` chunks of the file
  // through exactly adam_step's pattern (chunk 0 read alone, then chunk c + 1 read in flight
  // while chunk c is written back, both waited for; the same two buffers, requests and queue)
  // with no Adam between: each chunk is written back as it was read, so the states are
  // unchanged. What it measures is what reads and writes in flight together move on this disk
  // now (--storage-probe-chunks: right before each timed step). Throws CalibrationError unless
  // 1 <= chunks <= chunk_count(). Its bytes count in bytes_read / bytes_written, not in io_wait_s.
  StorageProbe probe_stream(std::size_t chunks);
  std::size_t chunk_count() const { return chunks(); }
  const std::string& file_path() const { return file_.path(); }

  double bytes_read = 0, bytes_written = 0;  // since construction
  double io_wait_s = 0;                      // time spent waiting for the storage in adam_step

 private:
  std::size_t chunks() const { return (count_ + chunk_ - 1) / chunk_; }
  std::size_t chunk_bytes() const { return chunk_ * 3 * sizeof(float); }
  // Queues the whole chunk as requests of at most 8 MiB and submits them; returns how many.
  int issue(bool write, std::size_t chunk_index, void* buffer);
  void drain(int requests);

  std::size_t count_, chunk_;
  ScratchDir dir_;
  ScratchFile file_;
  std::unique_ptr<AsyncIo> io_;
  AlignedBuffers buffers_;
};

}  // namespace trainsim::calibrate::ref
