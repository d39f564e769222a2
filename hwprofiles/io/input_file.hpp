#pragma once
// Reading an input file (a profile, a model, a strategy, a DeepSpeed config) with bounds, so that
// no path a user or an attacker gives can exhaust the machine: only regular files are read
// (a directory, device, FIFO or socket is refused by name, before anything is read), and only up
// to MAX_INPUT_FILE_BYTES.

#include <cstddef>
#include <optional>
#include <string>

namespace trainsim {

// 16 MiB: the largest built-in input (a calibrated profile) is about 60 KiB.
inline constexpr std::size_t MAX_INPUT_FILE_BYTES = std::size_t{16} << 20;

// The whole text of `path`. Throws ConfigError naming the path when it does not exist, cannot be
// read, is not a regular file ("got a directory") or is larger than MAX_INPUT_FILE_BYTES.
std::string read_input_file(const std::string& path);

// The same for a file that may be absent (a results-cache entry) and has its own size limit:
// nullopt when nothing is at `path`; a ConfigError as above (got: "a FIFO (named pipe)", "a file of
// 70.0 MiB", ...) for anything else that is not a readable regular file of at most `max_bytes`.
std::optional<std::string> read_input_file_if_present(const std::string& path, std::size_t max_bytes);

// Opens `path` for reading after the same checks, but for the size (a gzipped input is bounded by
// what it unpacks to): it exists, may be read and is a regular file, refused before anything is read
// otherwise, with `expected` as the error's expectation. The caller owns the descriptor.
int open_regular_file(const std::string& path, const std::string& expected);

}  // namespace trainsim
