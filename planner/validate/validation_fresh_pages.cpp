// The report's section on FSDP2's accumulating gradient copies: each run's step predicted with the
// copies' destination pages resident (the replay) and faulting in (RunValidation::fresh_pages_step_s).
#include <fmt/format.h>

#include "validation.hpp"

namespace trainsim::planner {

std::string fresh_pages_markdown(const std::vector<RunValidation>& runs) {
  std::string table;
  for (const auto& v : runs) {
    const ValidationRow* step = find_row(v, "step_time");
    if (!v.fresh_pages_step_s || step == nullptr) continue;
    const double measured = v.run.step_time_s;
    table += fmt::format("| {} | {:.1f} | {:.1f} | {:+.1f}% | {:.1f} | {:+.1f}% |\n", v.run.name, measured * 1e3, step->predicted * 1e3,
                         step->error_pct, *v.fresh_pages_step_s * 1e3, 100 * (*v.fresh_pages_step_s / measured - 1));
  }
  if (table.empty()) return {};
  return "## FSDP2 offload: the accumulating copies' pages\n\n"
         "FSDP2 copies the gradient shards of every micro-batch after a step's first into fresh pageable tensors, the host "
         "waiting. The replay costs those copies as the calibration measured such copies: into resident heap pages below "
         "glibc's 32 MiB mmap threshold. Where glibc's per-thread arena gives a copy a heap of its own, every page faults in "
         "instead (workloads/stacks/training_stacks.md, FSDP2: so for the 0.36 B GPT's copies of 4 MB and more at 2 ranks; not for "
         "the 2.65 B GPT's at 2 ranks); which copies do depends on the arena's state, which the replay does not know. The last "
         "columns cost every such copy below the threshold as faulting, at the cost per byte the same pageable-copy curve "
         "shows from the threshold up: a bound, not the prediction.\n\n"
         "| run | measured (ms) | predicted, resident pages (ms) | error | predicted, pages faulting (ms) | error |\n"
         "|---|---|---|---|---|---|\n" +
         table + "\n";
}

}  // namespace trainsim::planner
