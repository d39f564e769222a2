// The tensors a PyTorch stack's layer saves for its backward (workloads/stacks/training_stacks.md,
// "autocast" and "FSDP2"), counted as the measured GPT allocates them: flash attention writes its
// output as [b, s, heads, head_dim], so the projection reads it through a view, with no copy
// (reports/validation/memory_peak/: one 2Th allocation at the attention line, one at the residual
// add after the projection).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model_loader.hpp"
#include "stack_layer.hpp"
#include "strategy_input.hpp"
#include "test_support.hpp"

namespace trainsim::wl {
namespace {

// The Linear layers' weights and biases of one layer (what autocast casts), worked by hand:
// GPT-2 XL (h = 1600, FFN 4h, biases): QKV 3h^2 + 3h, projection h^2 + h, FC1 4h^2 + 4h, FC2 4h^2 + h,
// 12h^2 + 9h = 30,720,000 + 14,400 (with two LayerNorms per layer, the embeddings and the final norm
// this gives Hugging Face gpt2-xl's 1,557,611,200 parameters).
constexpr double GPT2_XL_LINEAR_PARAMS = 30734400;
// The Llama row's layer (h = 4096, 8 of 32 heads for K and V: kv = 1024, SwiGLU FFN 14336, no biases):
// QKV 4096 x 6144 = 25,165,824, projection 4096^2 = 16,777,216, gate, up and down 3 x 4096 x 14336 =
// 176,160,768 (with its norms, embeddings and head this gives the 4,540,469,248 parameters its model
// file counts from model_llama.py).
constexpr double LLAMA_ROW_LINEAR_PARAMS = 218103808;

Strategy torch_strategy(StackKind kind, const ModelSpec& m, ModelSpec& resolved, int zero = -1) {
  StrategyInput in;
  in.gpus.set(2, "t");
  in.dp.set(2, "t");
  in.zero.set(zero >= 0 ? zero : kind == StackKind::PYTORCH_FSDP ? 3 : 0, "t");
  in.micro_batch.set(2, "t");
  in.precision.set(Numerics::BF16_MIXED, "t");
  TrainingStack stack;
  stack.kind = kind;
  in.stack.set(stack, "t");
  const ResolvedInputs r = resolve_inputs(in, m, {8, 1, "t"});
  resolved = r.model;
  resolved.attention = AttentionImpl::FLASH;  // as the measured GPT (no softmax output saved)
  return r.strategy;
}

TEST(TorchLayerSaved, Fsdp2LayerKeeps32ThAndTheLogSumExp) {
  ModelSpec m;
  const Strategy s = torch_strategy(StackKind::PYTORCH_FSDP, builtin_model("gpt2-1.5b"), m);
  const double T = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq);
  const double h = static_cast<double>(m.hidden);
  ASSERT_EQ(m.ffn_hidden, 4 * m.hidden);
  // bf16: x, LN1 out, QKV (3h), attention output, x + attn, LN2 out (8h in all), FC1 out and GELU
  // out (4h each): 16h elements of 2 bytes; fp32 log-sum-exp per head and token.
  EXPECT_DOUBLE_EQ(torch_layer_saved_bytes(m, s), 32 * T * h + 4 * static_cast<double>(m.heads) * T);
}

TEST(TorchLayerSaved, AutocastLayerKeeps36ThTheWeightCopiesAndTheLogSumExp) {
  ModelSpec m;
  const Strategy s = torch_strategy(StackKind::PYTORCH_DDP, builtin_model("gpt2-1.5b"), m);
  const double T = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq);
  const double h = static_cast<double>(m.hidden);
  // fp32 x and x + attn (8Th), bf16 casts of the norm outputs, QKV, attention output (12Th), FC1
  // and GELU outputs (16Th); the bf16 copies of the Linear weights and biases.
  EXPECT_DOUBLE_EQ(torch_layer_saved_bytes(m, s),
                   36 * T * h + 2 * GPT2_XL_LINEAR_PARAMS + 4 * static_cast<double>(m.heads) * T);
}

