#include "allocator_record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "caching_allocator.hpp"
#include "config_error.hpp"
#include "gzip_file.hpp"
#include "strict_json.hpp"

namespace trainsim::planner {
namespace {

namespace fs = std::filesystem;

// A record of a few steps is a few MB unpacked; the allocator's history holds at most 4 million
// entries (run_step_allocator.py), about 140 MB as it writes them (no spaces, some 33 bytes an
// entry), below this.
constexpr std::size_t MAX_RECORD_BYTES = std::size_t{256} << 20;
// Its four event arrays of up to 4 Mi entries each, and the segments: 20 Mi JSON values, numbers
// nearly all, built in about 640 MiB. The limits on values and on the memory they take once built
// keep any record below 1 GiB of document (a 600 MB record of "[]," would build 8 GB, 500 MB of
// short strings 3.6 GB).
constexpr JsonLimits RECORD_LIMITS{std::size_t{20} << 20, std::size_t{1} << 30};
constexpr std::int64_t MAX_BYTES = std::int64_t{1} << 50;  // no GPU holds a PiB
constexpr std::int64_t INT64_MAX_V = std::numeric_limits<std::int64_t>::max();
constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::uint64_t MAX_RESERVED = std::uint64_t{1} << 60;

std::vector<AllocatorRecord::Segment> read_segments(StrictObject& root) {
  const nlohmann::json& list = root.raw("segments_at_start");
  if (!list.is_array()) throw ConfigError(root.source(), "segments_at_start", "an array of segments", describe_json(list));
  std::vector<AllocatorRecord::Segment> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    StrictObject seg(list[i], root.source(), fmt::format("segments_at_start[{}]", i));
    AllocatorRecord::Segment s;
    s.address = seg.integer("address", 0, INT64_MAX_V - MAX_BYTES);
    const std::int64_t total = seg.integer("total_size", 1, MAX_BYTES);
    s.stream = seg.integer("stream", 0, INT64_MAX_V);
    const std::string type = seg.string("segment_type");
    if (type != "small" && type != "large") throw ConfigError(root.source(), seg.path_of("segment_type"), "\"small\" or \"large\"", "\"" + type + "\"");
    s.small_pool = type == "small";
    std::int64_t sum = 0;
    for (StrictObject& b : seg.objects("blocks")) {
      const std::int64_t size = b.integer("size", 1, MAX_BYTES);
      const bool allocated = b.boolean("allocated");
      // The allocator merges a freed block with a free neighbour: a snapshot never shows two.
      if (!allocated && !s.blocks.empty() && !s.blocks.back().second) {
        throw ConfigError(root.source(), b.path_of("allocated"), "no two free blocks side by side (the allocator merges them)", "two");
      }
      s.blocks.emplace_back(static_cast<std::uint64_t>(size), allocated);
      sum += size;
      b.finish();
      if (sum > total) break;  // reported below, before the sum can grow further
    }
    if (sum != total) {
      throw ConfigError(root.source(), seg.path_of("blocks"), fmt::format("blocks adding up to total_size ({} bytes)", total),
                        fmt::format("{} bytes", sum));
    }
    seg.finish();
    out.push_back(std::move(s));
  }
  // Segments are distinct address ranges.
  std::vector<const AllocatorRecord::Segment*> by_address;
  for (const auto& s : out) by_address.push_back(&s);
  std::sort(by_address.begin(), by_address.end(), [](const auto* a, const auto* b) { return a->address < b->address; });
  for (std::size_t i = 1; i < by_address.size(); ++i) {
    std::int64_t end = by_address[i - 1]->address;
    for (const auto& [size, allocated] : by_address[i - 1]->blocks) end += static_cast<std::int64_t>(size);
    if (end > by_address[i]->address) {
      throw ConfigError(root.source(), "segments_at_start", "segments at distinct address ranges",
                        fmt::format("a segment at {} overlapping the one before it", by_address[i]->address));
    }
  }
  return out;
}

std::vector<AllocatorRecord::Event> read_events(StrictObject& root, const std::vector<std::string>& actions) {
  StrictObject ev = root.object("events");
  const std::vector<std::int64_t> action = ev.integers("action", -1, static_cast<std::int64_t>(actions.size()) - 1);
  const std::vector<std::int64_t> addr = ev.integers("addr", 0, INT64_MAX_V);
  const std::vector<std::int64_t> size = ev.integers("size", 0, MAX_BYTES);
  const std::vector<std::int64_t> stream = ev.integers("stream", 0, INT64_MAX_V);
  for (const auto& [key, n] : {std::pair{"addr", addr.size()}, {"size", size.size()}, {"stream", stream.size()}}) {
    if (n != action.size()) {
      throw ConfigError(root.source(), ev.path_of(key), fmt::format("{} entries, one per action", action.size()), fmt::format("{}", n));
    }
  }
  ev.finish();
  std::vector<AllocatorRecord::Event> out(action.size());
  for (std::size_t i = 0; i < action.size(); ++i) {
    const std::string_view what = action[i] < 0 ? std::string_view() : std::string_view(actions[static_cast<std::size_t>(action[i])]);
    // What the model does not replay: segments returned (empty_cache, or the retry before an
    // out-of-memory error), an out-of-memory error itself, expandable segments' mappings.
    if (what == "segment_free" || what == "oom" || what == "segment_map" || what == "segment_unmap") {
      throw ConfigError(root.source(), fmt::format("events.action[{}]", i),
                        "a record without segment_free, oom, segment_map or segment_unmap (the model replays the native "
                        "allocator without empty_cache, out-of-memory retries or expandable segments)",
                        "\"" + std::string(what) + "\"");
    }
    if (what == "alloc" && size[i] == 0) {
      throw ConfigError(root.source(), fmt::format("events.size[{}]", i), "a request of at least 1 byte (PyTorch records none smaller)", "0");
    }
    out[i].action = what == "alloc" ? AllocatorRecord::Action::ALLOC
                    : what == "free_completed" ? AllocatorRecord::Action::FREE
                                               : AllocatorRecord::Action::OTHER;
    out[i].address = addr[i];
    out[i].size = static_cast<std::uint64_t>(size[i]);
    out[i].stream = stream[i];
  }
  return out;
}

}  // namespace

