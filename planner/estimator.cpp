#include "estimator.hpp"

#include <fmt/format.h>

#include "cost_model.hpp"
#include "model_params.hpp"
#include "strategy_rules.hpp"

namespace trainsim::planner {
namespace {
constexpr double GiB = 1073741824.0;
}

std::vector<Issue> validate(const Config& c) {
  std::vector<Issue> out;
  const wl::Strategy& s = c.strategy;
  for (wl::RuleViolation& v : wl::validate(*c.model, s, wl::RuleScope::REPLAY)) {
    out.push_back({std::move(v.rule), v.message()});
  }
  const hw::ClusterProfile& p = *c.profile;
  if (s.nodes > p.node_count) {
    out.push_back({"cluster-nodes", fmt::format("the cluster {} has {} nodes; this configuration needs {}", p.name,
                                                p.node_count, s.nodes)});
  }
  if (auto storage = cluster_infeasibility(s, p)) out.push_back({"no-storage", *storage});
  if (c.model->has_architecture() && p.gpu.peak_TFLOPs.count(sim::compute_precision(c.model->numerics)) == 0) {
    out.push_back({"no-precision-peak", fmt::format("the {} of {} has no {} peak", p.gpu.model, p.name,
                                                    hw::to_string(sim::compute_precision(c.model->numerics)))});
  }
  return out;
}

namespace {

// A floor under the memory model's GPU bytes in microseconds: the model states a rank keeps on
// its GPU, at least the model's parameters over tp x pp (the busiest stage holds no fewer than
// the average; replicated norms and a tied embedding only add), at the bytes per parameter its
// ZeRO stage and offload targets leave there (ZeRO Sec. 5). Most of a search space fails here, so
// the full model runs only where this passes; both name the same reason.
std::optional<Issue> gpu_states_misfit(const Config& c, double total_params) {
  const wl::Strategy& s = c.strategy;
  const wl::StateBytes bytes = wl::state_bytes(c.model->numerics);
  // L2L and Hydra keep the model states in host memory and bring a layer or a shard at a time.
  const bool host_states = s.l2l || s.schedule == wl::Schedule::HYDRA;
  const double dp = s.dp;
  const double params = host_states || s.offload_params != wl::OffloadTarget::NONE ? 0.0
                        : s.zero_stage == 3                                          ? bytes.params / dp
                                                                                      : bytes.params;
  const bool optimizer_off = host_states || s.offload_optimizer != wl::OffloadTarget::NONE;
  const double grads = optimizer_off ? 0.0 : s.zero_stage >= 2 ? bytes.grads / dp : bytes.grads;
  const double optimizer = optimizer_off ? 0.0 : s.zero_stage >= 1 ? bytes.optimizer / dp : bytes.optimizer;
  const double floor = total_params / (static_cast<double>(s.tp) * s.pp) * (params + grads + optimizer);
  const MemoryLimits limits = memory_limits(*c.profile, c.memory_headroom);
  if (model_verdict(floor, limits.gpu_limit_bytes) != Verdict::OVERFLOWS) return std::nullopt;
  return Issue{"gpu-memory", fmt::format("GPU memory: at least {:.2f} GiB of model states needed, {:.2f} GiB usable less {:g}% headroom",
                                         floor / GiB, limits.gpu_limit_bytes / GiB, 100 * limits.headroom)};
}

}  // namespace

Bound bound(const Config& c) {
  Bound b;
  if (c.model->has_architecture()) {
    b.misfit = gpu_states_misfit(c, wl::total_params(*c.model));
    if (b.misfit) return b;
  }
  b.memory = wl::estimate_memory(*c.model, c.strategy, c.profile->gpus_per_node());
  b.fit = check_memory_fit(b.memory, *c.profile, c.memory_headroom);
  const auto& st = b.memory.stages[static_cast<std::size_t>(b.memory.peak_stage)];
  const MemoryLimits& l = b.fit.limits;
  if (b.fit.gpu == Verdict::OVERFLOWS) {
    b.misfit = Issue{"gpu-memory", fmt::format("GPU memory: {:.2f} GiB needed by the memory model, {:.2f} GiB usable less {:g}% headroom",
                                               st.gpu_bytes() / GiB, l.gpu_limit_bytes / GiB, 100 * l.headroom)};
  } else if (b.fit.cpu == Verdict::OVERFLOWS) {
    b.misfit = Issue{"host-memory", fmt::format("host memory: {:.1f} GiB needed per node, {:.1f} GiB available",
                                                b.memory.peak_node.cpu_bytes / GiB, l.host_bytes / GiB)};
  } else if (b.fit.nvme == Verdict::OVERFLOWS) {
    b.misfit = Issue{"nvme-capacity", fmt::format("storage: {:.1f} TB needed per node, {:.1f} TB available",
                                                  b.memory.peak_node.nvme_bytes / 1e12, l.storage_bytes / 1e12)};
  }
  if (!b.misfit) b.step = sim::step_time_lower_bound(*c.model, c.strategy, *c.profile, b.memory);
  return b;
}

std::optional<Issue> replay_size_issue(const Config& c) {
  const double ops = sim::estimated_replay_ops(*c.model, c.strategy, *c.profile);
  if (ops <= sim::MAX_REPLAY_OPS) return std::nullopt;
  return Issue{"replay-too-large", fmt::format("a limit of trainsim, not of the configuration: its smallest replay would hold "
                                               "about {:.3g} million ops, beyond the limit of {:.0f} million",
                                               ops / 1e6, sim::MAX_REPLAY_OPS / 1e6)};
}

sim::SimResult replay(const Config& c, const wl::MemoryEstimate& memory, const sim::SimOptions& options) {
  return sim::simulate(*c.model, c.strategy, *c.profile, memory, options);
}

sim::SimResult fitted_to(sim::SimResult r, const Config& c) {
  if (!r.simulated) return r;
  if (const std::optional<MemoryMisfit> misfit = replay_misfit(r, memory_limits(*c.profile, c.memory_headroom))) {
    r.fits = false;
    r.infeasible_reason = misfit->message;
  } else {
    r.fits = true;
    r.infeasible_reason.reset();
  }
  return r;
}

}  // namespace trainsim::planner
