#pragma once
// trainsim-bench's planner section (issue 9): `trainsim plan` on the 1T model over DGX-2 nodes,
// cold and warm, against the targets; writes plan_bench.json and plan.md into `out_dir`.

#include <string>

namespace trainsim::bench {

void plan_section(const std::string& trainsim, const std::string& out_dir, int repeat, const std::string& date,
                  const std::string& command);

}  // namespace trainsim::bench