AllocatorRecord load_allocator_record(const std::string& path) {
  return parse_allocator_record(
      read_maybe_gzipped(path, "a readable allocator record (trainsim.allocator_trace JSON, optionally gzipped)", MAX_RECORD_BYTES), path);
}

AllocatorRecord parse_allocator_record(std::string_view text, const std::string& path) {
  const JsonDocument doc = parse_json_text(text, path, RECORD_LIMITS);
  StrictObject root(doc.json, doc.source, "");
  root.integer("schema_version", 1, 1);
  const std::string kind = root.string("kind");
  if (kind != "trainsim.allocator_trace") throw ConfigError(path, "kind", "\"trainsim.allocator_trace\"", "\"" + kind + "\"");
  AllocatorRecord r;
  r.source = path;
  r.name = root.string("name");
  r.rank = static_cast<int>(root.integer("rank", 0, 1 << 20));
  root.raw("provenance");
  std::vector<std::string> actions;
  const nlohmann::json& names = root.raw("actions");
  if (!names.is_array() || names.empty()) throw ConfigError(path, "actions", "a non-empty array of action names", describe_json(names));
  for (const auto& n : names) {
    if (!n.is_string()) throw ConfigError(path, "actions", "action names (strings)", describe_json(n));
    actions.push_back(n.get<std::string>());
  }
  StrictObject measured = root.object("measured");
  r.measured_reserved_bytes = measured.number("max_memory_reserved_timed", positive("bytes"));
  measured.number("max_memory_allocated_timed", non_negative("bytes"));
  measured.optional_number("max_memory_reserved_warmup", non_negative("bytes"));
  measured.optional_number("reserved_at_end", non_negative("bytes"));
  measured.optional_integer("warmup_steps", 0, 1 << 20);
  measured.optional_integer("timed_steps", 0, 1 << 20);
  measured.finish();
  r.segments_at_start = read_segments(root);
  root.number("reserved_at_start", non_negative("bytes"));
  root.number("allocated_at_start", non_negative("bytes"));
  root.integer("events_recorded", 0, INT64_MAX_V);
  r.events = read_events(root, actions);
  root.finish();
  return r;
}

