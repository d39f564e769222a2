// A capture attached to a model: the layer's memory by where its buffers live, against the numbers the
// Python package's own reading of the document gives (trainsim_capture: buffers' alloc and free
// phases, summed by hand below from workloads/captures/llama_model_llama_py.recompute.json).
#include "captured_model.hpp"

#include <gtest/gtest.h>

#include "model_loader.hpp"
#include "stack_layer.hpp"
#include "test_support.hpp"

namespace trainsim::wl {
namespace {

ModelSpec tiny_llama() {
  return load_model(parse_json_text(R"({"schema_version": 1, "name": "llama_tiny", "description": "model_llama.py, tiny",
    "architecture": {"layers": 4, "hidden": 64, "heads": 4, "kv_heads": 2, "ffn_hidden": 176, "vocab": 512, "seq_len": 32,
      "tied_embeddings": false, "biases": false, "dropout": false, "norm": "rmsnorm", "mlp": "swiglu", "position": "rotary"},
    "numerics": {"precision": "bf16-mixed", "attention": "flash", "fp32_residual": true}})",
                                    "llama_tiny.json"));
}

TEST(CapturedModel, ALayersMemoryIsWhereItsBuffersLive) {
  ModelSpec m = tiny_llama();
  Strategy s;
  s.stack.kind = StackKind::PYTORCH;
  s.micro_batch = 2;
  s.seq = 32;
  s.recompute = Recompute::FULL;
  m.capture = attach_capture(test::source_path("workloads/captures/llama_model_llama_py.recompute.json"), "--capture", m, s);
  // alloc layer.forward, free layer.backward (the layer's output, freed by the next layer's backward): 16384
  // bytes; alloc layer.recompute, free layer.backward: 364032; alloc layer.forward, free head.forward
  // (autocast's weight casts, its cache cleared when the forward's autocast region exits): 92160.
  EXPECT_DOUBLE_EQ(m.capture->layer_memory.kept, 16384.0);
  EXPECT_DOUBLE_EQ(m.capture->layer_memory.recomputed, 364032.0);
  EXPECT_DOUBLE_EQ(m.capture->layer_memory.autocast_cache, 92160.0);
  EXPECT_DOUBLE_EQ(torch_layer_checkpoint_bytes(m, s), 16384.0);
  EXPECT_DOUBLE_EQ(torch_layer_saved_bytes(m, s), 16384.0 + 364032.0);
  EXPECT_DOUBLE_EQ(torch_autocast_cache_bytes(m, s), 92160.0);
  // The head's, from its buffers too (not the stack's own scripts' loss, torch_loss_bytes without a
  // capture): allocated by head.forward and alive when head.backward starts, 239104 bytes (two fp32
  // [b, s, h] of the final norm, 16384 each; an fp32 [b, s] and two scalars, 512 each; autocast's bf16
  // head weight, 65536; the norm's bf16 output, 8192; log_softmax's fp32 output, 131072; the bf16 logits,
  // 65536, are freed within head.forward); head.backward holds at most 262144 bytes more (its op 6:
  // nll_loss's and log_softmax's fp32 gradients, 131072 each).
  EXPECT_DOUBLE_EQ(m.capture->head_memory.kept, 239104.0);
  EXPECT_DOUBLE_EQ(m.capture->head_memory.backward_extra, 262144.0);
  EXPECT_DOUBLE_EQ(torch_loss_bytes(m, s).kept, 239104.0);
  EXPECT_DOUBLE_EQ(torch_loss_bytes(m, s).backward_extra, 262144.0);
}

}  // namespace
}  // namespace trainsim::wl
