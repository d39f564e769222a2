#include "grad_shard_pieces.hpp"

#include <cmath>
#include <map>

#include "model_params.hpp"

namespace trainsim::sim {

std::vector<ShardPiece> grad_shard_pieces(const wl::ModelSpec& m, const std::vector<const UnitCost*>& units, int tp, int dp,
                                          double bytes_per_param) {
  std::map<double, int> by_size;
  for (const UnitCost* u : units) {
    for (double elems : wl::parameter_tensors(m, tp, u->layer)) ++by_size[std::ceil(elems / dp) * bytes_per_param];
  }
  std::vector<ShardPiece> out;
  for (const auto& [bytes, count] : by_size) out.push_back({bytes, count});
  return out;
}

}  // namespace trainsim::sim
