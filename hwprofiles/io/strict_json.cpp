#include "strict_json.hpp"

#include <fmt/format.h>

#include <cmath>

namespace trainsim {

bool NumberRange::contains(double v) const {
  if (!std::isfinite(v)) return false;
  const bool above = min_inclusive ? v >= min : v > min;
  return above && v <= max;
}

namespace {
std::string with_unit(std::string what, const std::string& unit) {
  return unit.empty() ? what : what + " (" + unit + ")";
}
}  // namespace

NumberRange positive(std::string unit) { return {0.0, INFINITY, false, with_unit("a positive number", unit)}; }
NumberRange non_negative(std::string unit) { return {0.0, INFINITY, true, with_unit("a number >= 0", unit)}; }
NumberRange fraction() { return {0.0, 1.0, false, "a fraction in (0, 1]"}; }

std::string join_names(std::span<const std::string_view> names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out.append(1, '"').append(names[i]).append(1, '"');
  }
  return out;
}

std::string describe_json(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::null: return "null";
    default: {
      std::string text = value.dump();
      if (text.size() > 40) text = text.substr(0, 37) + "...";
      return text;
    }
  }
}

StrictObject::StrictObject(const nlohmann::json& value, std::string source, std::string path)
    : value_(&value), source_(std::move(source)), path_(std::move(path)) {
  if (!value.is_object()) {
    throw ConfigError(source_, path_.empty() ? "(document)" : path_, "an object", describe_json(value));
  }
}

std::string StrictObject::path_of(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool StrictObject::has(std::string_view key) const {
  asked_.emplace(key);
  return value_->contains(key);
}

const nlohmann::json& StrictObject::require(std::string_view key, std::string_view expected) {
  asked_.emplace(key);
  auto it = value_->find(key);
  if (it == value_->end()) throw ConfigError(source_, path_of(key), std::string(expected), "nothing (the key is missing)");
  return *it;
}

void StrictObject::type_error(std::string_view key, std::string_view expected, const nlohmann::json& got) const {
  throw ConfigError(source_, path_of(key), std::string(expected), describe_json(got));
}

double StrictObject::number(std::string_view key, const NumberRange& range) {
  const auto& v = require(key, range.what);
  if (!v.is_number()) type_error(key, range.what, v);
  const double d = v.get<double>();
  if (!range.contains(d)) type_error(key, range.what, v);
  return d;
}

std::optional<double> StrictObject::optional_number(std::string_view key, const NumberRange& range) {
  if (!has(key)) return std::nullopt;
  return number(key, range);
}

std::int64_t StrictObject::integer(std::string_view key, std::int64_t min, std::int64_t max) {
  const std::string expected = max == std::numeric_limits<std::int64_t>::max()
                                   ? fmt::format("an integer >= {}", min)
                                   : fmt::format("an integer in [{}, {}]", min, max);
  const auto& v = require(key, expected);
  if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
                                  std::fabs(v.get<double>()) < 9e15)) {
    type_error(key, expected, v);
  }
  const auto i = v.is_number_integer() ? v.get<std::int64_t>() : static_cast<std::int64_t>(v.get<double>());
  if (i < min || i > max) type_error(key, expected, v);
  return i;
}

std::optional<std::int64_t> StrictObject::optional_integer(std::string_view key, std::int64_t min, std::int64_t max) {
  if (!has(key)) return std::nullopt;
  return integer(key, min, max);
}

bool StrictObject::boolean(std::string_view key) {
  const auto& v = require(key, "true or false");
  if (!v.is_boolean()) type_error(key, "true or false", v);
  return v.get<bool>();
}

std::optional<bool> StrictObject::optional_boolean(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return boolean(key);
}

std::string StrictObject::string(std::string_view key) {
  const auto& v = require(key, "a string");
  if (!v.is_string()) type_error(key, "a string", v);
  return v.get<std::string>();
}

std::optional<std::string> StrictObject::optional_string(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return string(key);
}

StrictObject StrictObject::object(std::string_view key) {
  const auto& v = require(key, "an object");
  if (!v.is_object()) type_error(key, "an object", v);
  return StrictObject(v, source_, path_of(key));
}

std::optional<StrictObject> StrictObject::optional_object(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return object(key);
}

