#pragma once
// Strategy families, registered by name with a one-line description (a wrong name lists the
// valid ones): what `trainsim compare --families` puts side by side and `plan --families`
// restricts the search to. A family is a predicate on a strategy; families may overlap
// (megatron-3d is a kind of 1f1b or interleaved pipeline).

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strategy.hpp"

namespace trainsim::planner {

struct Family {
  std::string_view name;
  std::string_view description;
  std::function<bool(const wl::Strategy&)> contains;
  // The pipeline schedule every strategy of the family runs, where one does (its facts,
  // wl::schedule_facts, say whether the family is asynchronous).
  std::optional<wl::Schedule> schedule = std::nullopt;
};

const std::vector<Family>& families();

// `--families zero3,gpipe`: each name looked up, in the order given; an unknown or repeated name
// is a ConfigError naming `flag` and listing the valid names.
std::vector<const Family*> parse_families(const std::string& list, const std::string& flag);

// The first registered family a strategy belongs to ("zero3", "megatron-3d", ...).
std::string_view family_of(const wl::Strategy& s);

}  // namespace trainsim::planner
