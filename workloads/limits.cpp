#include "limits.hpp"

#include <fmt/format.h>

namespace trainsim::wl {

std::string IntLimit::text() const { return fmt::format("an integer in [{}, {}]", min, max); }

}  // namespace trainsim::wl