std::vector<StrictObject> StrictObject::objects(std::string_view key) {
  const auto& v = require(key, "a non-empty array of objects");
  if (!v.is_array() || v.empty()) type_error(key, "a non-empty array of objects", v);
  std::vector<StrictObject> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    out.emplace_back(v[i], source_, fmt::format("{}[{}]", path_of(key), i));
  }
  return out;
}

std::vector<double> StrictObject::numbers(std::string_view key, const NumberRange& range) {
  const std::string expected = "a non-empty array of " + range.what;
  const auto& v = require(key, expected);
  if (!v.is_array() || v.empty()) type_error(key, expected, v);
  std::vector<double> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number() || !range.contains(v[i].get<double>())) {
      throw ConfigError(source_, fmt::format("{}[{}]", path_of(key), i), range.what, describe_json(v[i]));
    }
    out.push_back(v[i].get<double>());
  }
  return out;
}

std::vector<std::int64_t> StrictObject::integers(std::string_view key, std::int64_t min, std::int64_t max) {
  const std::string expected = fmt::format("a non-empty array of integers in [{}, {}]", min, max);
  const auto& v = require(key, expected);
  if (!v.is_array() || v.empty()) type_error(key, expected, v);
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number_integer() || v[i].get<std::int64_t>() < min || v[i].get<std::int64_t>() > max) {
      throw ConfigError(source_, fmt::format("{}[{}]", path_of(key), i),
                        fmt::format("an integer in [{}, {}]", min, max), describe_json(v[i]));
    }
    out.push_back(v[i].get<std::int64_t>());
  }
  return out;
}

const nlohmann::json& StrictObject::raw(std::string_view key) { return require(key, "a value"); }

namespace {
// The unit suffixes our schemas use; "link_GBps" has stem "link" and unit "GBps".
bool is_unit(std::string_view token) {
  static constexpr std::string_view units[] = {"B",  "KiB", "MiB", "GiB",  "TiB",    "GB",    "TB",  "GBps", "Gbps",
                                               "us", "ms",  "s",   "TFLOPs", "kW",  "W",    "usd", "per_s", "GHz"};
  for (auto u : units) {
    if (u == token) return true;
  }
  return false;
}
std::string_view stem(std::string_view key) {
  const auto pos = key.rfind('_');
  return pos == std::string_view::npos ? key : key.substr(0, pos);
}
std::string_view unit(std::string_view key) {
  const auto pos = key.rfind('_');
  return pos == std::string_view::npos ? std::string_view{} : key.substr(pos + 1);
}
}  // namespace

void StrictObject::finish(std::initializer_list<std::string_view> also_allowed) const {
  for (const auto& [key, value] : value_->items()) {
    if (asked_.count(key) > 0) continue;
    bool allowed = false;
    for (auto extra : also_allowed) allowed = allowed || extra == key;
    if (allowed) continue;
    std::vector<std::string> candidates(asked_.begin(), asked_.end());
    for (auto extra : also_allowed) candidates.emplace_back(extra);
    // A unit problem deserves its own words: the key names a quantity we know without its unit,
    // or with another unit than the one this schema uses.
    for (const auto& known : candidates) {
      if (known.size() > key.size() && known.rfind(key + "_", 0) == 0 && is_unit(unit(known))) {
        throw ConfigError(source_, path_of(key), fmt::format("a unit in the key name: \"{}\"", known),
                          fmt::format("\"{}\" without a unit", key));
      }
      if (is_unit(unit(known)) && stem(known) == stem(key) && known != key) {
        throw ConfigError(source_, path_of(key), fmt::format("the key \"{}\" (the unit this schema uses)", known),
                          fmt::format("\"{}\"", key));
      }
    }
    std::vector<std::string_view> names(candidates.begin(), candidates.end());
    throw ConfigError(source_, path_of(key), "one of the known keys " + join_names(names),
                      fmt::format("the unknown key \"{}\"{}", printable(key), did_you_mean(key, names)));
  }
}

std::vector<std::string> StrictObject::unread_keys() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : value_->items()) {
    if (asked_.count(key) == 0) out.push_back(key);
  }
  return out;
}

}  // namespace trainsim
