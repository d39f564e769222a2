#pragma once
// trainsim-bench's soundness section (issue 38): the planner's property suites in full
// (tests/planner/property_suite.hpp, TRAINSIM_SUITE_SIZE=full): the memory model against the
// replay over random strategies of every family, every gradient byte accounted for, and every
// pruned configuration of several searches replayed. Writes soundness.json and soundness.md.

#include <string>

namespace trainsim::bench {

// `property_test`: the built tests/planner_property_test. Throws if it cannot run; a failing
// suite is written down as failing, never hidden.
void soundness_section(const std::string& property_test, const std::string& out_dir, const std::string& date,
                       const std::string& command);

}  // namespace trainsim::bench