double kernel_bytes(const PassCost& pass, const std::string& name) {
  double b = 0;
  for (const MemoryKernel& k : pass.kernels) {
    if (k.name == name) b += k.bytes;
  }
  return b;
}

double copy_bytes(const PassCost& pass) {
  return kernel_bytes(pass, "torch:copy_fp32") + kernel_bytes(pass, "torch:split_copy_bf16");
}

// FSDP2 copies each all-gather's output into the unit's unsharded parameters on the compute stream
// (split_with_sizes_copy; workloads/stacks/training_stacks.md, "FSDP2"): one bf16 read and write of every
// parameter per gather. The profiled ZeRO-2 and ZeRO-3 steps hold one such copy per unit and
// micro-batch, and two (forward and backward gathers) under ZeRO-3 (reports/validation/measured/
// h200x4/h200x4_fsdp2-zero2_L52-h5120_mb1x2.trace.json.gz: 106 copies for 53 units and 2
// micro-batches, 35 ms of a 1.10 s step; ..._fsdp2-zero3_L48-h6144_mb1x2: 196, 105 ms of 1.52 s).
TEST(TorchLayerCost, Fsdp2CopiesEachGatheredUnitOutOncePerGather) {
  ModelSpec m;
  const Strategy zero3 = torch_strategy(StackKind::PYTORCH_FSDP, builtin_model("gpt2-1.5b"), m, 3);
  const Strategy zero2 = torch_strategy(StackKind::PYTORCH_FSDP, builtin_model("gpt2-1.5b"), m, 2);
  const Strategy ddp = torch_strategy(StackKind::PYTORCH_DDP, builtin_model("gpt2-1.5b"), m);
  const double per_gather = 2 * 2 * GPT2_XL_LINEAR_PARAMS;
  const LayerCost c3 = torch_layer_cost(m, zero3), c2 = torch_layer_cost(m, zero2), cd = torch_layer_cost(m, ddp);
  EXPECT_DOUBLE_EQ(copy_bytes(c3.forward) - copy_bytes(cd.forward), per_gather);
  EXPECT_DOUBLE_EQ(copy_bytes(c2.forward) - copy_bytes(cd.forward), per_gather);
  EXPECT_DOUBLE_EQ(copy_bytes(c3.backward) - copy_bytes(c2.backward), per_gather);
}

// Before each all-gather FSDP2 copies the cast bf16 shard into the flat all-gather input
// (all_gather_copy_in): 4 bytes per shard parameter per gather, one gather under ZeRO-2 and two
// under ZeRO-3 (workloads/stacks/training_stacks.md, "FSDP2"; seen in every FSDP2 trace of the Llama rows
// on 2 x H200 as a foreach copy launched as often as the foreach cast). DDP gathers nothing.
TEST(TorchLayerCost, Fsdp2CopiesTheShardInBeforeEachGather) {
  ModelSpec m;
  const Strategy zero3 = torch_strategy(StackKind::PYTORCH_FSDP, builtin_model("gpt2-1.5b"), m, 3);
  const Strategy zero2 = torch_strategy(StackKind::PYTORCH_FSDP, builtin_model("gpt2-1.5b"), m, 2);
  const Strategy ddp = torch_strategy(StackKind::PYTORCH_DDP, builtin_model("gpt2-1.5b"), m);
  const double shard = GPT2_XL_LINEAR_PARAMS / 2;  // two data-parallel ranks
  EXPECT_DOUBLE_EQ(kernel_bytes(torch_layer_cost(m, zero3).forward, "torch:foreach_copy_bf16"), 2 * 4 * shard);
  EXPECT_DOUBLE_EQ(kernel_bytes(torch_layer_cost(m, zero2).forward, "torch:foreach_copy_bf16"), 4 * shard);
  EXPECT_DOUBLE_EQ(kernel_bytes(torch_layer_cost(m, ddp).forward, "torch:foreach_copy_bf16"), 0);
}

