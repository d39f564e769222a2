#include "limits.hpp"

#include <fmt/format.h>

namespace trainsim::wl {

std::string IntLimit::text() const { return fmt::format("an integer in [{}, {}]", min, max); }

std::int64_t read_limited(StrictObject& o, std::string_view key, const IntLimit& limit) {
  return o.integer(key, limit.min, limit.max);
}

std::optional<std::int64_t> read_optional_limited(StrictObject& o, std::string_view key, const IntLimit& limit) {
  return o.optional_integer(key, limit.min, limit.max);
}

}  // namespace trainsim::wl
