#pragma once
// Flags `plan` and `compare` share, and what runs their sweeps: the results cache, the progress
// bar, the replay workers (threads here, MPI ranks across machines when launched by mpirun).

#include <CLI/CLI.hpp>
#include <chrono>
#include <optional>
#include <memory>
#include <string>

#include "mpi_executor.hpp"
#include "plan_question.hpp"
#include "replay_executor.hpp"
#include "result_cache.hpp"
#include "sweep.hpp"

namespace trainsim::cli {

struct RunFlags {
  std::string cache;  // --cache DIR (default: ResultCache::default_dir())
  bool no_cache = false;
  int jobs = 0;       // --jobs N: replay workers per process (0: one per core)
  bool quiet = false;
  std::optional<double> time_limit_s;  // --time-limit: stop replaying and answer with what was found
};

void add_question_flags(CLI::App& app, planner::PlanFlags& f, bool nodes_range);
void add_run_flags(CLI::App& app, RunFlags& r);

// Everything a sweep needs, alive for one command.
class SweepRuntime {
 public:
  explicit SweepRuntime(const RunFlags& r);
  planner::ReplayExecutor& executor() { return executor_ ? *executor_ : *local_; }
  planner::Progress& progress() { return *progress_; }
  const sim::SimOptions& options() const { return options_; }
  const planner::ResultCache& cache() const { return *cache_; }
  int jobs() const { return jobs_; }  // workers per process (--jobs; 0 became one per core)
  // This process writes the answer (MPI rank 0, or the only process).
  bool writes_output() const { return mpi_.rank() == 0; }
  // Progress summary on standard error after the sweep (replays run, cache hits).
  void report() const;
  // Why a sweep should stop now (the first SIGINT or SIGTERM, or --time-limit), or empty.
  std::string stop_reason() const;
  // The exit status after the answer is written: 128 + the signal that interrupted it, else 0.
  int exit_status() const;

 private:
  planner::MpiSession mpi_;
  sim::SimOptions options_;
  std::unique_ptr<planner::ResultCache> cache_;
  std::unique_ptr<planner::Progress> progress_;
  std::unique_ptr<planner::ReplayExecutor> local_, executor_;
  bool quiet_ = false;
  int jobs_ = 1;
  std::optional<double> time_limit_s_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace trainsim::cli
