#pragma once
// A progress bar with an ETA on standard error, drawn only when standard error is a terminal
// (a log file or a pipe gets nothing: the answer on stdout is what matters there). Thread-safe:
// replay workers report as they finish; the bar is redrawn at most ten times a second.

#include <chrono>
#include <mutex>
#include <string>

namespace trainsim::planner {

class Progress {
 public:
  // `enabled` false: silent (tests, MPI ranks other than 0, --quiet).
  explicit Progress(bool enabled);
  ~Progress();  // clears the bar's line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // What the sweep is doing ("megatron-1t on 1..128 x dgx2") and the work it expects at most.
  void set_label(std::string label);
  // `remaining_at_most`: replays that may still be needed (the bound prunes the rest).
  void set_remaining(long remaining_at_most);
  // A replay finished (`cached`: answered by the results cache, no simulation run).
  void done_one(bool cached);

  // Clears the bar (before other messages on standard error); later reports redraw it.
  void finish();

  long replayed() const;
  long cached() const;

  // Standard error is a terminal and TERM is not "dumb".
  static bool stderr_is_terminal();

 private:
  void draw_locked(bool force);
  bool enabled_;
  mutable std::mutex mutex_;
  std::string label_;
  long done_ = 0, cached_ = 0, remaining_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;
};

}  // namespace trainsim::planner
