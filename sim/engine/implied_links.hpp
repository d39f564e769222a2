#pragma once
// Link constraints that other links already imply, found before the routes reach SimGrid, so that
// the sharing model solves a smaller system with the same answer.
//
// SimGrid's network model (CM02, sim/README.md) gives the flows in flight the max-min fair
// allocation of the polytope { x >= 0 : sum over r through l of w_r(l) x_r <= c_l for every link
// l }, where w_r(l) is how often route r lists l (folded copies, platform.hpp). That allocation
// depends on the polytope only, so a constraint that the others imply can be dropped from every
// route without changing any rate. Link l is implied when the routes through it can be split
// into groups, each group's routes all crossing one other link h (its witness), such that
//   sum over groups of c_h * max over the group's routes of w_r(l) / w_r(h)  <=  c_l:
// then sum_r w_r(l) x_r <= sum_groups (max ratio) * sum_r w_r(h) x_r <= sum_groups (max ratio) c_h
// <= c_l for every feasible x, whichever flows are in flight. Dropped links never serve as
// witnesses of later ones (two links implying each other keep one).
//
// Why it pays: a ring crossing nodes is one flow per channel over every member's NVSwitch port
// inside a node; on a DGX-2 the channels' PCIe links (8 x 12 GB/s) cannot fill a GPU's 150 GB/s
// port nor their 12.5 GB/s NICs, so those drop out and a channel of a 16-GPU ring crosses 3 links
// instead of 35 (its rate cap and two PCIe links). The channels that then share no link with any
// other route are timed in closed form (platform.hpp, RingRoute::exclusive_rates). Together: the
// replay of 1T with ZeRO-3 on 20 DGX-2 (tp 1, delayed update) in 0.09 s instead of 0.34 s, with
// the same step time to the last bit (tests/sim/implied_links_test.cpp replays with and without
// the drop).

#include <vector>

namespace trainsim::sim {

struct LinkSharing {
  // Per link (a direction of a duplex link is a link of its own): its capacity, and whether the
  // engine may lower it while it runs (rate caps: never dropped; as a witness, the capacity given
  // here must be the largest it ever takes).
  std::vector<double> capacity;
  std::vector<bool> adjustable;
  // Each route as the links it lists, a link listed k times counting k units of the flow.
  std::vector<std::vector<int>> routes;
};

// Which links to drop (true) so that the remaining ones allocate every flow the same rates.
std::vector<bool> implied_links(const LinkSharing& sharing);

}  // namespace trainsim::sim
