// Fuzzes the caching allocator's record (planner/validate/allocator_record.cpp, `trainsim validate
// --allocator-record`), then its replay through the allocator model (sim/caching_allocator.cpp):
// an accepted record's replayed reserved peak must come out finite and non-negative.
#include "allocator_record.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  return fuzz::guarded([&] {
    const planner::AllocatorRecord record = planner::parse_allocator_record(fuzz::as_text(data, size), "record.json");
    const planner::AllocatorReplay r = planner::replay_allocator_record(record);
    fuzz::expect_quantity("replayed reserved bytes", r.replayed_reserved_bytes);
  });
}
