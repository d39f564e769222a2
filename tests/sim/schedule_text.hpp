#pragma once
// What the pipeline schedule tests share (schedule_generators_test.cpp: invariants and the
// abstract executor; schedule_orders_test.cpp: exact orders and refusals): every schedule,
// a shape in words, and a stage's order as compact text.
#include <string>
#include <string_view>
#include <vector>

#include "pipeline_schedule.hpp"

namespace trainsim::sim {

using wl::Schedule;
inline const std::vector<Schedule> SCHEDULES = {Schedule::GPIPE,     Schedule::ONE_F_ONE_B, Schedule::INTERLEAVED,
                                             Schedule::PIPEDREAM, Schedule::TWO_BW,      Schedule::HYDRA};

inline std::string describe(Schedule schedule, const PipelineShape& s) {
  return std::string(wl::to_string(schedule)) + " p=" + std::to_string(s.stages) + " m=" + std::to_string(s.micro_batches) +
         " v=" + std::to_string(s.chunks) + " steps=" + std::to_string(s.steps);
}

inline bool is_pass(const Work& w) { return w.kind == WorkKind::FORWARD || w.kind == WorkKind::BACKWARD; }

// A compact text of a stage's order: F<mb>, B<mb>, U (an update), with .<chunk> when a stage has
// several chunks and @<version> when asked.
inline std::string text_of(const StageSchedule& order, bool chunks, bool versions = false) {
  std::string out;
  for (const Work& w : order) {
    if (!out.empty()) out += ' ';
    out += w.kind == WorkKind::FORWARD ? "F" : w.kind == WorkKind::BACKWARD ? "B" : w.kind == WorkKind::OPTIMIZER_STEP ? "U" : "?";
    if (is_pass(w)) out += std::to_string(w.micro_batch);
    if (chunks) out += "." + std::to_string(w.chunk);
    if (versions) out += "@" + std::to_string(w.weight_version);
  }
  return out;
}

}  // namespace trainsim::sim
