#pragma once
// The JSON documents `trainsim validate` reads beside traces and allocator records: measured runs,
// trace sidecars and trace summaries. Each is a regular file of at most MAX_INPUT_FILE_BYTES
// (input_file.hpp), nested at most MAX_JSON_DEPTH deep, and the document built from it holds at
// most MEASURED_JSON_LIMITS: 16 MiB of "[]," once built 490 MB. The largest committed measured run
// holds 7,397 JSON values and builds under 1 MB. Past a limit, a ConfigError naming the file and
// the limit.

#include <optional>
#include <string>
#include <string_view>

#include "strict_json.hpp"

namespace trainsim::planner {

inline constexpr JsonLimits MEASURED_JSON_LIMITS{std::size_t{1} << 20, std::size_t{64} << 20};

// The document at `path`, read and built under the limits above.
JsonDocument parse_measured_json(const std::string& path);

// What a file given as a measured run holds at its top level, learnt without building it: a
// profiler trace (an object with "traceEvents", which read_profiler_trace streams), or the
// document's "kind" (a directory of runs skips what is not a measured run, whatever its size).
struct MeasuredFileKind {
  bool trace = false;
  std::optional<std::string> kind;  // a top-level "kind" string
  bool json = true;                 // false: not valid JSON (parse_measured_json says where)
};
MeasuredFileKind measured_file_kind(std::string_view text);

}  // namespace trainsim::planner
