#include "cpu_gpt.hpp"

#include <algorithm>
#include <cmath>

namespace trainsim::calibrate::ref {
namespace {

using Vec = std::vector<double>;
constexpr double SQRT_2_OVER_PI = 0.7978845608028654;

struct LnCache {
  Vec out, mean, rstd;
};

// out[t] = (x[t] - mean) * rstd * g + b, per row of n.
void ln_fwd(const Vec& x, const double* g, const double* b, std::size_t rows, std::size_t n, LnCache& c) {
  c.out.assign(rows * n, 0);
  c.mean.assign(rows, 0);
  c.rstd.assign(rows, 0);
  for (std::size_t r = 0; r < rows; ++r) {
    const double* xr = &x[r * n];
    double m = 0, v = 0;
    for (std::size_t i = 0; i < n; ++i) m += xr[i];
    m /= static_cast<double>(n);
    for (std::size_t i = 0; i < n; ++i) v += (xr[i] - m) * (xr[i] - m);
    const double rs = 1.0 / std::sqrt(v / static_cast<double>(n) + LN_EPS);
    c.mean[r] = m;
    c.rstd[r] = rs;
    for (std::size_t i = 0; i < n; ++i) c.out[r * n + i] = (xr[i] - m) * rs * g[i] + b[i];
  }
}

// dx += LN'(dy); dg, db accumulated.
void ln_bwd(const Vec& x, const LnCache& c, const double* g, const Vec& dy, std::size_t rows, std::size_t n, Vec& dx,
            double* dg, double* db) {
  for (std::size_t r = 0; r < rows; ++r) {
    double sum_dxhat = 0, sum_dxhat_xhat = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double xhat = (x[r * n + i] - c.mean[r]) * c.rstd[r];
      const double dxhat = dy[r * n + i] * g[i];
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * xhat;
      dg[i] += dy[r * n + i] * xhat;
      db[i] += dy[r * n + i];
    }
    const double nn = static_cast<double>(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double xhat = (x[r * n + i] - c.mean[r]) * c.rstd[r];
      const double dxhat = dy[r * n + i] * g[i];
      dx[r * n + i] += c.rstd[r] * (dxhat - sum_dxhat / nn - xhat * sum_dxhat_xhat / nn);
    }
  }
}

// y[r, o] = sum_i x[r, i] w[o, i] + b[o]  (w is [out, in], as nn.Linear).
Vec linear_fwd(const Vec& x, const double* w, const double* b, std::size_t rows, std::size_t in, std::size_t out) {
  Vec y(rows * out);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t o = 0; o < out; ++o) {
      double s = b != nullptr ? b[o] : 0.0;
      for (std::size_t i = 0; i < in; ++i) s += x[r * in + i] * w[o * in + i];
      y[r * out + o] = s;
    }
  }
  return y;
}

// dx = dy w, dw += dy^T x, db += colsum(dy).
Vec linear_bwd(const Vec& x, const double* w, const Vec& dy, std::size_t rows, std::size_t in, std::size_t out,
               double* dw, double* db) {
  Vec dx(rows * in, 0);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t o = 0; o < out; ++o) {
      const double d = dy[r * out + o];
      if (db != nullptr) db[o] += d;
      for (std::size_t i = 0; i < in; ++i) {
        dx[r * in + i] += d * w[o * in + i];
        dw[o * in + i] += d * x[r * in + i];
      }
    }
  }
  return dx;
}

struct LayerCache {
  Vec x_in;
  LnCache ln1;
  Vec qkv;   // [T, 3h]
  Vec prob;  // [B, heads, s, s], causal softmax
  Vec attn;  // [T, h], heads merged
  Vec x_mid;
  LnCache ln2;
  Vec fc1;  // pre-activation [T, 4h]
  Vec act;  // gelu(fc1)
};

struct Forward {
  std::vector<LayerCache> layers;
  Vec x_final;
  LnCache lnf;
  Vec prob;  // softmax of the logits [T, V]
  double loss = 0;
};

