#pragma once
// Strict JSON reading shared by every trainsim input format. A StrictObject hands out the keys a
// loader asks for, checks each value's type and range, and finish() rejects every key nobody
// asked for, so a typo or a missing unit ("link": 300 instead of "link_GBps") is an error with a
// suggestion, never a silently ignored setting.

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config_error.hpp"

namespace trainsim {

// Parsed JSON together with where it came from (a path, "built-in profile dgx2", "--strategy").
struct JsonDocument {
  nlohmann::json json;
  std::string source;
};

// Objects and arrays nest at most this deep in any input (our schemas need 4).
inline constexpr std::size_t MAX_JSON_DEPTH = 64;

// Throws ConfigError naming the source when the file cannot be read (input_file.hpp: regular
// files of bounded size only), is not valid JSON (line and column), repeats a key in an object
// (both lines), nests deeper than MAX_JSON_DEPTH or holds a number beyond a double's range.
JsonDocument parse_json_file(const std::string& path);
JsonDocument parse_json_text(std::string_view text, std::string source);
// The same with at most `max_values` JSON values (objects, arrays, strings, numbers...) in all, so
// that the document built stays a bounded multiple of the text (50 MB of "[]," once built 4 GB):
// past it, a ConfigError naming the source and the limit.
JsonDocument parse_json_text(std::string_view text, std::string source, std::size_t max_values);

// Bounds on the document a text builds, for inputs far larger than MAX_INPUT_FILE_BYTES (allocator
// records): its JSON values, and the memory they take once built, estimated per value (a number
// 16 bytes, a string its characters besides, an object's key a map node), so that 500 MB of short
// strings or small objects cannot build 3.6 GB. Past either, a ConfigError naming the source and the
// limit.
struct JsonLimits {
  std::size_t max_values = std::numeric_limits<std::size_t>::max();
  std::size_t max_built_bytes = std::numeric_limits<std::size_t>::max();
};
JsonDocument parse_json_text(std::string_view text, std::string source, const JsonLimits& limits);

// An allowed interval for a number, with the words used in error messages.
struct NumberRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_inclusive = true;
  std::string what = "a number";

  bool contains(double v) const;
};
NumberRange positive(std::string unit = {});
NumberRange non_negative(std::string unit = {});
NumberRange fraction();  // (0, 1]: efficiencies, shares

// Maps the spelling users write to an enum value; the first entry of each value is canonical.
template <class Enum>
using EnumNames = std::span<const std::pair<Enum, std::string_view>>;

std::string join_names(std::span<const std::string_view> names);

class StrictObject {
 public:
  StrictObject(const nlohmann::json& value, std::string source, std::string path);

  const std::string& source() const { return source_; }
  const nlohmann::json& json() const { return *value_; }
  // "gpu.hbm_GBps" for key "hbm_GBps" inside object "gpu".
  std::string path_of(std::string_view key) const;
  bool has(std::string_view key) const;

  double number(std::string_view key, const NumberRange& range);
  std::optional<double> optional_number(std::string_view key, const NumberRange& range);
  std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max);
  std::optional<std::int64_t> optional_integer(std::string_view key, std::int64_t min, std::int64_t max);
  bool boolean(std::string_view key);
  std::optional<bool> optional_boolean(std::string_view key);
  std::string string(std::string_view key);
  std::optional<std::string> optional_string(std::string_view key);
  StrictObject object(std::string_view key);
  std::optional<StrictObject> optional_object(std::string_view key);
  std::vector<StrictObject> objects(std::string_view key);  // a non-empty array of objects
  std::vector<double> numbers(std::string_view key, const NumberRange& range);  // non-empty
  std::vector<std::int64_t> integers(std::string_view key, std::int64_t min, std::int64_t max);
  // A key whose value is kept as it is (provenance blocks, raw measurements).
  const nlohmann::json& raw(std::string_view key);

  template <class Enum>
  Enum choice(std::string_view key, EnumNames<Enum> names) {
    const std::string text = string(key);
    for (const auto& [value, name] : names) {
      if (name == text) return value;
    }
    std::vector<std::string_view> spellings;
    for (const auto& entry : names) spellings.push_back(entry.second);
    throw ConfigError(source_, path_of(key), "one of " + join_names(spellings), "\"" + text + "\"" + did_you_mean(text, spellings));
  }
  template <class Enum>
  std::optional<Enum> optional_choice(std::string_view key, EnumNames<Enum> names) {
    if (!has(key)) return std::nullopt;
    return choice(key, names);
  }

  // Throws for the first key that no accessor asked for, with a hint when the key looks like an
  // allowed one with a missing or different unit suffix. `also_allowed` names keys that are valid
  // but were not read on this path (an optional block the loader skipped on purpose).
  void finish(std::initializer_list<std::string_view> also_allowed = {}) const;
  // For foreign formats read leniently on purpose (a Hugging Face config.json): the keys nobody
  // asked for, so the caller can report them instead of dropping them silently.
  std::vector<std::string> unread_keys() const;

 private:
  const nlohmann::json& require(std::string_view key, std::string_view expected);
  [[noreturn]] void type_error(std::string_view key, std::string_view expected, const nlohmann::json& got) const;

  const nlohmann::json* value_;
  std::string source_;
  std::string path_;
  mutable std::set<std::string, std::less<>> asked_;
};

// Short text of a JSON value for error messages ("-3", "\"fast\"", "an object").
std::string describe_json(const nlohmann::json& value);

}  // namespace trainsim
