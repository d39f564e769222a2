#pragma once
// The one error type for malformed input. Every loader (profiles, models, strategies, DeepSpeed
// and Megatron inputs, command-line flags) reports through it so the message always names the
// source (a file or a flag), the key path inside it and what was expected; the CLI maps it to
// exit code 2. A well-formed configuration that cannot run is not a ConfigError: it is an
// Infeasible answer with its reason.

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace trainsim {

class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string source, std::string key_path, std::string expected, std::string got = {});

  const std::string& source() const { return source_; }
  const std::string& key_path() const { return key_path_; }
  const std::string& expected() const { return expected_; }
  const std::string& got() const { return got_; }

 private:
  std::string source_;
  std::string key_path_;
  std::string expected_;
  std::string got_;
};

// How much of one user-given value a message echoes: enough to recognise it, never megabytes.
inline constexpr std::size_t MAX_ECHOED_BYTES = 200;

// `text` fit to be echoed in a message or a text answer: control characters escaped (\n, \r, \t,
// \xNN otherwise, so a NUL cannot cut the message and an ANSI escape cannot drive the terminal)
// and, past `max_bytes`, cut at a character boundary with "... (N bytes)" giving the full size.
std::string printable(std::string_view text, std::size_t max_bytes = MAX_ECHOED_BYTES);

// The name in `names` closest to `got` by edit distance (case-insensitive, a swap of two
// neighbouring characters counting once), if it is close enough to be the likely intent: at most a
// third of its length, and at least 1, away. Empty otherwise. For "did you mean ...".
std::string closest_name(std::string_view got, std::span<const std::string_view> names);

// " (did you mean \"x\"?)" for the closest name, or nothing.
std::string did_you_mean(std::string_view got, std::span<const std::string_view> names);

}  // namespace trainsim
