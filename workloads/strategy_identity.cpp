#include "strategy_identity.hpp"

#include "captured_model.hpp"

#include <fmt/format.h>

namespace trainsim::wl {

std::string canonical_text(const Strategy& s) {
  const ZeroBuffers& b = s.buffers;
  return fmt::format(
      "gpus={} nodes={} dp={} tp={} pp={} vpp={} first_stage_layers={} last_stage_layers={} sp={} schedule={} zero={} "
      "offload_params={} offload_optimizer={} offload_activations={} recompute={} l2l={} delayed_update={} "
      "shards={} micro_batch={} global_batch={} seq={} buffers={:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},"
      "{:.17g},{:.17g},{:.17g} "
      "stack={},{},{},{},{}",
      s.gpus, s.nodes, s.dp, s.tp, s.pp, s.vpp, s.first_stage_layers, s.last_stage_layers, s.sp ? 1 : 0,
      to_string(s.schedule), s.zero_stage, to_string(s.offload_params), to_string(s.offload_optimizer),
      to_string(s.offload_activations), to_string(s.recompute), s.l2l ? 1 : 0, s.delayed_update ? 1 : 0, s.shards, s.micro_batch,
      s.global_batch, s.seq, b.reduce_bucket_elems, b.allgather_bucket_elems, b.offload_param_buffer_count,
      b.offload_param_buffer_elems, b.offload_optimizer_buffer_count, b.sub_group_elems, b.ddp_bucket_bytes,
      b.prefetch_bucket_elems, b.max_live_params, b.max_reuse_distance_elems,
      to_string(s.stack.kind), s.stack.gradient_as_bucket_view ? 1 : 0, to_string(s.stack.param_dtype),
      to_string(s.stack.reduce_dtype), s.stack.megatron_mpu ? 1 : 0) +
         // Only where set, so that every other strategy keeps its identity.
         (s.partition_activations ? " partition_activations=1" : "");
}

std::string canonical_text(const ModelSpec& m) {
  return fmt::format(
      "layers={} hidden={} heads={} kv_heads={} ffn_hidden={} vocab={} seq_len={} type_vocab={} tied={} biases={} "
      "dropout={} norm={} mlp={} position={} head={} numerics={} attention={} fp32_residual={} raw_params={:.17g}",
      m.layers, m.hidden, m.heads, m.kv_heads, m.ffn_hidden, m.vocab, m.seq_len, m.type_vocab, m.tied_embeddings ? 1 : 0,
      m.biases ? 1 : 0, m.dropout ? 1 : 0, to_string(m.norm), to_string(m.mlp), to_string(m.position), to_string(m.head),
      to_string(m.numerics), to_string(m.attention), m.fp32_residual ? 1 : 0, m.raw_params.value_or(-1.0)) +
         (m.capture ? " capture=" + m.capture->id : std::string());
}

std::uint64_t fnv1a64(std::string_view text, std::uint64_t seed) {
  std::uint64_t h = seed;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

std::uint64_t stable_hash(const Strategy& s) { return fnv1a64(canonical_text(s)); }

std::string hex64(std::uint64_t v) { return fmt::format("{:016x}", v); }

}  // namespace trainsim::wl
