#include "reserved_memory.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "caching_allocator.hpp"
#include "memory_timeline.hpp"

namespace trainsim::sim {
namespace {

using Bytes = CachingAllocator::Bytes;

// Events carry bytes as doubles (sums of tensor sizes); the allocator takes whole bytes.
Bytes whole_bytes(double bytes) { return static_cast<Bytes>(std::llround(bytes)); }

struct Live {
  double bytes;
  CachingAllocator::BlockId block;
  CachingAllocator::Stream stream;  // where it was requested: a remainder is requested there again
};

}  // namespace

double caching_allocator_reserved_peak(std::vector<AllocatorEvent> events) {
  std::stable_sort(events.begin(), events.end(), [](const AllocatorEvent& a, const AllocatorEvent& b) {
    return applies_before(a.time, a.bytes, b.time, b.bytes);
  });
  CachingAllocator allocator;
  std::array<std::vector<Live>, MEM_CLASSES> live;
  for (const AllocatorEvent& e : events) {
    auto& held = live[static_cast<std::size_t>(e.cls)];
    const auto stream = static_cast<CachingAllocator::Stream>(e.stream);
    if (e.bytes > 0) {
      held.push_back({e.bytes, allocator.malloc(whole_bytes(e.bytes), stream), stream});
      continue;
    }
    double owed = -e.bytes;
    const auto same = std::find_if(held.rbegin(), held.rend(), [owed](const Live& l) { return std::fabs(l.bytes - owed) < 0.5; });
    if (same != held.rend()) {
      allocator.free(same->block);
      held.erase(std::next(same).base());
      continue;
    }
    while (owed > 0.5 && !held.empty()) {
      const Live last = held.back();
      held.pop_back();
      allocator.free(last.block);
      if (last.bytes > owed + 0.5) {
        held.push_back({last.bytes - owed, allocator.malloc(whole_bytes(last.bytes - owed), last.stream), last.stream});
        owed = 0;
      } else {
        owed -= last.bytes;
      }
    }
  }
  return static_cast<double>(allocator.peak_reserved());
}

}  // namespace trainsim::sim
