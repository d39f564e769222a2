#include "caching_allocator.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>

namespace trainsim::sim {

struct CachingAllocator::Block {
  BlockId id = 0;
  Bytes size = 0;
  Bytes address = 0;
  Stream stream = 0;
  bool small = false;
  bool allocated = false;
  bool live = false;  // false once merged into a neighbour (its id may be reused)
  Block* prev = nullptr;  // neighbours within the segment, by address
  Block* next = nullptr;
};

bool CachingAllocator::BySize::operator()(const Block* a, const Block* b) const {
  return std::tie(a->stream, a->size, a->address) < std::tie(b->stream, b->size, b->address);
}

CachingAllocator::CachingAllocator() = default;
CachingAllocator::~CachingAllocator() = default;

CachingAllocator::Bytes CachingAllocator::rounded(Bytes request) {
  if (request < MIN_BLOCK) return MIN_BLOCK;
  return (request + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
}

CachingAllocator::Bytes CachingAllocator::segment_size(Bytes size) {
  if (size <= SMALL_SIZE) return SMALL_SEGMENT;
  if (size < MIN_LARGE_ALLOC) return LARGE_SEGMENT;
  return (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
}

CachingAllocator::Block* CachingAllocator::new_block() {
  if (!spare_.empty()) {
    const BlockId id = spare_.back();
    spare_.pop_back();
    *blocks_[id] = Block{};
    blocks_[id]->id = id;
    blocks_[id]->live = true;
    return blocks_[id].get();
  }
  blocks_.push_back(std::make_unique<Block>());
  Block* b = blocks_.back().get();
  b->id = blocks_.size() - 1;
  b->live = true;
  return b;
}

CachingAllocator::Block* CachingAllocator::find_free(Bytes size, Stream stream, bool small) {
  auto& pool = small ? small_free_ : large_free_;
  Block key;
  key.stream = stream;
  key.size = size;
  key.address = 0;
  const auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  pool.erase(it);
  return b;
}

void CachingAllocator::count_allocated(Bytes add) {
  allocated_ += add;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
}

CachingAllocator::BlockId CachingAllocator::malloc(Bytes bytes, Stream stream) {
  const Bytes size = rounded(bytes);
  const bool small = size <= SMALL_SIZE;
  Block* b = find_free(size, stream, small);
  if (b == nullptr) {
    b = new_block();
    b->size = segment_size(size);
    b->address = next_address_;
    b->stream = stream;
    b->small = small;
    next_address_ += b->size;
    reserved_ += b->size;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
    ++segments_;
  }
  const Bytes remaining = b->size - size;
  const bool split = small ? remaining >= MIN_BLOCK : remaining > SMALL_SIZE;
  if (split) {
    Block* rest = new_block();
    rest->size = remaining;
    rest->address = b->address + size;
    rest->stream = stream;
    rest->small = small;
    rest->prev = b;
    rest->next = b->next;
    if (b->next != nullptr) b->next->prev = rest;
    b->next = rest;
    b->size = size;
    (small ? small_free_ : large_free_).insert(rest);
  }
  b->allocated = true;
  count_allocated(b->size);
  return b->id;
}

void CachingAllocator::free(BlockId id) {
  if (id >= blocks_.size() || !blocks_[id]->live || !blocks_[id]->allocated) {
    throw std::logic_error("CachingAllocator::free: block " + std::to_string(id) + " is not allocated");
  }
  Block* b = blocks_[id].get();
  b->allocated = false;
  allocated_ -= b->size;
  auto& pool = b->small ? small_free_ : large_free_;
  // Merge with a free neighbour on either side: the merged block keeps `b`, the neighbour goes.
  for (Block* n : {b->prev, b->next}) {
    if (n == nullptr || n->allocated) continue;
    pool.erase(n);
    if (n == b->prev) {
      b->address = n->address;
      b->prev = n->prev;
      if (b->prev != nullptr) b->prev->next = b;
    } else {
      b->next = n->next;
      if (b->next != nullptr) b->next->prev = b;
    }
    b->size += n->size;
    n->live = false;
    spare_.push_back(n->id);
  }
  pool.insert(b);
}

std::vector<CachingAllocator::BlockId> CachingAllocator::adopt_segment(Stream stream, bool small_pool,
                                                                        const std::vector<std::pair<Bytes, bool>>& blocks) {
  std::vector<BlockId> ids;
  Block* prev = nullptr;
  Bytes total = 0;
  for (const auto& [size, allocated] : blocks) {
    Block* b = new_block();
    b->size = size;
    b->address = next_address_ + total;
    b->stream = stream;
    b->small = small_pool;
    b->allocated = allocated;
    b->prev = prev;
    if (prev != nullptr) prev->next = b;
    prev = b;
    total += size;
    if (allocated) {
      count_allocated(size);
      ids.push_back(b->id);
    } else {
      (small_pool ? small_free_ : large_free_).insert(b);
    }
  }
  next_address_ += total;
  reserved_ += total;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  if (total > 0) ++segments_;
  return ids;
}

void CachingAllocator::empty_cache() {
  for (auto* pool : {&small_free_, &large_free_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->prev == nullptr && b->next == nullptr) {  // a whole segment, free
        reserved_ -= b->size;
        --segments_;
        b->live = false;
        spare_.push_back(b->id);
        it = pool->erase(it);
      } else {
        ++it;
      }
    }
  }
}

}  // namespace trainsim::sim