Forward forward(const GptConfig& c, const ParamLayout& L, const Vec& p, const Batch& batch) {
  const std::size_t T = static_cast<std::size_t>(c.tokens()), h = c.hidden, S = c.seq, V = c.vocab;
  const std::size_t nh = c.heads, d = c.head_dim();
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  Forward f;
  Vec x(T * h);
  const double* wte = &p[L.embed(WTE).offset];
  const double* wpe = &p[L.embed(WPE).offset];
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t i = 0; i < h; ++i) x[t * h + i] = wte[batch.tokens[t] * h + i] + wpe[(t % S) * h + i];
  }
  for (int l = 0; l < c.layers; ++l) {
    auto P = [&](LayerTensor k) { return &p[L.layer(l, k).offset]; };
    LayerCache lc;
    lc.x_in = x;
    ln_fwd(x, P(LN1_G), P(LN1_B), T, h, lc.ln1);
    lc.qkv = linear_fwd(lc.ln1.out, P(W_QKV), P(B_QKV), T, h, 3 * h);
    lc.prob.assign(c.micro_batch * nh * S * S, 0);
    lc.attn.assign(T * h, 0);
    for (std::size_t b = 0; b < static_cast<std::size_t>(c.micro_batch); ++b) {
      for (std::size_t hd = 0; hd < nh; ++hd) {
        double* pr = &lc.prob[((b * nh + hd) * S) * S];
        for (std::size_t i = 0; i < S; ++i) {
          const double* q = &lc.qkv[(b * S + i) * 3 * h + hd * d];
          double mx = -1e300;
          for (std::size_t j = 0; j <= i; ++j) {
            const double* k = &lc.qkv[(b * S + j) * 3 * h + h + hd * d];
            double s = 0;
            for (std::size_t e = 0; e < d; ++e) s += q[e] * k[e];
            pr[i * S + j] = s * scale;
            mx = std::max(mx, s * scale);
          }
          double z = 0;
          for (std::size_t j = 0; j <= i; ++j) z += (pr[i * S + j] = std::exp(pr[i * S + j] - mx));
          for (std::size_t j = 0; j <= i; ++j) pr[i * S + j] /= z;
          double* o = &lc.attn[(b * S + i) * h + hd * d];
          for (std::size_t j = 0; j <= i; ++j) {
            const double* v = &lc.qkv[(b * S + j) * 3 * h + 2 * h + hd * d];
            for (std::size_t e = 0; e < d; ++e) o[e] += pr[i * S + j] * v[e];
          }
        }
      }
    }
    Vec y = linear_fwd(lc.attn, P(W_O), P(B_O), T, h, h);
    for (std::size_t i = 0; i < T * h; ++i) x[i] += y[i];
    lc.x_mid = x;
    ln_fwd(x, P(LN2_G), P(LN2_B), T, h, lc.ln2);
    lc.fc1 = linear_fwd(lc.ln2.out, P(W_FC1), P(B_FC1), T, h, 4 * h);
    lc.act.resize(lc.fc1.size());
    for (std::size_t i = 0; i < lc.fc1.size(); ++i) lc.act[i] = gelu(lc.fc1[i]);
    y = linear_fwd(lc.act, P(W_FC2), P(B_FC2), T, 4 * h, h);
    for (std::size_t i = 0; i < T * h; ++i) x[i] += y[i];
    f.layers.push_back(std::move(lc));
  }
  f.x_final = x;
  ln_fwd(x, &p[L.final_ln(LNF_G).offset], &p[L.final_ln(LNF_B).offset], T, h, f.lnf);
  f.prob = linear_fwd(f.lnf.out, wte, nullptr, T, h, V);  // tied head: logits = x wte^T
  for (std::size_t t = 0; t < T; ++t) {
    double* row = &f.prob[t * V];
    const double mx = *std::max_element(row, row + V);
    double z = 0;
    for (std::size_t j = 0; j < V; ++j) z += std::exp(row[j] - mx);
    f.loss += (mx + std::log(z) - row[batch.targets[t]]) / static_cast<double>(T);
    for (std::size_t j = 0; j < V; ++j) row[j] = std::exp(row[j] - mx) / z;
  }
  return f;
}

}  // namespace

double gelu(double x) { return 0.5 * x * (1.0 + std::tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x))); }

double gelu_grad(double x) {
  const double t = std::tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * x * x);
}

double cpu_gpt_loss(const GptConfig& c, const ParamLayout& layout, const std::vector<double>& params,
                    const Batch& batch) {
  return forward(c, layout, params, batch).loss;
}

