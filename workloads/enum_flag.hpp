#pragma once
// A flag's value read as one of an enum's spellings (enum_names.hpp): the value, or a ConfigError
// naming the flag, every spelling and the one the user most likely meant ("did you mean").

#include <string>
#include <string_view>
#include <vector>

#include "config_error.hpp"
#include "enum_names.hpp"
#include "strict_json.hpp"

namespace trainsim::wl::names {

template <class E, std::size_t N>
E parse_flag(const std::string& flag, std::string_view text, const Table<E, N>& table) {
  if (const E* v = parse(text, table)) return *v;
  std::vector<std::string_view> spellings;
  for (const auto& entry : table) spellings.push_back(entry.second);
  throw ConfigError(flag, flag, "one of " + join_names(spellings), "\"" + std::string(text) + "\"" + did_you_mean(text, spellings));
}

}  // namespace trainsim::wl::names
