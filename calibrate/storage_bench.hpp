#pragma once
// Sequential O_DIRECT read and write bandwidth of the storage that holds --storage-dir, by block
// size and queue depth, through io_uring (or libaio). Every sector written carries its own file
// offset and every sector read is checked against it, so a wrong offset, a short read or stale
// data fails the run instead of producing a number.

#include <cstddef>
#include <string>
#include <vector>

#include "async_io.hpp"
#include "options.hpp"
#include "results.hpp"
#include "scratch_dir.hpp"

namespace trainsim::calibrate {

inline constexpr std::size_t SECTOR_BYTES = 4096;  // O_DIRECT alignment and the check granularity

// Reads and writes at once, as the reference step's optimizer streams its states
// (calibrate/reference/storage_states.cpp): each stream (one per rank) keeps one chunk read and one
// chunk written in flight together, in REQUEST_BYTES requests on its own io_uring, on two files of
// its own, and waits for both before the next pair. Bench "storage_mixed", series "read", "write"
// (bytes of that direction over the sample's wall time, all streams together) and "combined"
// (both directions), one record per stream count; fdatasync of the written files inside the timing.
struct MixedStorageConfig {
  std::size_t chunk_bytes = std::size_t{48} << 20;    // 4 Mi parameters x 12 bytes (master, m, v)
  std::size_t request_bytes = std::size_t{8} << 20;   // the reference's request size
  std::vector<int> streams = {1, 2};
  std::size_t file_bytes = std::size_t{1} << 30;      // per file; reads and writes wrap inside it
  double sample_seconds = 1.0;
  int samples = 5;
  std::string backend = "auto";
};
struct StorageConfig {
  std::vector<std::size_t> block_bytes;
  std::vector<int> depths;
  std::size_t file_bytes = 0;
  double sample_seconds = 0;  // target duration of one timed sample
  int samples = 0;
  std::string backend = "auto";
  MixedStorageConfig mixed;  // run after the sweeps, with the same backend
};

StorageConfig storage_config(Mode mode);

// Page-aligned host buffers for O_DIRECT (malloc'ed; the GPU pipeline pins its own).
class AlignedBuffers {
 public:
  AlignedBuffers(int count, std::size_t bytes);
  ~AlignedBuffers();
  AlignedBuffers(const AlignedBuffers&) = delete;
  AlignedBuffers& operator=(const AlignedBuffers&) = delete;
  void* at(int i) const { return buffers_[static_cast<std::size_t>(i)]; }
  int count() const { return static_cast<int>(buffers_.size()); }

 private:
  std::vector<void*> buffers_;
};

// The check pattern: the first 8 bytes of each sector hold its file offset mixed with a constant.
void stamp_sectors(void* buffer, std::size_t bytes, std::size_t file_offset);
std::size_t count_bad_sectors(const void* buffer, std::size_t bytes, std::size_t file_offset);

// Where the next sequential request goes; wraps at the end of the file.
struct Cursor {
  std::size_t file_bytes = 0;
  std::size_t next = 0;
  std::size_t take(std::size_t block);
};

// Moves `total` bytes sequentially with `depth` requests of `block` bytes in flight, checking
// every read, and returns the seconds taken (an fdatasync is inside the timing for writes).
double sequential_transfer(AsyncIo& io, int fd, bool write, std::size_t block, int depth, std::size_t total,
                           Cursor& cursor, const AlignedBuffers& buffers);

// Creates a file of `bytes` inside `dir`, written in full with the check pattern (O_DIRECT).
ScratchFile create_pattern_file(ScratchDir& dir, std::size_t bytes, const std::string& backend = "auto");

void run_mixed_storage_bench(const MixedStorageConfig& config, ScratchDir& dir, Results& results);

void run_storage_bench(const StorageConfig& config, ScratchDir& dir, Results& results);

}  // namespace trainsim::calibrate
