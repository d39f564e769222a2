#include "gpt_layout.hpp"

#include <cmath>
#include <stdexcept>

#include "init_hash.hpp"

namespace trainsim::calibrate::ref {
namespace {

constexpr std::size_t ALIGN = 64;

std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

Unit make_unit(std::size_t offset, const std::vector<TensorSlot>& shapes, int shards) {
  Unit u;
  u.offset = offset;
  std::size_t at = 0;
  for (TensorSlot t : shapes) {
    t.offset = offset + at;
    at = round_up(at + t.size(), ALIGN);
    u.tensors.push_back(t);
  }
  u.size = round_up(at, ALIGN * static_cast<std::size_t>(shards));
  return u;
}

}  // namespace

std::int64_t gpt_param_count(const GptConfig& c) {
  const std::int64_t h = c.hidden;
  return c.layers * (12 * h * h + 13 * h) + (static_cast<std::int64_t>(c.vocab) + c.seq) * h + 2 * h;
}

void validate(const GptConfig& c) {
  auto positive = [](int v, const char* flag) {
    if (v <= 0) throw std::invalid_argument(std::string(flag) + ": expected a positive integer, got " + std::to_string(v));
  };
  positive(c.layers, "--layers");
  positive(c.hidden, "--hidden");
  positive(c.heads, "--heads");
  positive(c.vocab, "--vocab");
  positive(c.seq, "--seq");
  positive(c.micro_batch, "--micro-batch");
  if (c.hidden % c.heads != 0) {
    throw std::invalid_argument("--heads: expected a divisor of --hidden " + std::to_string(c.hidden) + ", got " +
                                std::to_string(c.heads));
  }
  if (c.hidden % 8 != 0) {
    throw std::invalid_argument("--hidden: expected a multiple of 8 (16-byte rows for the GEMMs), got " +
                                std::to_string(c.hidden));
  }
  if (c.head_dim() % 8 != 0) {
    throw std::invalid_argument("--heads: expected hidden / heads to be a multiple of 8, got " +
                                std::to_string(c.head_dim()));
  }
  if (c.vocab % 8 != 0 || c.seq % 8 != 0) {
    throw std::invalid_argument("--vocab and --seq: expected multiples of 8, got " + std::to_string(c.vocab) + " and " +
                                std::to_string(c.seq));
  }
}

std::vector<int> split_layers(int layers, int stages) {
  std::vector<int> per(static_cast<std::size_t>(stages), layers / stages);
  for (int i = 0; i < layers % stages; ++i) ++per[static_cast<std::size_t>(i)];
  return per;
}

ParamLayout make_layout(const GptConfig& c, int shards) {
  const std::size_t h = c.hidden, v = c.vocab, s = c.seq;
  ParamLayout p;
  std::size_t at = 0;
  p.units.push_back(make_unit(at, {{"wte", 0, v, h}, {"wpe", 0, s, h}}, shards));
  at += p.units.back().size;
  for (int l = 0; l < c.layers; ++l) {
    const std::string n = "h." + std::to_string(l) + ".";
    p.units.push_back(make_unit(at,
                                {{n + "ln1.g", 0, 1, h}, {n + "ln1.b", 0, 1, h}, {n + "qkv.w", 0, 3 * h, h},
                                 {n + "qkv.b", 0, 1, 3 * h}, {n + "proj.w", 0, h, h}, {n + "proj.b", 0, 1, h},
                                 {n + "ln2.g", 0, 1, h}, {n + "ln2.b", 0, 1, h}, {n + "fc1.w", 0, 4 * h, h},
                                 {n + "fc1.b", 0, 1, 4 * h}, {n + "fc2.w", 0, h, 4 * h}, {n + "fc2.b", 0, 1, h}},
                                shards));
    at += p.units.back().size;
  }
  p.units.push_back(make_unit(at, {{"lnf.g", 0, 1, h}, {"lnf.b", 0, 1, h}}, shards));
  at += p.units.back().size;
  p.total = at;
  p.params = gpt_param_count(c);
  return p;
}

int init_kind(const TensorSlot& t) {
  return t.name.ends_with(".g") ? INIT_GAIN : t.rows == 1 ? INIT_VECTOR : INIT_WEIGHT;
}

std::vector<float> initial_params(const ParamLayout& layout) {
  std::vector<float> values(layout.total, 0.0f);
  std::uint64_t tensor_id = 0;
  for (const Unit& u : layout.units) {
    for (const TensorSlot& t : u.tensors) {
      ++tensor_id;
      const int kind = init_kind(t);
      for (std::size_t i = 0; i < t.size(); ++i) values[t.offset + i] = initial_value(tensor_id, i, kind);
    }
  }
  return values;
}

Batch synthetic_batch(const GptConfig& c, std::uint64_t seed) {
  Batch b;
  const std::size_t n = static_cast<std::size_t>(c.tokens());
  b.tokens.resize(n);
  b.targets.resize(n);
  for (int i = 0; i < c.micro_batch; ++i) {
    for (int s = 0; s <= c.seq; ++s) {
      const auto tok = static_cast<std::int32_t>(splitmix64(seed * 0x100000001ULL + static_cast<std::uint64_t>(i) * 1000003 +
                                                     static_cast<std::uint64_t>(s)) %
                                                 static_cast<std::uint64_t>(c.vocab));
      const std::size_t at = static_cast<std::size_t>(i) * c.seq + s;
      if (s < c.seq) b.tokens[at] = tok;
      if (s > 0) b.targets[at - 1] = tok;
    }
  }
  return b;
}

}  // namespace trainsim::calibrate::ref
