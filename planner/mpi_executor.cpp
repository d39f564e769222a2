#include "mpi_executor.hpp"

#include <cstdlib>
#include <exception>
#include <stdexcept>

#include "result_json.hpp"

#ifdef TRAINSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace trainsim::planner {
namespace {

// Open MPI, MPICH and PMIx launchers set one of these in every rank's environment.
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

}  // namespace

bool MpiSession::built_with_mpi() {
#ifdef TRAINSIM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

MpiSession::MpiSession() {
#ifdef TRAINSIM_HAVE_MPI
  if (!launched_by_mpi()) return;
  int provided = 0;
  // Only the main thread calls MPI; replay workers run beside it.
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  active_ = true;
#endif
}

MpiSession::~MpiSession() {
#ifdef TRAINSIM_HAVE_MPI
  if (!active_) return;
  // Inputs are checked identically on every rank before any exchange, so a bad input ends every
  // rank the same way; a failure after that would leave the others waiting for this one.
  if (collectives_ && std::uncaught_exceptions() > 0) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Finalize();
#endif
}

#ifdef TRAINSIM_HAVE_MPI
namespace {

class MpiExecutor : public ReplayExecutor {
 public:
  MpiExecutor(MpiSession& session, ReplayExecutor& local, const ResultCache& cache, Progress& progress)
      : session_(session), local_(local), cache_(cache), progress_(progress) {}

  std::vector<ReplayOutcome> run(const std::vector<ReplayJob>& jobs) override {
    session_.entered_collectives();
    const int rank = session_.rank(), size = session_.size();
    std::vector<ReplayJob> mine;
    std::vector<std::size_t> index;
    for (std::size_t i = static_cast<std::size_t>(rank); i < jobs.size(); i += static_cast<std::size_t>(size)) {
      mine.push_back(jobs[i]);
      index.push_back(i);
    }
    const std::vector<ReplayOutcome> done = local_.run(mine);
    nlohmann::ordered_json blob = nlohmann::ordered_json::array();
    for (std::size_t k = 0; k < done.size(); ++k) {
      blob.push_back({{"i", index[k]}, {"cached", done[k].cached}, {"error", done[k].error}, {"result", result_json(done[k].result)}});
    }
    const std::string text = blob.dump();
    // Sizes, then the texts, from every rank to every rank.
    const int length = static_cast<int>(text.size());
    std::vector<int> lengths(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
    MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int total = 0;
    for (int r = 0; r < size; ++r) {
      offsets[static_cast<std::size_t>(r)] = total;
      total += lengths[static_cast<std::size_t>(r)];
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD);
    std::vector<ReplayOutcome> out(jobs.size());
    for (int r = 0; r < size; ++r) {
      const auto from = static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]);
      const auto n = static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)]);
      for (const auto& e : nlohmann::json::parse(all.substr(from, n))) {
        const auto i = e.at("i").get<std::size_t>();
        out[i].cached = e.at("cached").get<bool>();
        out[i].error = e.at("error").get<std::string>();
        out[i].result = result_from_json(e.at("result"));
        if (r != rank) {
          progress_.done_one(out[i].cached);
          // Rank 0 keeps every answer, so a later run on this machine alone replays nothing.
          if (rank == 0 && out[i].error.empty()) cache_.store(jobs[i].key, out[i].result);
        }
      }
    }
    return out;
  }

 private:
  MpiSession& session_;
  ReplayExecutor& local_;
  const ResultCache& cache_;
  Progress& progress_;
};

}  // namespace
#endif

std::unique_ptr<ReplayExecutor> make_mpi_executor(MpiSession& session, ReplayExecutor& local, const ResultCache& cache,
                                                  Progress& progress) {
#ifdef TRAINSIM_HAVE_MPI
  return std::make_unique<MpiExecutor>(session, local, cache, progress);
#else
  (void)session, (void)local, (void)cache, (void)progress;
  throw std::logic_error("make_mpi_executor: trainsim was built without MPI");
#endif
}

}  // namespace trainsim::planner
