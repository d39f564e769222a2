#include "gemm_shapes.hpp"

#include <algorithm>

namespace trainsim::calibrate {
namespace {

// The three products of one Linear layer with `in` inputs and `out` outputs over T tokens.
void linear_layer(std::vector<GemmShape>& out, const std::string& layer, std::int64_t tokens, std::int64_t hidden,
                  std::int64_t in, std::int64_t outputs) {
  out.push_back({layer, "fwd", tokens, outputs, in, 1, false, true, tokens, hidden});
  out.push_back({layer, "dgrad", tokens, in, outputs, 1, false, false, tokens, hidden});
  out.push_back({layer, "wgrad", outputs, in, tokens, 1, true, false, tokens, hidden});
}

}  // namespace

std::vector<GemmShape> dense_layer_shapes(const std::vector<std::int64_t>& tokens, const std::vector<std::int64_t>& hiddens) {
  std::vector<GemmShape> out;
  for (std::int64_t t : tokens) {
    for (std::int64_t h : hiddens) {
      linear_layer(out, "qkv", t, h, h, 3 * h);
      linear_layer(out, "proj", t, h, h, h);
      linear_layer(out, "mlp_up", t, h, h, 4 * h);
      linear_layer(out, "mlp_down", t, h, 4 * h, h);
    }
  }
  return out;
}

std::vector<GemmShape> logits_shapes(const std::vector<std::int64_t>& tokens, const std::vector<std::int64_t>& hiddens,
                                     std::int64_t vocab) {
  std::vector<GemmShape> out;
  for (std::int64_t t : tokens) {
    for (std::int64_t h : hiddens) linear_layer(out, "logits", t, h, h, vocab);
  }
  return out;
}

std::vector<GemmShape> attention_shapes(const std::vector<std::int64_t>& seqs, std::int64_t head_dim,
                                        std::int64_t batch_elements) {
  std::vector<GemmShape> out;
  for (std::int64_t s : seqs) {
    const std::int64_t batch = std::max<std::int64_t>(1, batch_elements / (s * s));
    const std::int64_t d = head_dim;
    // S = Q K^T (NT) and O = P V (NN). The backward products repeat these shapes and layouts:
    // dP = dO V^T is NT like S, dQ = dS K is NN like O, and dV = P^T dO and dK = dS^T Q are the
    // one new layout (TN), measured once.
    out.push_back({"attn_score", "fwd", s, s, d, batch, false, true, s, d});
    out.push_back({"attn_context", "fwd", s, d, s, batch, false, false, s, d});
    out.push_back({"attn_context", "wgrad", s, d, s, batch, true, false, s, d});
  }
  return out;
}

GemmShape square_shape(std::int64_t size) { return {"square", "fwd", size, size, size, 1, false, false, size, size}; }

}  // namespace trainsim::calibrate
