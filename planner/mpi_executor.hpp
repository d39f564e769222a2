#pragma once
// Sweeps across machines: launched by `mpirun -n K build/trainsim plan ...`, every rank runs the
// same deterministic sweep (enumeration, bounds, waves); each wave's replays are dealt to ranks
// round-robin (job i to rank i mod K), each rank replays its share with its own worker threads,
// and the answers are all-gathered, so every rank holds every answer and takes the same next
// step. Rank 0 writes the answer and keeps every result in its cache. The answer is the
// single-machine answer byte for byte: the replayed set depends on the waves, never on who ran
// them, and results travel as result_json text, which reads back to the same doubles.
//
// Built with MPI when CMake finds it (TRAINSIM_HAVE_MPI); otherwise, and whenever trainsim is not
// started by an MPI launcher, the session is a single rank and nothing of MPI is touched.

#include <memory>

#include "replay_executor.hpp"
#include "result_cache.hpp"

namespace trainsim::planner {

class MpiSession {
 public:
  MpiSession();   // initializes MPI when started by an MPI launcher (and built with MPI)
  ~MpiSession();  // finalizes it; aborts the job when unwinding from an error mid-sweep
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool active() const { return active_; }
  // Set once ranks exchange results: from then on a rank that fails alone must abort the job.
  void entered_collectives() { collectives_ = true; }
  static bool built_with_mpi();

 private:
  int rank_ = 0, size_ = 1;
  bool active_ = false;
  bool collectives_ = false;
};

// Shards each batch of jobs over the session's ranks; `local` runs this rank's share.
std::unique_ptr<ReplayExecutor> make_mpi_executor(MpiSession& session, ReplayExecutor& local, const ResultCache& cache,
                                                  Progress& progress);

}  // namespace trainsim::planner