// The Llama-style layer as PyTorch runs it (reports/validation/scripts/model_llama.py, validated by
// the measured Llama 3 8B rows on 1, 2 and 4 H200s): an RMSNorm model's final norm is an RMSNorm, a rotary model looks up
// its tokens only (no position embedding to add), an untied embedding is a weight with work of its
// own, and grouped-query attention's backward sums each group's dK and dV.
// The model of the committed single-GPU Llama row.
ModelSpec llama_like() {
  return load_model_file(
      test::source_path("reports/validation/measured/llama-h200x2/h200x1_single_llama_L16-h4096_mb1x2.model.json"));
}

bool has_kernel(const PassCost& pass, const std::string& name) {
  for (const MemoryKernel& k : pass.kernels) {
    if (k.name == name) return true;
  }
  return false;
}

TEST(TorchLlamaLayer, FinalNormIsTheModelsOwn) {
  ModelSpec m;
  const Strategy s = torch_strategy(StackKind::PYTORCH_DDP, llama_like(), m);
  const LayerCost out = torch_output_cost(m, s);
  EXPECT_TRUE(has_kernel(out.forward, "torch:rmsnorm_fwd_fp32"));
  EXPECT_TRUE(has_kernel(out.backward, "torch:rmsnorm_fwd_bwd_fp32"));
  EXPECT_FALSE(has_kernel(out.forward, "torch:layernorm_fwd_fp32"));
  ModelSpec g;
  const Strategy sg = torch_strategy(StackKind::PYTORCH_FSDP, builtin_model("gpt2-1.5b"), g);
  EXPECT_TRUE(has_kernel(torch_output_cost(g, sg).forward, "torch:layernorm_fwd_bf16"));
}

// Two micro-batches a step on each of 2 data-parallel ranks, so that gradients accumulate.
Strategy accumulating_ddp(const ModelSpec& m, ModelSpec& resolved) {
  StrategyInput in;
  in.gpus.set(2, "t");
  in.dp.set(2, "t");
  in.micro_batch.set(2, "t");
  in.global_batch.set(8, "t");
  in.precision.set(Numerics::BF16_MIXED, "t");
  TrainingStack stack;
  stack.kind = StackKind::PYTORCH_DDP;
  in.stack.set(stack, "t");
  const ResolvedInputs r = resolve_inputs(in, m, {8, 1, "t"});
  resolved = r.model;
  return r.strategy;
}

TEST(TorchLlamaLayer, RotaryModelAddsNoPositionsAndItsUntiedEmbeddingAccumulates) {
  ModelSpec m, g;
  const Strategy s = accumulating_ddp(llama_like(), m);
  const Strategy sg = accumulating_ddp(builtin_model("gpt2-1.5b"), g);
  ASSERT_EQ(s.micro_batches(), 2);
  const LayerCost e = torch_embedding_cost(m, s), eg = torch_embedding_cost(g, sg);
  EXPECT_FALSE(has_kernel(e.forward, "torch:add_fp32"));
  EXPECT_TRUE(has_kernel(eg.forward, "torch:add_fp32"));
  // Untied, its own fp32 gradient accumulates on the second micro-batch (read 4 + 4, write 4 an
  // element); tied, the head's accumulation (torch_output_cost) is the embedding's too.
  const double Vh = static_cast<double>(m.vocab) * static_cast<double>(m.hidden);
  EXPECT_DOUBLE_EQ(kernel_bytes(e.backward, "torch:add_inplace_fp32"), 0.5 * 12 * Vh);
  EXPECT_FALSE(has_kernel(eg.backward, "torch:add_inplace_fp32"));
}

