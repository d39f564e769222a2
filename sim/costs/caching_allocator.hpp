#pragma once
// PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, native, without expandable
// segments or a max_split_size), as a model: what `torch.cuda.max_memory_reserved` becomes for a
// sequence of requests and frees (workloads/stacks/training_stacks.md, "Allocator").
//
// The rules it keeps:
// - every request is rounded up to a multiple of 512 bytes;
// - requests up to 1 MiB come from the small pool, larger ones from the large pool;
// - a request is served by the smallest cached free block of its pool and stream that fits (ties:
//   the lowest address); a block belongs to the stream it was first allocated on (its segment's)
//   and serves only requests of that stream;
// - without one, a new segment is reserved: 2 MiB for the small pool, 20 MiB for requests below
//   10 MiB, else the request rounded up to 2 MiB;
// - the block found is split when what remains is at least 512 bytes (small pool) or more than 1 MiB
//   (large pool); otherwise the whole block is handed out and counted as allocated;
// - a freed block merges with free neighbours of its segment; segments stay reserved until
//   empty_cache(), which returns the segments with nothing allocated in them.
// Checked against the allocator's own record of the measured rows' configurations
// (reports/validation/allocator/, tests/validation/allocator_trace_test.cpp).

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

namespace trainsim::sim {

class CachingAllocator {
 public:
  using Bytes = std::uint64_t;
  using Stream = std::int64_t;
  using BlockId = std::size_t;

  static constexpr Bytes MIN_BLOCK = 512;
  static constexpr Bytes SMALL_SIZE = Bytes{1} << 20;       // largest small-pool request
  static constexpr Bytes SMALL_SEGMENT = Bytes{2} << 20;    // small-pool segment
  static constexpr Bytes MIN_LARGE_ALLOC = Bytes{10} << 20; // below this a large request takes...
  static constexpr Bytes LARGE_SEGMENT = Bytes{20} << 20;   // ...a segment of 20 MiB
  static constexpr Bytes ROUND_LARGE = Bytes{2} << 20;      // larger segments round to 2 MiB

  static Bytes rounded(Bytes request);
  static Bytes segment_size(Bytes rounded_request);

  CachingAllocator();
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A request of `bytes` on `stream`; the id names the block until it is freed.
  BlockId malloc(Bytes bytes, Stream stream);
  void free(BlockId block);
  // A segment already reserved (a snapshot's): its blocks in address order, each allocated or not;
  // the ids of the allocated ones, in that order.
  std::vector<BlockId> adopt_segment(Stream stream, bool small_pool, const std::vector<std::pair<Bytes, bool>>& blocks);
  void empty_cache();

  Bytes reserved() const { return reserved_; }
  Bytes allocated() const { return allocated_; }
  Bytes peak_reserved() const { return peak_reserved_; }
  Bytes peak_allocated() const { return peak_allocated_; }
  std::size_t segments() const { return segments_; }

 private:
  struct Block;
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  Block* new_block();
  Block* find_free(Bytes size, Stream stream, bool small);
  void count_allocated(Bytes add);

  std::vector<std::unique_ptr<Block>> blocks_;  // every block ever made; ids index it
  std::vector<BlockId> spare_;                  // ids of merged-away blocks, for reuse
  std::set<Block*, BySize> small_free_, large_free_;
  Bytes next_address_ = Bytes{1} << 40;
  Bytes reserved_ = 0, allocated_ = 0, peak_reserved_ = 0, peak_allocated_ = 0;
  std::size_t segments_ = 0;
};

}  // namespace trainsim::sim
