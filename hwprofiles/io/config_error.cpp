#include "config_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <vector>

namespace trainsim {

namespace {

// What we wrote ourselves (the expectation: lists of built-in names, ranges) may be longer than
// one echoed value, but is still bounded.
constexpr std::size_t MAX_EXPECTED_BYTES = 4096;
// A part of the message (the source, the key path, what we got): room for a value already cut to
// MAX_ECHOED_BYTES and the words around it, so that it is not cut twice.
constexpr std::size_t MAX_PART_BYTES = 512;

// "file.json: gpu.hbm_GBps: expected ..., got ..."; a flag is its own key: "--tp: expected ...".
// Every part passes through printable(): the source, the key path and what we got come from the
// user (unfiltered, a 5 MB key is echoed twice and a NUL inside one cuts the message at what()).
std::string config_error_message(const std::string& source, const std::string& key_path, const std::string& expected,
                                 const std::string& got) {
  std::string where = printable(source, MAX_PART_BYTES);
  if (source != key_path) where += ": " + printable(key_path, MAX_PART_BYTES);
  const std::string what = printable(expected, MAX_EXPECTED_BYTES);
  return got.empty() ? fmt::format("{}: expected {}", where, what)
                     : fmt::format("{}: expected {}, got {}", where, what, printable(got, MAX_PART_BYTES));
}

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Optimal string alignment distance (Levenshtein plus adjacent transpositions), case-insensitive.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

}  // namespace

ConfigError::ConfigError(std::string source, std::string key_path, std::string expected, std::string got)
    : std::runtime_error(config_error_message(source, key_path, expected, got)),
      source_(std::move(source)),
      key_path_(std::move(key_path)),
      expected_(std::move(expected)),
      got_(std::move(got)) {}

std::string printable(std::string_view text, std::size_t max_bytes) {
  std::size_t keep = text.size();
  if (keep > max_bytes) {
    keep = max_bytes;
    // Do not split a UTF-8 sequence: step back over continuation bytes.
    while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  }
  std::string out;
  out.reserve(keep + 16);
  for (std::size_t i = 0; i < keep; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (keep < text.size()) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

std::string closest_name(std::string_view got, std::span<const std::string_view> names) {
  // Nothing a typo of a name could be; also bounds the quadratic distance below.
  if (got.empty() || got.size() > 128) return {};
  std::string_view best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const std::string_view name : names) {
    if (name.size() > 128) continue;
    const std::size_t d = edit_distance(got, name);
    if (d < best_distance) {
      best_distance = d;
      best = name;
    }
  }
  if (best.empty()) return {};
  const std::size_t allowed = std::max<std::size_t>(1, best.size() / 3);
  return best_distance <= allowed ? std::string(best) : std::string();
}

std::string did_you_mean(std::string_view got, std::span<const std::string_view> names) {
  const std::string best = closest_name(got, names);
  return best.empty() ? std::string() : fmt::format(" (did you mean \"{}\"?)", best);
}

}  // namespace trainsim