TEST(TorchLlamaLayer, GroupedQueryAttentionSumsItsGroupsGradients) {
  ModelSpec gqa, mha;
  const Strategy s = torch_strategy(StackKind::PYTORCH_FSDP, llama_like(), gqa);
  ModelSpec full_heads = llama_like();
  full_heads.kv_heads = full_heads.heads;
  const Strategy s2 = torch_strategy(StackKind::PYTORCH_FSDP, full_heads, mha);
  const double T = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq);
  const double h = static_cast<double>(gqa.hidden), kv = static_cast<double>(gqa.kv_hidden());
  EXPECT_DOUBLE_EQ(kernel_bytes(torch_layer_cost(gqa, s).backward, "torch:add_bf16") -
                       kernel_bytes(torch_layer_cost(mha, s2).backward, "torch:add_bf16"),
                   4 * T * (h + kv));
}

// The kernels a layer runs beside its GEMMs that a contiguous kernel bench has not
// (calibrate/scripts/torch_layer_kernels.py; the single-GPU 0.36 B GPT row's trace holds
// each of them: four bias-gradient reductions, two mixed-dtype residual adds and one cat a layer and
// micro-batch).
TEST(TorchLayerKernels, EachBiasedLinearReducesItsOutputGradientOnce) {
  ModelSpec m;
  const Strategy s = torch_strategy(StackKind::PYTORCH_DDP, builtin_model("gpt2-1.5b"), m);
  ASSERT_TRUE(m.biases);
  const double T = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq);
  const double h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const PassCost bwd = torch_layer_cost(m, s).backward;
  std::vector<double> reductions;
  for (const MemoryKernel& k : bwd.kernels) {
    if (std::string(k.name) == "torch:bias_grad_bf16") reductions.push_back(k.bytes);
  }
  // QKV (3h outputs), the projection (h), FC1 (f), FC2 (h): one bf16 read of each output gradient.
  EXPECT_EQ(reductions, (std::vector<double>{2 * T * 3 * h, 2 * T * h, 2 * T * f, 2 * T * h}));
  ModelSpec unbiased;
  const Strategy su = torch_strategy(StackKind::PYTORCH_DDP, llama_like(), unbiased);
  ASSERT_FALSE(unbiased.biases);
  EXPECT_FALSE(has_kernel(torch_layer_cost(unbiased, su).backward, "torch:bias_grad_bf16"));
}

TEST(TorchLayerKernels, AutocastResidualJoinsAddABf16BranchToTheFp32Stream) {
  ModelSpec m, mf;
  const Strategy autocast = torch_strategy(StackKind::PYTORCH_DDP, builtin_model("gpt2-1.5b"), m);
  const Strategy fsdp = torch_strategy(StackKind::PYTORCH_FSDP, builtin_model("gpt2-1.5b"), mf);
  const double Th = static_cast<double>(autocast.micro_batch) * static_cast<double>(autocast.seq) * static_cast<double>(m.hidden);
  // Two joins, each reading 4 + 2 and writing 4 bytes an element; FSDP2's bf16 stream adds bf16 to bf16.
  EXPECT_DOUBLE_EQ(kernel_bytes(torch_layer_cost(m, autocast).forward, "torch:add_fp32_bf16"), 2 * 10 * Th);
  EXPECT_FALSE(has_kernel(torch_layer_cost(m, autocast).forward, "torch:add_fp32"));
  EXPECT_FALSE(has_kernel(torch_layer_cost(mf, fsdp).forward, "torch:add_fp32_bf16"));
  EXPECT_DOUBLE_EQ(kernel_bytes(torch_layer_cost(mf, fsdp).forward, "torch:add_bf16"), 2 * 6 * Th);
}