CpuLossAndGrad cpu_gpt_loss_and_grad(const GptConfig& c, const ParamLayout& L, const std::vector<double>& p,
                                     const Batch& batch) {
  const std::size_t T = static_cast<std::size_t>(c.tokens()), h = c.hidden, S = c.seq, V = c.vocab;
  const std::size_t nh = c.heads, d = c.head_dim();
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  Forward f = forward(c, L, p, batch);
  CpuLossAndGrad out;
  out.loss = f.loss;
  Vec& g = out.grad;
  g.assign(p.size(), 0);
  // d loss / d logits = (softmax - onehot) / T.
  Vec dlogits = f.prob;
  for (std::size_t t = 0; t < T; ++t) {
    dlogits[t * V + batch.targets[t]] -= 1.0;
    for (std::size_t j = 0; j < V; ++j) dlogits[t * V + j] /= static_cast<double>(T);
  }
  const double* wte = &p[L.embed(WTE).offset];
  Vec dlnf = linear_bwd(f.lnf.out, wte, dlogits, T, h, V, &g[L.embed(WTE).offset], nullptr);
  Vec dx(T * h, 0);
  ln_bwd(f.x_final, f.lnf, &p[L.final_ln(LNF_G).offset], dlnf, T, h, dx, &g[L.final_ln(LNF_G).offset],
         &g[L.final_ln(LNF_B).offset]);
  for (int l = c.layers - 1; l >= 0; --l) {
    const LayerCache& lc = f.layers[l];
    auto P = [&](LayerTensor k) { return &p[L.layer(l, k).offset]; };
    auto G = [&](LayerTensor k) { return &g[L.layer(l, k).offset]; };
    // MLP: x_out = x_mid + fc2(gelu(fc1(ln2(x_mid)))).
    Vec dact = linear_bwd(lc.act, P(W_FC2), dx, T, 4 * h, h, G(W_FC2), G(B_FC2));
    for (std::size_t i = 0; i < dact.size(); ++i) dact[i] *= gelu_grad(lc.fc1[i]);
    Vec dln2 = linear_bwd(lc.ln2.out, P(W_FC1), dact, T, h, 4 * h, G(W_FC1), G(B_FC1));
    ln_bwd(lc.x_mid, lc.ln2, P(LN2_G), dln2, T, h, dx, G(LN2_G), G(LN2_B));
    // Attention: x_mid = x_in + proj(attn(qkv(ln1(x_in)))).
    Vec dattn = linear_bwd(lc.attn, P(W_O), dx, T, h, h, G(W_O), G(B_O));
    Vec dqkv(T * 3 * h, 0);
    for (std::size_t b = 0; b < static_cast<std::size_t>(c.micro_batch); ++b) {
      for (std::size_t hd = 0; hd < nh; ++hd) {
        const double* pr = &lc.prob[((b * nh + hd) * S) * S];
        for (std::size_t i = 0; i < S; ++i) {
          const double* dout = &dattn[(b * S + i) * h + hd * d];
          Vec dp(i + 1);
          double dot = 0;
          for (std::size_t j = 0; j <= i; ++j) {
            const double* v = &lc.qkv[(b * S + j) * 3 * h + 2 * h + hd * d];
            double* dv = &dqkv[(b * S + j) * 3 * h + 2 * h + hd * d];
            double s = 0;
            for (std::size_t e = 0; e < d; ++e) {
              s += dout[e] * v[e];
              dv[e] += pr[i * S + j] * dout[e];
            }
            dp[j] = s;
            dot += s * pr[i * S + j];
          }
          const double* q = &lc.qkv[(b * S + i) * 3 * h + hd * d];
          double* dq = &dqkv[(b * S + i) * 3 * h + hd * d];
          for (std::size_t j = 0; j <= i; ++j) {
            const double ds = pr[i * S + j] * (dp[j] - dot) * scale;
            const double* k = &lc.qkv[(b * S + j) * 3 * h + h + hd * d];
            double* dk = &dqkv[(b * S + j) * 3 * h + h + hd * d];
            for (std::size_t e = 0; e < d; ++e) {
              dq[e] += ds * k[e];
              dk[e] += ds * q[e];
            }
          }
        }
      }
    }
    Vec dln1 = linear_bwd(lc.ln1.out, P(W_QKV), dqkv, T, h, 3 * h, G(W_QKV), G(B_QKV));
    ln_bwd(lc.x_in, lc.ln1, P(LN1_G), dln1, T, h, dx, G(LN1_G), G(LN1_B));
  }
  double* dwte = &g[L.embed(WTE).offset];
  double* dwpe = &g[L.embed(WPE).offset];
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t i = 0; i < h; ++i) {
      dwte[batch.tokens[t] * h + i] += dx[t * h + i];
      dwpe[(t % S) * h + i] += dx[t * h + i];
    }
  }
  return out;
}

}  // namespace trainsim::calibrate::ref
