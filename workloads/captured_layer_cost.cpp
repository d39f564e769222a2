#include "captured_layer_cost.hpp"

#include <fmt/format.h>

namespace trainsim::wl {
namespace {

double split_by(const CaptureDocument& doc, const CapturedOp& o, std::int64_t value, std::int64_t tp, const char* what) {
  if (value % tp != 0) {
    throw ConfigError(doc.source, o.op + " " + what, fmt::format("a size that tensor parallelism of {} divides", tp),
                      std::to_string(value));
  }
  return static_cast<double>(value / tp);
}

Gemm gemm_of(const CaptureDocument& doc, const CapturedOp& o, std::int64_t tp) {
  const CapturedGemm& g = *o.gemm;
  Gemm out{op_class_name(o.cls), static_cast<double>(g.m.value), static_cast<double>(g.n.value),
           static_cast<double>(g.k.value), static_cast<double>(g.batch.value)};
  out.fp32 = g.dtype == "f32";
  if (tp == 1) return out;
  // A weight's GEMM splits as Megatron splits its Linear (gemm.tp.split); a product of activations
  // (SDPA math's scores and context) splits with the heads its batch carries.
  switch (g.tp_split) {
    case 'm': out.m = split_by(doc, o, g.m.value, tp, "gemm.m"); break;
    case 'n': out.n = split_by(doc, o, g.n.value, tp, "gemm.n"); break;
    case 'k': out.k = split_by(doc, o, g.k.value, tp, "gemm.k"); break;
    default:
      if (g.pass == "activation" && (g.batch.expr.mentions("a") || g.batch.expr.mentions("kv") || g.batch.expr.mentions("g"))) {
        out.batch = split_by(doc, o, g.batch.value, tp, "gemm.batch");
      }
  }
  return out;
}

// FlashAttention-2's products (SCHEMA.md, "Bytes and FLOPs"): forward QK^T and PV, 4 b heads s_q s_kv d;
// backward 2.5 times that as five products (QK^T again, dV, dP, dQ, dK); causal halves both, which
// the entries carry in their batch so that their FLOPs equal the capture's.
void attention(const CaptureDocument& doc, const CapturedOp& o, std::int64_t tp, PassCost& pass) {
  const CapturedAttention& a = *o.attention;
  const double heads = split_by(doc, o, a.heads.value, tp, "attention.heads");
  if (tp > 1) split_by(doc, o, a.kv_heads.value, tp, "attention.kv_heads");
  const double bh = static_cast<double>(a.b.value) * heads * (a.causal ? 0.5 : 1.0);
  const double sq = static_cast<double>(a.s_q.value), skv = static_cast<double>(a.s_kv.value);
  const double d = static_cast<double>(a.head_dim.value), dv = static_cast<double>(a.head_dim_v.value);
  const bool backward = o.cls == OpClass::ATTENTION_BWD;
  pass.gemms.push_back({"attention_scores", sq, skv, d, bh});
  pass.gemms.push_back({"attention_context", sq, dv, skv, bh});  // backward: dV = P^T dO
  if (backward) {
    pass.gemms.push_back({"attention_scores", sq, skv, dv, bh});      // dP = dO V^T
    pass.gemms.push_back({"attention_context", sq, d, skv, bh});      // dQ = dS K
    pass.gemms.push_back({"attention_context", skv, d, sq, bh});      // dK = dS^T Q
  }
  if (a.backend == "flash") {
    pass.fused_attention = true;
    pass.flash = {static_cast<double>(a.b.value) * heads, sq, d, backward};
  }
}

// The generic calibrated kernel closest in access pattern to a captured class (calibrate/cuda/
// memory_kernels.cu: copy, layernorm, gelu, softmax): a normalization reduces over each row and
// writes it back as the layernorm does; a softmax and the loss (log_softmax and nll_loss over the
// vocabulary) reduce over each row twice as the softmax does; every other class streams its bytes
// once, as the copy does.
KernelClass generic_class(OpClass c) {
  switch (c) {
    case OpClass::NORMALIZATION: return KernelClass::LAYERNORM;
    case OpClass::SOFTMAX:
    case OpClass::LOSS: return KernelClass::SOFTMAX;
    default: return KernelClass::COPY;
  }
}

}  // namespace

PassCost captured_pass_cost(const CaptureDocument& doc, const CapturedPhase& phase, std::int64_t tp) {
  if (tp < 1) throw ConfigError(doc.source, "tp", "a tensor-parallel degree >= 1", std::to_string(tp));
  PassCost pass;
  for (const auto& o : phase.ops) {
    pass.launches += static_cast<double>(o.kernels);
    switch (o.cls) {
      case OpClass::GEMM:
      case OpClass::BATCHED_GEMM: pass.gemms.push_back(gemm_of(doc, o, tp)); continue;
      case OpClass::ATTENTION_FWD:
      case OpClass::ATTENTION_BWD: attention(doc, o, tp, pass); continue;
      default: break;
    }
    if (o.kernels == 0) continue;  // views, allocations, syncs, host ops: no kernel to cost
    // Elementwise work on tensors that carry heads or the MLP width runs 1/tp per rank; the norms and
    // residual adds on [b, s, h] are replicated (SCHEMA.md, "Tensor parallelism"; no sequence parallelism).
    const double share = o.carries_tp_symbol ? 1.0 / static_cast<double>(tp) : 1.0;
    pass.kernels.push_back({op_class_name(o.cls),
                            static_cast<double>(o.bytes_read.value + o.bytes_written.value) * share,
                            o.compute_stream, generic_class(o.cls)});
  }
  return pass;
}

CapturedCosts captured_costs(const CaptureDocument& doc, std::int64_t tp) {
  CapturedCosts out;
  for (const auto& l : doc.layers) {
    CapturedLayerCost c;
    c.kind = l.kind;
    c.count = l.count;
    c.cost.forward = captured_pass_cost(doc, l.forward, tp);
    c.cost.backward = captured_pass_cost(doc, l.backward, tp);
    c.recompute = captured_pass_cost(doc, l.recompute, tp);
    out.layers.emplace(l.kind, std::move(c));
  }
  out.embedding = {captured_pass_cost(doc, doc.ends.at("embed.forward"), tp),
                   captured_pass_cost(doc, doc.ends.at("embed.backward"), tp)};
  out.head = {captured_pass_cost(doc, doc.ends.at("head.forward"), tp),
              captured_pass_cost(doc, doc.ends.at("head.backward"), tp)};
  return out;
}

}  // namespace trainsim::wl
