#pragma once
// The CUDA caching allocator's own record of a run (kind "trainsim.allocator_trace", written per rank
// by reports/validation/scripts/run_step_allocator.py, `run_step.py --allocator-trace`): the segments
// it held when recording began, every request and free it served after, and the rank's measured
// max_memory_reserved. Replaying the requests through trainsim's allocator model
// (sim/costs/caching_allocator.hpp) checks that model on a user's own machine and PyTorch: `trainsim
// validate --allocator-record`.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim::planner {

struct AllocatorRecord {
  std::string source;  // the file
  std::string name;    // the run's name
  int rank = 0;
  double measured_reserved_bytes = 0;  // max_memory_reserved over the run's timed steps
  struct Segment {
    std::int64_t address = 0, stream = 0;
    bool small_pool = false;
    std::vector<std::pair<std::uint64_t, bool>> blocks;  // size, allocated; in address order
  };
  std::vector<Segment> segments_at_start;
  enum class Action : std::uint8_t { ALLOC, FREE, OTHER };  // FREE: "free_completed"
  struct Event {
    Action action = Action::OTHER;
    std::int64_t address = 0, stream = 0;
    std::uint64_t size = 0;
  };
  std::vector<Event> events;
};

// Throws ConfigError naming the file and key for anything but such a record.
AllocatorRecord load_allocator_record(const std::string& path);
// The same from the record's (unpacked) text; `source` names it in errors.
AllocatorRecord parse_allocator_record(std::string_view text, const std::string& source);

struct AllocatorReplay {
  std::string source, name;
  int rank = 0;
  std::size_t requests = 0;
  double replayed_reserved_bytes = 0, measured_reserved_bytes = 0;
  double error_pct() const { return 100 * (replayed_reserved_bytes / measured_reserved_bytes - 1); }
};

// Throws ConfigError naming the file when a free names an address no live block has, or when the
// requests would reserve more than 1 EiB (no GPU's record does; the byte counts stay exact below it).
AllocatorReplay replay_allocator_record(const AllocatorRecord& record);

// Records in a directory (every *.allocator.rank*.json.gz under it, sorted) or the one file.
std::vector<std::string> allocator_record_files(const std::string& path);

std::string allocator_replay_table(const std::vector<AllocatorReplay>& replays);
nlohmann::ordered_json allocator_replay_json(const std::vector<AllocatorReplay>& replays);

}  // namespace trainsim::planner
