#pragma once
// A sweep: for each group (a node count, optionally limited to some families), enumerate the
// search space, keep what is legal and fits the memory model (counting each reason for what does
// not), order the rest by their step-time lower bound, and replay in that order until the next
// bound exceeds the K-th best replayed step time (branch and bound: what is never replayed could
// not have entered the top K). Before a candidate is replayed, its program is walked
// without contention (sim/critical_path.hpp, milliseconds): a tighter bound that prunes it too
// when above the K-th best. Replays run in waves of a fixed size per group, whoever executes
// them, so the replayed set (and every number reported) is the same on one core, on many, or
// sharded over MPI ranks.
//
// Ranking within a group: step time ascending, compared in bins RANK_RESOLUTION wide (relative);
// replays within a bin tie, and the tie goes to the configuration the memory model puts less on
// a GPU (wl::estimate_memory, known before any replay), then to the strategy's canonical text
// (workloads/strategy_identity.hpp). A tie-break known before the replay lets the search prune a
// candidate whose bound lies in the K-th best's bin but whose tie-break loses: the offload
// variants of one layout that the replay times alike (the winners of 1T on 10 to 95 DGX-2) are
// no longer each replayed. Within one node count and batch every objective (time, cost, energy)
// orders configurations alike: cost and energy are the step time times constants of the group.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "estimator.hpp"
#include "families.hpp"
#include "framework.hpp"
#include "memory_fit.hpp"
#include "progress.hpp"
#include "replay_executor.hpp"
#include "result_cache.hpp"

namespace trainsim::planner {

class CandidateLayers;  // candidate_layers.hpp

struct SweepGroup {
  std::string label;                     // "16 nodes", "zero3"
  int nodes = 1;
  int gpus = 0;                          // 0: every GPU of the nodes
  std::vector<const Family*> families;   // empty: every strategy
  int top_k = 1;  // 0: enumerate and count only, replay nothing
};

struct SweepInputs {
  const wl::ModelSpec* model = nullptr;
  const hw::ClusterProfile* profile = nullptr;
  const Framework* framework = nullptr;  // none: every strategy of the space (search_space.hpp)
  // The layer each candidate replays with (a capture scaled to it); none: `model`'s for every one.
  const CandidateLayers* layers = nullptr;
  bool uneven_pipelines = false;         // SpaceShape::uneven_pipelines
  // The share of the usable GPU memory left free at a replayed reserved peak (memory_fit.hpp).
  double memory_headroom = DEFAULT_MEMORY_HEADROOM;
  std::optional<std::int64_t> global_batch;  // default: one sequence per GPU
  std::int64_t seq = 0;
  sim::SimOptions options;
  // Replays each open group offers per wave; fixed, since the replayed set must not depend on
  // cores. 0: two where the sweep has one group (both cores of a laptop busy at once), one per
  // group where it has several (the groups keep the cores busy, and each group's next replay
  // waits for the one ahead of it to set its bar: on 1T at 72 DGX-2 a second replay offered
  // beside the first, a 72-stage pipeline the first then outran, cost 30 s).
  int wave = 0;
  // Relative optimality gap: 0 replays every candidate whose bound is not above the K-th best
  // replay (exact ranking); g > 0 every candidate whose bound is below (1 - g) times it, so that
  // nothing pruned replays faster than the K-th best less g of it (tests/planner/sweep_test.cpp).
  double gap = 0;
  // Walks (sim/critical_path.hpp) run in this many threads, a fixed batch at a time, and are kept
  // in this cache (one file per group) when it is enabled.
  int walk_threads = 1;
  const ResultCache* walk_cache = nullptr;
  // Asked before each wave: a reason to stop now ("interrupted", "the time limit of 60 s") or empty.
  // A stopped sweep answers with what it has replayed, each unfinished group marked incomplete.
  std::function<std::string()> stop_reason;
};

struct Candidate {
  wl::Strategy strategy;
  std::string text;    // canonical_text
  double bound_s = 0;  // step-time lower bound (closed forms, sim/step_bound.hpp)
  std::string bound_dominant;
  double model_gpu_bytes = 0;  // the memory model's peak GPU bytes (the ranking's tie-break)
  // The contention-free walk of its programs (sim/critical_path.hpp), once the sweep reached it;
  // 0 where not computed, negative where the walk does not apply.
  double walk_bound_s = 0;
  double best_bound_s() const { return walk_bound_s > bound_s ? walk_bound_s : bound_s; }
};

// A fitting strategy with what its bound says (estimator.hpp, bound()).
Candidate candidate_of(const wl::Strategy& s, const Bound& b);

struct RankedEntry {
  Candidate candidate;
  sim::SimResult result;
};

struct GroupResult {
  SweepGroup group;
  std::int64_t global_batch = 0;
  long enumerated = 0;  // strategies of the space (in the group's families)
  long candidates = 0;  // legal and fitting the memory model
  long replayed = 0;    // replays the group needed (each answered by the simulator or the cache)
  std::map<std::string, long> infeasible;         // reason id -> count (first reason of each)
  std::map<std::string, std::string> example;     // reason id -> one message
  std::vector<RankedEntry> ranked;                // best first, at most top_k
  std::vector<Candidate> pruned;                  // never replayed: a bound above the K-th best
  std::vector<RankedEntry> replayed_entries;      // every replay that fits, ranked order
  std::vector<std::string> errors;                // replays that failed inside the simulator
  // Why the group stopped before it could rank its top K exactly (SweepInputs::stop_reason), or
  // empty: its ranking holds what was replayed, and what was never replayed may rank before it.
  std::string incomplete;
};

// The GPUs of a group, and the batch it trains with: the given one, else one sequence per GPU.
int group_gpus(const SweepInputs& in, const SweepGroup& g);
std::int64_t group_global_batch(const SweepInputs& in, const SweepGroup& g);

std::vector<GroupResult> run_sweep(const SweepInputs& in, const std::vector<SweepGroup>& groups, ReplayExecutor& executor,
                                   Progress& progress);

// Orders two replayed entries (the ranking rule above).
bool ranks_before(const RankedEntry& a, const RankedEntry& b);
// Step times closer than a hundredth of a percent are no difference a simulator can stand behind
// (tests/validation: a few percent), nor one a user would trade GPU memory for.
inline constexpr double RANK_RESOLUTION = 1e-4;
// The bin of a step time: floor(log(t) / log(1 + RANK_RESOLUTION)); monotone, so a bound's bin
// is at most its replay's.
std::int64_t ranking_step_bin(double step_time_s);

}  // namespace trainsim::planner
