#pragma once
// What `trainsim plan` and `trainsim compare` are asked, resolved from their flags: the model and
// cluster, the node counts, the batch, the training run (tokens), the objective and how cost,
// energy and CO2 are priced. Every bad flag is a ConfigError naming it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster_profile.hpp"
#include "families.hpp"
#include "framework.hpp"
#include "memory_fit.hpp"
#include "model.hpp"

namespace trainsim::planner {

class CandidateLayers;  // candidate_layers.hpp

enum class Objective { TIME, COST, ENERGY };
std::string_view to_string(Objective o);

// US average grid carbon intensity used by Patterson et al. 2021 ("Carbon Emissions and Large
// Neural Network Training", Table 4: 0.429 kg CO2e per kWh) for their GPT-3 estimate.
inline constexpr double DEFAULT_GRID_KG_PER_KWH = 0.429;
// Tokens to train on when --tokens is not given: 20 per parameter, the compute-optimal ratio of
// Hoffmann et al. 2022 (Chinchilla).
inline constexpr double DEFAULT_TOKENS_PER_PARAM = 20.0;

struct PlanFlags {
  std::string model;
  std::string hw = "dgx2";
  std::string nodes;  // "N" or "A..B"
  std::optional<int> gpus;
  std::optional<std::int64_t> global_batch, seq;
  std::optional<double> tokens;
  std::string objective = "time";
  std::optional<int> top;
  std::optional<double> gap;
  bool explain = false;
  std::optional<double> grid_kg_per_kwh;
  std::string families;  // comma-separated, empty: all
  std::optional<std::string> precision, attention;
  FrameworkFlags framework;               // --stack, --deepspeed, --megatron-args, --allow-async
  std::optional<double> memory_headroom;  // --memory-headroom
  bool uneven_pipelines = false;          // --uneven-pipelines
};

struct PlanQuestion {
  wl::ModelSpec model;
  hw::ClusterProfile profile;
  std::vector<int> nodes;  // ascending
  std::optional<int> gpus;  // --gpus G: one group of G GPUs
  std::optional<std::int64_t> global_batch;
  std::int64_t seq = 0;
  double tokens = 0;
  bool tokens_default = false;
  Objective objective = Objective::TIME;
  int top_k = 5;
  // Relative optimality gap (--gap): 0 ranks exactly; g > 0 stops replaying a node count once no
  // candidate left could beat its K-th best by more than g of it (sweep.hpp).
  double gap = 0;
  bool explain = false;
  double grid_kg_per_kwh = DEFAULT_GRID_KG_PER_KWH;
  bool grid_default = true;
  std::vector<const Family*> families;  // empty: every strategy
  Framework framework;                   // what the user trains with (framework.hpp)
  double memory_headroom = DEFAULT_MEMORY_HEADROOM;
  bool uneven_pipelines = false;  // search pipeline degrees that do not divide the layers too
  std::string beyond_cluster;  // "node counts 97..128 not searched: dgx2 has 96 nodes" (a range past the cluster)
  std::vector<std::string> notes;
  // The layer each candidate is costed with where the model has committed captures, else null.
  std::shared_ptr<const CandidateLayers> layers;
  bool range() const { return nodes.size() > 1; }
};

// Throws ConfigError for a bad flag. `top_default` is --top's default for one node count (a
// range answers with one configuration per node count unless --top says otherwise).
PlanQuestion resolve_plan_question(const PlanFlags& f, int top_default = 5);

// "16", "1..128": node counts, each within [1, 2^20].
std::vector<int> parse_node_counts(const std::string& text, const std::string& flag);

}  // namespace trainsim::planner
