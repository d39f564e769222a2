#include "implied_links.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace trainsim::sim {
namespace {

// A link is dropped only when its witnesses leave this much of its capacity unused, so that no
// rounding in the sharing model can make it the one that binds.
constexpr double MARGIN = 1e-9;

// How often each link appears in a route.
std::map<int, int> listings(const std::vector<int>& route) {
  std::map<int, int> out;
  for (int l : route) ++out[l];
  return out;
}

}  // namespace

std::vector<bool> implied_links(const LinkSharing& sharing) {
  const std::size_t n = sharing.capacity.size();
  if (sharing.adjustable.size() != n) throw std::logic_error("implied links: a flag per link expected");
  std::vector<std::map<int, int>> weights;  // per route: link -> listings
  std::vector<std::vector<std::size_t>> through(n);
  for (const auto& route : sharing.routes) {
    weights.push_back(listings(route));
    for (const auto& [link, count] : weights.back()) {
      if (link < 0 || static_cast<std::size_t>(link) >= n) throw std::logic_error("implied links: a route lists an unknown link");
      through[static_cast<std::size_t>(link)].push_back(weights.size() - 1);
    }
  }
  std::vector<bool> dropped(n, false);
  for (std::size_t l = 0; l < n; ++l) {
    if (sharing.adjustable[l] || through[l].empty()) continue;
    // Each route's cheapest witness: the link h it crosses, not dropped, with the least
    // c_h * w_r(l) / w_r(h) (the lowest id on a tie); per witness, the largest ratio it must cover.
    std::map<int, double> ratio_of_witness;
    bool covered = true;
    for (std::size_t r : through[l]) {
      const auto& w = weights[r];
      const double wl = w.at(static_cast<int>(l));
      int best = -1;
      double best_cost = 0;
      for (const auto& [h, wh] : w) {
        if (static_cast<std::size_t>(h) == l || dropped[static_cast<std::size_t>(h)]) continue;
        const double cost = sharing.capacity[static_cast<std::size_t>(h)] * wl / wh;
        if (best < 0 || cost < best_cost) {
          best = h;
          best_cost = cost;
        }
      }
      if (best < 0) {
        covered = false;  // the route's only link
        break;
      }
      double& ratio = ratio_of_witness[best];
      ratio = std::max(ratio, wl / w.at(best));
    }
    if (!covered) continue;
    double implied = 0;
    for (const auto& [h, ratio] : ratio_of_witness) implied += sharing.capacity[static_cast<std::size_t>(h)] * ratio;
    if (implied <= sharing.capacity[l] * (1 - MARGIN)) dropped[l] = true;
  }
  return dropped;
}

}  // namespace trainsim::sim