AllocatorReplay replay_allocator_record(const AllocatorRecord& record) {
  sim::CachingAllocator a;
  std::map<std::int64_t, sim::CachingAllocator::BlockId> live;  // the block at each live address
  for (const auto& seg : record.segments_at_start) {
    const auto ids = a.adopt_segment(seg.stream, seg.small_pool, seg.blocks);
    if (a.reserved() > MAX_RESERVED) throw ConfigError(record.source, "segments_at_start", "segments of at most 1 EiB in all", "more");
    std::int64_t address = seg.address;
    std::size_t next = 0;
    for (const auto& [size, allocated] : seg.blocks) {
      if (allocated) live[address] = ids[next++];
      address += static_cast<std::int64_t>(size);
    }
  }
  AllocatorReplay out{record.source, record.name, record.rank, 0, 0, record.measured_reserved_bytes};
  for (std::size_t i = 0; i < record.events.size(); ++i) {
    const auto& e = record.events[i];
    if (e.action == AllocatorRecord::Action::ALLOC) {
      if (live.contains(e.address)) {
        throw ConfigError(record.source, fmt::format("events[{}]", i), "an allocation at an address not allocated already",
                          fmt::format("address {} still allocated", e.address));
      }
      live[e.address] = a.malloc(e.size, e.stream);
      ++out.requests;
      if (a.reserved() > MAX_RESERVED) {
        throw ConfigError(record.source, fmt::format("events[{}]", i), "requests that reserve at most 1 EiB", "more");
      }
    } else if (e.action == AllocatorRecord::Action::FREE) {
      const auto it = live.find(e.address);
      if (it == live.end()) {
        throw ConfigError(record.source, fmt::format("events[{}]", i), "a free of an address the record allocated and has not freed",
                          fmt::format("address {}", e.address));
      }
      a.free(it->second);
      live.erase(it);
    }
  }
  out.replayed_reserved_bytes = static_cast<double>(a.peak_reserved());
  return out;
}

std::vector<std::string> allocator_record_files(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return {path};
  std::vector<std::string> out;
  std::string last = path;  // a failed step is entering the last entry seen, or leaving it
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    last = it->path().generic_string();
    if (it.depth() >= 32) throw ConfigError(last, "(directory)", "directories nested at most 32 deep under " + path, "deeper");
    if (name.find(".allocator.rank") == std::string::npos || !name.ends_with(".json.gz")) continue;
    // Every entry named as a record is read, through the reader that refuses what is not a regular
    // file (a FIFO, a device, a link that loops), rather than skipped in silence; a directory so
    // named is walked into instead.
    const bool directory = it->is_directory(ec);
    if (ec) throw ConfigError(last, "(file)", "a readable allocator record", ec.message());
    if (!directory) out.push_back(last);
  }
  if (ec) throw ConfigError(last, "(directory)", "a readable directory of allocator records under " + path, ec.message());
  if (out.empty()) throw ConfigError(path, "(directory)", "allocator records (*.allocator.rankR.json.gz) under the directory", "none");
  std::sort(out.begin(), out.end());
  return out;
}

std::string allocator_replay_table(const std::vector<AllocatorReplay>& replays) {
  std::string out = fmt::format("{:<44} {:>4} {:>9} {:>14} {:>14} {:>9}\n", "record", "rank", "requests", "replayed", "measured",
                                "error");
  double worst = 0, sum = 0;
  for (const auto& r : replays) {
    out += fmt::format("{:<44} {:>4} {:>9} {:>10.3f} GiB {:>10.3f} GiB {:>+8.2f}%\n", r.name, r.rank, r.requests,
                       r.replayed_reserved_bytes / GiB, r.measured_reserved_bytes / GiB, r.error_pct());
    worst = std::max(worst, std::fabs(r.error_pct()));
    sum += std::fabs(r.error_pct());
  }
  out += fmt::format("\nreserved peak (max_memory_reserved) replayed through trainsim's caching-allocator model "
                     "(sim/costs/caching_allocator.hpp): mean |error| {:.2f}%, worst {:.2f}%, over {} record{}\n",
                     replays.empty() ? 0.0 : sum / static_cast<double>(replays.size()), worst, replays.size(), replays.size() == 1 ? "" : "s");
  return out;
}

nlohmann::ordered_json allocator_replay_json(const std::vector<AllocatorReplay>& replays) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["kind"] = "trainsim.allocator_replay";
  j["provenance"] = {{"tool", std::string("trainsim ") + TRAINSIM_VERSION},
                     {"command", "trainsim validate --allocator-record"},
                     {"model", "sim/costs/caching_allocator.hpp"}};
  j["records"] = nlohmann::ordered_json::array();
  for (const auto& r : replays) {
    j["records"].push_back({{"source", r.source},
                            {"name", r.name},
                            {"rank", r.rank},
                            {"requests", r.requests},
                            {"replayed_reserved_bytes", r.replayed_reserved_bytes},
                            {"measured_reserved_bytes", r.measured_reserved_bytes},
                            {"error_pct", r.error_pct()}});
  }
  return j;
}

}  // namespace trainsim::planner
