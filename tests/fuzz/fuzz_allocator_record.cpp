// Fuzzes the caching allocator's record (planner/validate/allocator_record.cpp, `trainsim validate
// --allocator-record`) as the command reads it, from a file through the bounded gzip reader: the
// bytes as a file (plain, or gzip when they start with gzip's magic) and the same bytes gzipped;
// then its replay through the allocator model (sim/costs/caching_allocator.cpp): an accepted record's
// replayed reserved peak must come out finite and non-negative.
#include "allocator_record.hpp"
#include "fuzz_common.hpp"
#include "fuzz_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  fuzz::read_plain_and_gzipped(fuzz::as_text(data, size), [](const std::string& path) {
    const planner::AllocatorReplay r = planner::replay_allocator_record(planner::load_allocator_record(path));
    fuzz::expect_quantity("replayed reserved bytes", r.replayed_reserved_bytes);
  });
  return 0;
}