TEST(TorchLayerKernels, TheBackwardJoinsTheGradientsOfEachFusedOutputsParts) {
  ModelSpec gpt, llama;
  const Strategy sg = torch_strategy(StackKind::PYTORCH_DDP, builtin_model("gpt2-1.5b"), gpt);
  const Strategy sl = torch_strategy(StackKind::PYTORCH_DDP, llama_like(), llama);
  const double T = static_cast<double>(sg.micro_batch) * static_cast<double>(sg.seq);
  // GPT: the fused QKV output only (its MLP has no split); Llama: QKV (grouped) and gate-up.
  EXPECT_DOUBLE_EQ(kernel_bytes(torch_layer_cost(gpt, sg).backward, "torch:split_cat_bf16"),
                   4 * T * 3 * static_cast<double>(gpt.hidden));
  // Llama 3 8B's widths at two micro-batches of 2048 tokens: twice the calibration's 2048-token cats
  // (reports/calibration/layer-kernels/torch_layer_kernels.json: QKV [2048 x (4096, 1024, 1024)]
  // 50331648 bytes, gate-up [2048 x (14336, 14336)] 234881024 bytes).
  ASSERT_EQ(sl.micro_batch * sl.seq, 2 * 2048);
  EXPECT_DOUBLE_EQ(kernel_bytes(torch_layer_cost(llama, sl).backward, "torch:split_cat_bf16"), 2.0 * (50331648 + 234881024));
  EXPECT_FALSE(has_kernel(torch_layer_cost(llama, sl).forward, "torch:split_cat_bf16"));
}

// Activation checkpointing (run_step_stacks.Checkpointed): the recompute is the
// layer's forward again, with autocast's weight casts again but without FSDP2's gather work (the
// backward's gather already holds the parameters); autocast's weight cache is the casts' only home.
TEST(TorchCheckpointing, RecomputeIsTheForwardWithoutTheGatherWork) {
  for (StackKind kind : {StackKind::PYTORCH_DDP, StackKind::PYTORCH_FSDP}) {
    ModelSpec m;
    Strategy s = torch_strategy(kind, llama_like(), m);
    s.recompute = Recompute::FULL;
    const LayerCost layer = torch_layer_cost(m, s);
    const PassCost recompute = torch_recompute_cost(m, s);
    EXPECT_DOUBLE_EQ(recompute.flops(), layer.forward.flops());
    const double lp = LLAMA_ROW_LINEAR_PARAMS;
    if (kind == StackKind::PYTORCH_FSDP) {
      // The forward casts the shard, copies it in and copies the gathered unit out; the recompute
      // does none of that.
      for (const char* gather_work : {"torch:foreach_cast_fp32_to_bf16", "torch:foreach_copy_bf16", "torch:split_copy_bf16"}) {
        EXPECT_TRUE(has_kernel(layer.forward, gather_work)) << gather_work;
        EXPECT_FALSE(has_kernel(recompute, gather_work)) << gather_work;
      }
      EXPECT_FALSE(has_kernel(recompute, "torch:cast_fp32_to_bf16"));
      EXPECT_DOUBLE_EQ(torch_autocast_cache_bytes(m, s), 0.0);
    } else {
      EXPECT_DOUBLE_EQ(kernel_bytes(recompute, "torch:cast_fp32_to_bf16"), kernel_bytes(layer.forward, "torch:cast_fp32_to_bf16"));
      EXPECT_DOUBLE_EQ(torch_autocast_cache_bytes(m, s), 2 * lp);
      s.recompute = Recompute::NONE;  // without checkpointing the casts are saved with the layer
      EXPECT_DOUBLE_EQ(torch_autocast_cache_bytes(m, s), 0.0);
    }
  }
}

// The kernels a layer launches on the compute stream, against the rows' profiler traces (rank 0,
// the compute stream's kernels between one layer's flash attention kernel and the next layer's,
// read with the period of those kernels: reports/validation/measured/h200x1/
// h200x1_single_L28-h4096_mb1x2.trace.json.gz, 20 forward and 35 or 47 backward, the second
// micro-batch's AccumulateGrad adds making the difference; llama-h200x2/
// h200x1_single_llama_L16-h4096_mb1x2, 27 and 42 or 48; h200x4/h200x4_fsdp2-zero3_L48-h6144_mb1x2,
// 11 and 25; h200x2/h200x2_fsdp2-zero2_L32-h5120_mb1x2, 11 and 24; llama-h200x2/
// h200x2_fsdp2-zero3_llama_L32-h4096_mb1x2, 22 and 36).
ModelSpec row_model(const char* path) {
  return load_model_file(std::string(TRAINSIM_SOURCE_DIR) + "/reports/validation/measured/" + path);
}

