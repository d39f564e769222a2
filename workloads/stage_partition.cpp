#include "stage_partition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "config_error.hpp"
#include "layer_costs.hpp"

namespace trainsim::wl {

int StagePartition::first_layer(int vs) const {
  return std::accumulate(layers.begin(), layers.begin() + vs, 0);
}

int StagePartition::stage_layers(int stage) const {
  int n = 0;
  for (int c = 0; c < chunks; ++c) n += layers[static_cast<std::size_t>(c * stages + stage)];
  return n;
}

std::string StagePartition::describe() const {
  std::string list;
  const int v = virtual_stages();
  // Runs of equal counts are written once: "3, 4 x 30, 3".
  for (int i = 0; i < v;) {
    int j = i;
    while (j < v && layers[static_cast<std::size_t>(j)] == layers[static_cast<std::size_t>(i)]) ++j;
    if (!list.empty()) list += ", ";
    list += j - i > 1 ? fmt::format("{} x {}", layers[static_cast<std::size_t>(i)], j - i)
                      : fmt::format("{}", layers[static_cast<std::size_t>(i)]);
    i = j;
  }
  return fmt::format("{} stage{}{}: {} layers per virtual stage{}", stages, stages == 1 ? "" : "s",
                     chunks > 1 ? fmt::format(" x {} chunks", chunks) : "", list,
                     balanced_by_cost ? " (balanced by cost)" : "");
}

namespace {

// Fewest layers per virtual stage is 1; the bottleneck is the most loaded virtual stage. For a
// bound T, virtual stage v can hold floor((T - extra_v) / w) layers; the smallest feasible T is
// found by bisection, then layers are taken back from the most loaded stages until they add up.
std::vector<int> balance(int layers, int v, double w, double first_extra, double last_extra) {
  // No work to balance (a shape with no tokens: 0 FLOPs per layer, found by fuzz_megatron_args):
  // every split costs the same, so layers are split evenly rather than dividing 0 by 0.
  if (!(w > 0) || !std::isfinite(w)) {
    w = 1;
    first_extra = last_extra = 0;
  }
  auto extra = [&](int i) { return (i == 0 ? first_extra : 0.0) + (i == v - 1 ? last_extra : 0.0); };
  auto capacity = [&](double T) {
    long long total = 0;
    for (int i = 0; i < v; ++i) total += std::max(1LL, static_cast<long long>(std::floor((T - extra(i)) / w + 1e-9)));
    return total;
  };
  double lo = 0, hi = (layers + 1) * w + first_extra + last_extra;
  for (int it = 0; it < 200 && hi - lo > 1e-12 * hi; ++it) {
    const double mid = (lo + hi) / 2;
    (capacity(mid) >= layers ? hi : lo) = mid;
  }
  std::vector<int> n(static_cast<std::size_t>(v));
  for (int i = 0; i < v; ++i) n[static_cast<std::size_t>(i)] = std::max(1, static_cast<int>(std::floor((hi - extra(i)) / w + 1e-9)));
  long long excess = std::accumulate(n.begin(), n.end(), 0LL) - layers;
  while (excess > 0) {
    // Take a layer from the most loaded stage that can spare one; ties go to the outer stages.
    int best = -1;
    double load = -1;
    for (int i = 0; i < v; ++i) {
      if (n[static_cast<std::size_t>(i)] <= 1) continue;
      const double l = n[static_cast<std::size_t>(i)] * w + extra(i);
      const bool outer = i == 0 || i == v - 1;
      if (l > load + 1e-12 * l || (std::fabs(l - load) <= 1e-12 * l && outer)) {
        best = i;
        load = l;
      }
    }
    --n[static_cast<std::size_t>(best)];
    --excess;
  }
  return n;
}

// The planner partitions the same few shapes for every candidate of a search (the memory model,
// the bounds and the walk each ask): the bisection's answers are kept per thread, a few thousand
// at most.
std::vector<int> remembered_balance(int layers, int v, double w, double last_extra) {
  using Key = std::tuple<int, int, double, double>;
  thread_local std::map<Key, std::vector<int>> seen;
  const Key key{layers, v, w, last_extra};
  if (const auto it = seen.find(key); it != seen.end()) return it->second;
  if (seen.size() >= 4096) seen.clear();
  return seen.emplace(key, balance(layers, v, w, 0.0, last_extra)).first->second;
}

}  // namespace

StagePartition partition_stages(const ModelSpec& m, const Strategy& s) {
  StagePartition part;
  part.stages = s.pp;
  part.chunks = s.vpp;
  const int p = s.pp, v = s.vpp, V = p * v;
  const int L = static_cast<int>(m.layers);
  if (s.first_stage_layers > 0 || s.last_stage_layers > 0) {
    // Megatron-LM: the first and last stages hold what is asked, the middle stages the rest
    // evenly, each stage's layers split evenly over its chunks.
    const int first = s.first_stage_layers > 0 ? s.first_stage_layers : -1;
    const int last = s.last_stage_layers > 0 ? s.last_stage_layers : -1;
    const int fixed = (first > 0 ? first : 0) + (last > 0 ? last : 0);
    const int free_stages = p - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
    const int rest = L - fixed;
    if (rest < 0 || (free_stages == 0 && rest != 0) || (free_stages > 0 && rest % free_stages != 0)) {
      throw ConfigError("first_stage_layers", "first_stage_layers",
                        fmt::format("first and last stage layers that leave the other {} stages an equal share of the "
                                    "{} layers",
                                    free_stages, L),
                        fmt::format("first {}, last {}", s.first_stage_layers, s.last_stage_layers));
    }
    std::vector<int> per_stage(static_cast<std::size_t>(p), free_stages > 0 ? rest / free_stages : 0);
    if (first > 0) per_stage.front() = first;
    if (last > 0) per_stage.back() = last;
    part.layers.assign(static_cast<std::size_t>(V), 0);
    for (int st = 0; st < p; ++st) {
      const int n = per_stage[static_cast<std::size_t>(st)];
      if (n % v != 0 || n < v) {
        throw ConfigError("first_stage_layers", "first_stage_layers",
                          fmt::format("stage layers divisible by the {} chunks (stage {} gets {})", v, st, n),
                          fmt::format("first {}, last {}", s.first_stage_layers, s.last_stage_layers));
      }
      for (int c = 0; c < v; ++c) part.layers[static_cast<std::size_t>(c * p + st)] = n / v;
    }
    return part;
  }
  if (L < V) {
    throw ConfigError("--pp", "--pp", fmt::format("at most {} virtual stages (pp x vpp) for {} layers", L, L),
                      std::to_string(V));
  }
  if (V == 1) {
    part.layers = {L};
    return part;
  }
  // FLOPs of the forward and backward (layer_costs.hpp): what each virtual stage computes.
  const LayerCost layer = transformer_layer_cost(m, s), head = output_layer_cost(m, s);
  const double layer_cost = layer.forward.flops() + layer.backward.flops();
  const double head_cost = head.forward.flops() + head.backward.flops();
  part.layers = remembered_balance(L, V, layer_cost, head_cost);
  part.balanced_by_cost = !std::all_of(part.layers.begin(), part.layers.end(), [&](int n) { return n == L / V; });
  return part;
}

}  // namespace trainsim::wl
