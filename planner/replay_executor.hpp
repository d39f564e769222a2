#pragma once
// Who runs a sweep's replays. SimGrid runs one engine per process, and sim::simulate already
// forks a child for each simulation, so a pool of threads each calling it keeps every core busy
// with one simulating child apiece (sim/engine/isolation.hpp). The MPI executor (mpi_executor.hpp)
// shards the same jobs over processes on several machines.
//
// An executor answers jobs in the order given, whatever order they finish in, so the sweep above
// it is deterministic; each answer comes from the results cache when it holds one.

#include <memory>
#include <string>
#include <vector>

#include "estimator.hpp"
#include "progress.hpp"
#include "result_cache.hpp"

namespace trainsim::planner {

struct ReplayJob {
  Config config;
  std::string key;  // ResultCache::key_text
  double lower_bound_s = 0;  // the step-time bound proven for it: a cached result below it is not used
};

struct ReplayOutcome {
  sim::SimResult result;
  bool cached = false;
  std::string error;  // the simulator failed (an internal error): the sweep reports it, never ranks it
};

class ReplayExecutor {
 public:
  virtual ~ReplayExecutor() = default;
  virtual std::vector<ReplayOutcome> run(const std::vector<ReplayJob>& jobs) = 0;
};

// `threads` workers (0: one per online core).
std::unique_ptr<ReplayExecutor> make_local_executor(int threads, const ResultCache& cache, const sim::SimOptions& options,
                                                    Progress& progress);

// One job in this thread: the cache, else the replay (stored in the cache).
ReplayOutcome run_job(const ReplayJob& job, const ResultCache& cache, const sim::SimOptions& options);

}  // namespace trainsim::planner
