#include "placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace trainsim::sim {

std::string_view to_string(RankOrder o) { return o == RankOrder::TP_DP_PP ? "tp-dp-pp" : "tp-pp-dp"; }

Placement::Placement(int tp, int dp, int pp, int gpus_per_node, RankOrder order)
    : tp_(tp), dp_(dp), pp_(pp), gpus_per_node_(gpus_per_node), order_(order) {
  if (tp < 1 || dp < 1 || pp < 1 || gpus_per_node < 1) throw std::invalid_argument("placement: degrees must be >= 1");
}

RankCoord Placement::coord(int rank) const {
  RankCoord c;
  c.tp = rank % tp_;
  const int rest = rank / tp_;
  if (order_ == RankOrder::TP_DP_PP) {
    c.dp = rest % dp_;
    c.pp = rest / dp_;
  } else {
    c.pp = rest % pp_;
    c.dp = rest / pp_;
  }
  return c;
}

int Placement::rank_of(const RankCoord& c) const {
  return order_ == RankOrder::TP_DP_PP ? c.tp + tp_ * (c.dp + dp_ * c.pp) : c.tp + tp_ * (c.pp + pp_ * c.dp);
}

std::vector<int> Placement::group(int rank, GroupKind kind) const {
  const RankCoord c = coord(rank);
  std::vector<int> out;
  switch (kind) {
    case GroupKind::TENSOR:
      for (int t = 0; t < tp_; ++t) out.push_back(rank_of({t, c.dp, c.pp}));
      break;
    case GroupKind::DATA:
      for (int d = 0; d < dp_; ++d) out.push_back(rank_of({c.tp, d, c.pp}));
      break;
    case GroupKind::PIPELINE:
      for (int s = 0; s < pp_; ++s) out.push_back(rank_of({c.tp, c.dp, s}));
      break;
    case GroupKind::EMBEDDING:
      out.push_back(rank_of({c.tp, c.dp, 0}));
      if (pp_ > 1) out.push_back(rank_of({c.tp, c.dp, pp_ - 1}));
      break;
  }
  return out;
}

int FoldPlan::explicit_index(const Placement& p, int rank) const {
  if (!folded) return rank;
  const RankCoord c = p.coord(rank);
  if (c.tp != 0 || c.dp != 0) return -1;
  return c.pp;
}

FoldPlan plan_fold(const Placement& p, bool fold) {
  FoldPlan plan;
  plan.folded = fold && (p.tp() > 1 || p.dp() > 1);
  if (!plan.folded) {
    for (int r = 0; r < p.world(); ++r) plan.ranks.push_back({r, p.coord(r), p.location(r), 1, {p.location(r).gpu}});
  } else {
    for (int s = 0; s < p.pp(); ++s) {
      const int rep = p.rank_of({0, 0, s});
      ExplicitRank e{rep, p.coord(rep), p.location(rep), 0, {}};
      // Its copies: ranks of the same stage on the same node.
      for (int d = 0; d < p.dp(); ++d) {
        for (int t = 0; t < p.tp(); ++t) {
          const GpuLocation at = p.location(p.rank_of({t, d, s}));
          if (at.node != e.location.node) continue;
          ++e.copies;
          e.copy_gpus.push_back(at.gpu);
        }
      }
      plan.ranks.push_back(e);
    }
  }
  for (const auto& e : plan.ranks) plan.nodes.push_back(e.location.node);
  std::sort(plan.nodes.begin(), plan.nodes.end());
  plan.nodes.erase(std::unique(plan.nodes.begin(), plan.nodes.end()), plan.nodes.end());
  if (plan.folded) {
    const int copies = plan.ranks.front().copies;
    plan.description = fmt::format(
        "{} of {} ranks simulated (one per pipeline stage: tp 0, dp 0), each standing for the {} identical "
        "tensor- and data-parallel ranks of its node",
        plan.ranks.size(), p.world(), copies);
    if (static_cast<int>(plan.nodes.size()) < p.nodes()) {
      plan.description += fmt::format("; {} of {} nodes simulated, the others mirror them", plan.nodes.size(), p.nodes());
    }
    // Exact when every node holds whole stages, or every stage whole nodes: then all nodes of a
    // stage look alike. Otherwise nodes differ and the mirrors are an approximation.
    const int per_stage = p.tp() * p.dp();
    if (per_stage % p.gpus_per_node() != 0 && p.gpus_per_node() % per_stage != 0) {
      plan.description += fmt::format(" (approximate: a stage's {} ranks do not align with nodes of {} GPUs)", per_stage,
                                      p.gpus_per_node());
    }
  } else {
    plan.description = fmt::format("all {} ranks on {} nodes simulated", p.world(), p.nodes());
  }
  return plan;
}

}  // namespace trainsim::sim
