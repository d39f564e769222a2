#include "stack_capabilities.hpp"

#include <fmt/format.h>

#include "stack_model.hpp"

namespace trainsim::wl {

std::optional<StackRefusal> stack_cannot_run(const Strategy& s, const ModelSpec& m) {
  const StackModel& stack = stack_model(s);
  if (stack.refusals == nullptr) return std::nullopt;
  const std::string name(to_string(s.stack.kind));
  std::optional<StackRefusal> out;
  stack.refusals(s, m, [&](bool ok, const std::string& what, const std::string& got) {
    if (!ok && !out) out = StackRefusal{fmt::format("{} for stack {}", what, name), got};
  });
  return out;
}

}  // namespace trainsim::wl
