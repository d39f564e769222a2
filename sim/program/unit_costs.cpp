#include "unit_costs.hpp"

#include <string_view>

#include "layer_costs.hpp"
#include "model_params.hpp"
#include "stack_model.hpp"

namespace trainsim::sim {
namespace {

enum Part { ATTENTION_IN, ATTENTION_OUT, MLP_IN, MLP_OUT, PARTS };

// Which gather unit each GEMM and kernel of a layer belongs to; shared kernels (the two norms,
// the two residual adds and dropouts) split evenly between the units they serve.
struct Shares {
  double part[PARTS] = {0, 0, 0, 0};
};

Shares shares_of(std::string_view name) {
  Shares s;
  if (name == "qkv" || name == "attention_scores" || name == "attention_context" || name == "softmax" ||
      name == "attention_dropout" || name == "rotary") {
    s.part[ATTENTION_IN] = 1;
  } else if (name == "attention_out") {
    s.part[ATTENTION_OUT] = 1;
  } else if (name == "mlp_in" || name == "activation" || name == "swiglu") {
    s.part[MLP_IN] = 1;
  } else if (name == "mlp_out") {
    s.part[MLP_OUT] = 1;
  } else if (name == "norm" || name == "rmsnorm") {
    s.part[ATTENTION_IN] = s.part[MLP_IN] = 0.5;
  } else {  // residual_add, dropout
    s.part[ATTENTION_OUT] = s.part[MLP_OUT] = 0.5;
  }
  return s;
}

struct PartTimes {
  double seconds[PARTS] = {0, 0, 0, 0};
  double flops[PARTS] = {0, 0, 0, 0};
  double gemm[PARTS] = {0, 0, 0, 0};       // of seconds, the GEMMs' (not attention's)
  double attention[PARTS] = {0, 0, 0, 0};  // of seconds, attention's
  double gaps[PARTS] = {0, 0, 0, 0};       // of seconds, the gaps between kernels
};

// A whole pass as one segment, with its kernel classes.
Segment whole_pass(const CostModel& c, const wl::PassCost& pass, double flops) {
  const CostModel::PassClasses k = c.pass_classes(pass);
  return {c.pass_seconds(pass), flops, false, k.gemm, k.attention, k.gaps};
}

PartTimes split(const CostModel& c, const wl::PassCost& pass) {
  PartTimes t;
  for (const auto& g : pass.gemms) {
    const Shares s = shares_of(g.name);
    const bool flash = c.times_flash(pass) && CostModel::attention_gemm(g);
    for (int p = 0; p < PARTS; ++p) {
      if (!flash) {
        t.seconds[p] += s.part[p] * c.gemm_seconds(g);
        t.gemm[p] += s.part[p] * c.gemm_seconds(g);
      }
      t.flops[p] += s.part[p] * g.flops();
    }
  }
  t.seconds[ATTENTION_IN] += c.flash_seconds(pass);
  t.attention[ATTENTION_IN] += c.flash_seconds(pass);
  for (const auto& k : pass.kernels) {
    const Shares s = shares_of(k.name);
    for (int p = 0; p < PARTS; ++p) t.seconds[p] += s.part[p] * c.kernel_seconds(k);
  }
  // The gaps between the pass's kernels, shared by the parts as their kernels' time is.
  const double gaps = c.launch_gap_seconds(pass);
  double total = 0;
  for (int p = 0; p < PARTS; ++p) total += t.seconds[p];
  for (int p = 0; p < PARTS && total > 0; ++p) {
    const double g = gaps * t.seconds[p] / total;
    t.seconds[p] += g;
    t.gaps[p] += g;
  }
  return t;
}

}  // namespace

std::vector<UnitCost> unit_costs(const wl::ModelSpec& m, const wl::Strategy& s, const CostModel& c, bool per_operator) {
  const wl::LayerCost layer = wl::transformer_layer_cost(m, s);
  const wl::LayerCost out = wl::output_layer_cost(m, s);
  const wl::LayerCost emb = wl::embedding_cost(m, s);
  const PartTimes fwd = split(c, layer.forward), bwd = split(c, layer.backward);
  const bool tp = s.tp > 1;
  // Selective recompute re-runs the attention core: scores, softmax, its dropout and context, or,
  // where the profile times flash attention, flash attention's forward (Korthikanti et al. 2022).
  Segment core;
  for (const auto& g : layer.forward.gemms) {
    const std::string_view n = g.name;
    if (n == "attention_scores" || n == "attention_context") {
      core.flops += g.flops();
      if (c.times_flash(layer.forward)) continue;
      core.seconds += c.gemm_seconds(g);
      core.gemm_seconds += c.gemm_seconds(g);
    }
  }
  if (c.times_flash(layer.forward)) {
    core.seconds = core.attention_seconds = c.flash_seconds(layer.forward);
  } else {
    for (const auto& k : layer.forward.kernels) {
      const std::string_view n = k.name;
      if (n == "softmax" || n == "attention_dropout") core.seconds += c.kernel_seconds(k);
    }
  }
  const bool selective = s.recompute == wl::Recompute::SELECTIVE;
  const int L = static_cast<int>(m.layers);
  std::vector<UnitCost> units;

  if (per_operator) {
    const std::vector<wl::GatherUnit> gather = wl::gather_units(m, s.tp);
    units.reserve(gather.size());
    for (const wl::GatherUnit& g : gather) {
      UnitCost u;
      u.layer = g.layer;
      u.name = g.name;
      u.params = g.params;
      const std::string_view n = g.name;
      if (n == "embedding") {
        u.forward = {whole_pass(c, emb.forward, 0)};
        u.backward = {whole_pass(c, emb.backward, 0)};
        u.holds_embedding = true;
      } else if (n == "head") {
        u.forward = {whole_pass(c, out.forward, out.forward.flops())};
        u.backward = {whole_pass(c, out.backward, out.backward.flops())};
        u.holds_head = true;
      } else {
        const Part p = n == "attention_in" ? ATTENTION_IN : n == "attention_out" ? ATTENTION_OUT : n == "mlp_in" ? MLP_IN : MLP_OUT;
        u.forward = {{fwd.seconds[p], fwd.flops[p], tp && (p == ATTENTION_OUT || p == MLP_OUT), fwd.gemm[p], fwd.attention[p], fwd.gaps[p]}};
        u.backward = {{bwd.seconds[p], bwd.flops[p], tp && (p == ATTENTION_IN || p == MLP_IN), bwd.gemm[p], bwd.attention[p], bwd.gaps[p]}};
        u.full_recompute = u.forward;
        if (selective && p == ATTENTION_IN) u.selective_recompute = {core};
      }
      units.push_back(std::move(u));
    }
    return units;
  }

  // One unit per layer, with the embedding before and the head after as units of their own
  // (the head's backward runs before the last layer's recompute, as in Megatron-LM).
  const wl::RankParams rp = wl::rank_params(m, s.tp);
  units.reserve(static_cast<std::size_t>(L) + 2);
  UnitCost embedding;
  embedding.layer = -1;
  embedding.name = "embedding";
  embedding.params = rp.embedding;
  embedding.forward = {whole_pass(c, emb.forward, 0)};
  embedding.backward = {whole_pass(c, emb.backward, 0)};
  embedding.holds_embedding = true;
  units.push_back(std::move(embedding));
  // The attention half (its input and output units) and the MLP half of a pass, as segments.
  auto half = [](const PartTimes& t, Part a, Part b, double flops, bool tp_after) {
    return Segment{t.seconds[a] + t.seconds[b], flops, tp_after, t.gemm[a] + t.gemm[b], t.attention[a] + t.attention[b],
                   t.gaps[a] + t.gaps[b]};
  };
  const double flops_f = layer.forward.flops(), flops_b = layer.backward.flops();
  // A stack's own recompute where it is not its layer's forward (PyTorch's: without FSDP2's
  // gather work, stack_layer.hpp).
  Segments own_recompute;
  if (const auto own = wl::stack_model(s).recompute_cost; own && s.recompute == wl::Recompute::FULL) {
    const wl::PassCost r = own(m, s);
    own_recompute = {whole_pass(c, r, r.flops())};
  }
  for (int l = 0; l < L; ++l) {
    UnitCost u;
    u.layer = l;
    u.name = "layer";
    u.params = rp.per_layer;
    const Segment attn_f = half(fwd, ATTENTION_IN, ATTENTION_OUT, 0, tp), mlp_f = half(fwd, MLP_IN, MLP_OUT, flops_f, tp);
    const Segment attn_b = half(bwd, ATTENTION_IN, ATTENTION_OUT, flops_b, tp), mlp_b = half(bwd, MLP_IN, MLP_OUT, 0, tp);
    if (tp) {
      u.forward = {attn_f, mlp_f};
      u.backward = {mlp_b, attn_b};
    } else {
      u.forward = {{attn_f.seconds + mlp_f.seconds, flops_f, false, attn_f.gemm_seconds + mlp_f.gemm_seconds,
                    attn_f.attention_seconds + mlp_f.attention_seconds, attn_f.gap_seconds + mlp_f.gap_seconds}};
      u.backward = {{mlp_b.seconds + attn_b.seconds, flops_b, false, mlp_b.gemm_seconds + attn_b.gemm_seconds,
                     mlp_b.attention_seconds + attn_b.attention_seconds, mlp_b.gap_seconds + attn_b.gap_seconds}};
    }
    u.full_recompute = own_recompute.empty() ? u.forward : own_recompute;
    if (selective) u.selective_recompute = {core};
    units.push_back(std::move(u));
  }
  UnitCost head;
  head.layer = L;
  head.name = "head";
  head.params = rp.head;
  head.forward = {whole_pass(c, out.forward, out.forward.flops())};
  head.backward = {whole_pass(c, out.backward, out.backward.flops())};
  head.holds_head = true;
  units.push_back(std::move(head));
  return units;
}

double owned_params(const UnitCost& u, const wl::ModelSpec& m, const wl::Strategy& s, bool head_gathers_tied) {
  if (u.holds_head && head_gathers_tied && m.tied_embeddings && u.layer == static_cast<int>(m.layers) && s.zero_stage == 3 && !s.l2l) {
    return u.params - static_cast<double>(m.vocab * m.hidden) / s.tp;
  }
  return u.params;
}

}  // namespace trainsim::sim
