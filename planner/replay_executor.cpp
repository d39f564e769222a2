#include "replay_executor.hpp"

#include <unistd.h>

#include "memory_model.hpp"
#include "parallel_for.hpp"

namespace trainsim::planner {

ReplayOutcome run_job(const ReplayJob& job, const ResultCache& cache, const sim::SimOptions& options) {
  ReplayOutcome out;
  if (auto hit = cache.load(job.key, job.config.strategy, job.lower_bound_s)) {
    out.result = std::move(*hit);
    out.cached = true;
    return out;
  }
  try {
    const wl::MemoryEstimate memory =
        wl::estimate_memory(*job.config.model, job.config.strategy, job.config.profile->gpus_per_node());
    out.result = replay(job.config, memory, options);
    cache.store(job.key, out.result);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

namespace {

class LocalExecutor : public ReplayExecutor {
 public:
  LocalExecutor(int threads, const ResultCache& cache, const sim::SimOptions& options, Progress& progress)
      : threads_(threads), cache_(cache), options_(options), progress_(progress) {}

  std::vector<ReplayOutcome> run(const std::vector<ReplayJob>& jobs) override {
    std::vector<ReplayOutcome> out(jobs.size());
    parallel_for(jobs.size(), threads_, [&](std::size_t i) {
      out[i] = run_job(jobs[i], cache_, options_);
      progress_.done_one(out[i].cached);
    });
    return out;
  }

 private:
  int threads_;
  const ResultCache& cache_;
  sim::SimOptions options_;
  Progress& progress_;
};

}  // namespace

std::unique_ptr<ReplayExecutor> make_local_executor(int threads, const ResultCache& cache, const sim::SimOptions& options,
                                                    Progress& progress) {
  if (threads <= 0) {
    const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
    threads = online > 0 ? static_cast<int>(online) : 1;
  }
#if defined(__SANITIZE_ADDRESS__)
  // Each replay forks (sim/engine/isolation.cpp). GCC 12's AddressSanitizer does not take its
  // allocator's lock around fork(), so a child forked while another worker allocates waits on
  // that lock forever (seen in the sanitizer build's sweep test). glibc's malloc is fork-safe,
  // so only sanitizer builds replay from one thread.
  threads = 1;
#endif
  return std::make_unique<LocalExecutor>(threads, cache, options, progress);
}

}  // namespace trainsim::planner