TEST(TorchLayerLaunches, CountTheKernelsTheRowsTracesHoldPerLayer) {
  const ModelSpec gpt = row_model("h200x1/h200x1_single_L28-h4096_mb1x2.model.json");
  const ModelSpec llama = row_model("llama-h200x2/h200x1_single_llama_L16-h4096_mb1x2.model.json");
  struct Case {
    const ModelSpec* model;
    StackKind stack;
    int zero;
    double forward, backward;
  };
  const Case cases[] = {{&gpt, StackKind::PYTORCH_DDP, 0, 20, 35},  {&llama, StackKind::PYTORCH_DDP, 0, 27, 42},
                        {&gpt, StackKind::PYTORCH_FSDP, 3, 11, 25}, {&gpt, StackKind::PYTORCH_FSDP, 2, 11, 24},
                        {&llama, StackKind::PYTORCH_FSDP, 3, 22, 36}};
  for (const Case& c : cases) {
    ModelSpec m;
    const Strategy s = torch_strategy(c.stack, *c.model, m, c.zero);
    ASSERT_EQ(s.micro_batches(), 1);
    const LayerLaunches l = torch_layer_launches(m, s);
    EXPECT_EQ(l.forward, c.forward) << m.name << " " << to_string(c.stack) << " zero " << c.zero;
    EXPECT_EQ(l.backward, c.backward) << m.name << " " << to_string(c.stack) << " zero " << c.zero;
    const LayerCost cost = torch_layer_cost(m, s);
    EXPECT_EQ(cost.forward.launches, l.forward);
    EXPECT_EQ(cost.backward.launches, l.backward);
  }
  // A checkpointed layer's recompute (the checkpointed Llama rows' traces, the compute stream's backward
  // periods less the backward's own: llama-checkpointing-h200x2/h200x1_single_llama_ac_L16-h4096_mb2x2, 67 - 42;
  // llama-checkpointing-h200x2/h200x2_fsdp2-zero3_llama_ac_L32-h4096_mb2x2, 55 - 36).
  ModelSpec ac, acf;
  EXPECT_EQ(torch_layer_launches(ac, torch_strategy(StackKind::PYTORCH_DDP, llama, ac)).recompute, 25);
  EXPECT_EQ(torch_layer_launches(acf, torch_strategy(StackKind::PYTORCH_FSDP, llama, acf, 3)).recompute, 19);
  // Of the launches, those a costed entry stands for (one each): the autocast GPT forward's norm,
  // norm-output cast, residual add, GELU and weight casts (its reshape copy entry is no kernel in the
  // trace), so 15 gaps; FSDP2's forward costs its copy-in on the compute stream but launches it on
  // its own, so only its norm, add, GELU and copy-out entries count: 7 gaps.
  ModelSpec g1, f1;
  const LayerCost autocast_gpt = torch_layer_cost(g1, torch_strategy(StackKind::PYTORCH_DDP, gpt, g1));
  EXPECT_EQ(autocast_gpt.forward.launches - autocast_gpt.forward.launches_in_entries(), 15);
  const LayerCost fsdp_gpt = torch_layer_cost(f1, torch_strategy(StackKind::PYTORCH_FSDP, gpt, f1, 3));
  EXPECT_EQ(fsdp_gpt.forward.launches - fsdp_gpt.forward.launches_in_entries(), 7);
  // Two micro-batches: the second adds into each parameter's .grad (12 tensors of the GPT layer,
  // 6 of the Llama layer, whose QKV and gate-up are fused and whose norms have no bias): the mean of
  // the traces' 35 and 47, 42 and 48.
  ModelSpec g, l;
  EXPECT_EQ(torch_layer_launches(g, accumulating_ddp(gpt, g)).backward, 41);
  EXPECT_EQ(torch_layer_launches(l, accumulating_ddp(llama, l)).backward, 45);
}

}  // namespace
}  // namespace trainsim::wl
