#pragma once
// The GEMMs a transformer layer runs, forward and both backward products, in the layouts a
// framework's Linear layer uses (weights stored [out, in], Y = X W^T):
//   forward   Y[T,n]  = X[T,k] W[n,k]^T    (m=T, n=n, k=k, B transposed)
//   dgrad     dX[T,k] = dY[T,n] W[n,k]     (m=T, n=k, k=n)
//   wgrad     dW[n,k] = dY[T,n]^T X[T,k]   (m=n, n=k, k=T, A transposed)
// for the QKV (k=h, n=3h), projection (h, h), MLP up (h, 4h) and MLP down (4h, h) layers, with
// T = b*s tokens; and attention's batched products per head (head dim d, sequence s):
//   scores S = Q K^T (s,s,d), context O = P V (s,d,s) and the backward products' one new
//   layout, dV = P^T dO (s,d,s, A transposed); the other backward products repeat these.
// All matrices are row-major; `trans_a`/`trans_b` say whether the stored operand is transposed.

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::calibrate {

struct GemmShape {
  std::string layer;  // "qkv", "proj", "mlp_up", "mlp_down", "attn_score", "attn_context", "square"
  std::string pass;   // "fwd", "dgrad", "wgrad"
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;
  bool trans_a = false, trans_b = false;
  std::int64_t tokens = 0;  // b*s (dense) or s (attention)
  std::int64_t hidden = 0;  // h (dense) or head dim (attention)

  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch); }
  // Bytes of A, B and C together for elements of `element_bytes`.
  double bytes(int element_bytes) const {
    return static_cast<double>(batch) * element_bytes *
           (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n);
  }
  std::string layout() const { return std::string(trans_a ? "T" : "N") + (trans_b ? "T" : "N"); }
};

std::vector<GemmShape> dense_layer_shapes(const std::vector<std::int64_t>& tokens, const std::vector<std::int64_t>& hiddens);
// The output layer's products (hidden -> vocabulary), whose n is far from every layer's.
std::vector<GemmShape> logits_shapes(const std::vector<std::int64_t>& tokens, const std::vector<std::int64_t>& hiddens,
                                     std::int64_t vocab);
// `batch_elements`: batch * s * s is kept near this so every shape fills the GPU.
std::vector<GemmShape> attention_shapes(const std::vector<std::int64_t>& seqs, std::int64_t head_dim,
                                        std::int64_t batch_elements);
GemmShape square_shape(std::int64_t size);

}  // namespace trainsim::calibrate
