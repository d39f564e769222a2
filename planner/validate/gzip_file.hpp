#pragma once
// A file read whole, gunzipped when it is gzipped (plain files come through unchanged): profiler
// traces and allocator records are committed as .json.gz.

#include <cstddef>
#include <string>
#include <string_view>

namespace trainsim::planner {

// Throws ConfigError naming `path`, with `what` as the expectation ("a readable profiler trace
// ..."), when the file cannot be opened or read, or holds more than `max_bytes` once unpacked.
std::string read_maybe_gzipped(const std::string& path, std::string_view what, std::size_t max_bytes);

}  // namespace trainsim::planner
