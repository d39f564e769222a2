"""The runs of this validation set (issue 39): which model, size, precision, activation recompute and
micro-batch each measured run trains. Data only; measure.py runs them, device_session.sh runs the
whole list on one GPU. Nothing here was tuned to a prediction: the Hugging Face shapes are those of
published models of each family (or that family's width with fewer layers), the micro-batches were
chosen before any run so that each non-OOM run's estimated peak stays well under 80 GB and its step
takes a few tenths of a second on an H200, and the three `expect_oom` runs are meant not to fit.

A run is a dict:
  name        unique; also the file names (<name>.json, <name>.config.json | <name>.model.json)
  kind        "hf" (transformers AutoModelForCausalLM.from_config) or "hand" (hand_models.py)
  arch        the Hugging Face model_type, or the hand_models.py factory name
  config      hf: the keyword arguments of AutoConfig.for_model(arch, ...); hand: the factory's symbols
  layers      hand only: the layer count
  micro_batch, seq
  precision   "bf16-mixed" (fp32 weights, torch.autocast(bfloat16) around forward and loss) or
              "bf16" (bf16 weights, gradients and AdamW states, no autocast)
  recompute   False, or True: activation checkpointing of every layer (non-reentrant)
  expect_oom  None, or where the run is expected not to fit ("80GB+141GB", or "80GB" where an H200
              may or may not fit it)
  group       the run's place in the session: "base", "oom", "variant", "extra" (extras run last and are
              the first skipped when the session runs out of time)
  shape_from  what the shape follows
"""

SEQ = 2048

# Every dropout probability a config has is set to 0 (the configs' own defaults are 0 except GPT-2's).
NO_DROPOUT = {"attention_dropout": 0.0}

HF = {
    # Llama 3.2 1B: 16 x 2048, 32 heads of 64, 8 KV heads, SwiGLU 8192, vocabulary 128256, tied.
    "llama": dict(hidden_size=2048, intermediate_size=8192, num_attention_heads=32, num_key_value_heads=8,
                  head_dim=64, num_hidden_layers=16, vocab_size=128256, max_position_embeddings=8192,
                  tie_word_embeddings=True, rms_norm_eps=1e-5, attention_bias=False, mlp_bias=False,
                  architectures=["LlamaForCausalLM"], **NO_DROPOUT),
    # Mistral 7B's conventions (heads of 128, 8 KV heads, sliding window 4096, vocabulary 32768 of v0.3),
    # at width 2048 and 24 layers.
    "mistral": dict(hidden_size=2048, intermediate_size=6144, num_attention_heads=16, num_key_value_heads=8,
                    head_dim=128, num_hidden_layers=24, vocab_size=32768, max_position_embeddings=32768,
                    sliding_window=4096, tie_word_embeddings=False, architectures=["MistralForCausalLM"],
                    **NO_DROPOUT),
    # Qwen2 1.5B: 28 x 1536, 12 heads, 2 KV heads, SwiGLU 8960, vocabulary 151936, QKV bias, tied.
    "qwen2": dict(hidden_size=1536, intermediate_size=8960, num_attention_heads=12, num_key_value_heads=2,
                  num_hidden_layers=28, vocab_size=151936, max_position_embeddings=32768, tie_word_embeddings=True,
                  use_sliding_window=False, architectures=["Qwen2ForCausalLM"], **NO_DROPOUT),
    # Qwen3 1.7B: 28 x 2048, 16 heads of 128, 8 KV heads, per-head q/k RMSNorm, SwiGLU 6144, tied.
    "qwen3": dict(hidden_size=2048, intermediate_size=6144, num_attention_heads=16, num_key_value_heads=8,
                  head_dim=128, num_hidden_layers=28, vocab_size=151936, max_position_embeddings=40960,
                  tie_word_embeddings=True, use_sliding_window=False, architectures=["Qwen3ForCausalLM"],
                  **NO_DROPOUT),
    # Gemma 2B: 18 x 2048, 8 heads of 256, multi-query (1 KV head), GeGLU 16384, vocabulary 256000, tied.
    "gemma": dict(hidden_size=2048, intermediate_size=16384, num_attention_heads=8, num_key_value_heads=1,
                  head_dim=256, num_hidden_layers=18, vocab_size=256000, max_position_embeddings=8192,
                  tie_word_embeddings=True, architectures=["GemmaForCausalLM"], **NO_DROPOUT),
    # Gemma 2 2B: 26 x 2304, 8 heads of 256, 4 KV heads, GeGLU 9216, vocabulary 256000, sliding window
    # 4096 on every other layer, attention and final logit soft-capping (the family's defaults), tied.
    "gemma2": dict(hidden_size=2304, intermediate_size=9216, num_attention_heads=8, num_key_value_heads=4,
                   head_dim=256, num_hidden_layers=26, vocab_size=256000, max_position_embeddings=8192,
                   sliding_window=4096, query_pre_attn_scalar=256, tie_word_embeddings=True,
                   architectures=["Gemma2ForCausalLM"], **NO_DROPOUT),
    # Phi-3 conventions (fused qkv_proj and gate_up_proj, multi-head attention, vocabulary 32064, no
    # sliding window), at width 2560 (32 heads of 80) and 16 layers.
    "phi3": dict(hidden_size=2560, intermediate_size=8960, num_attention_heads=32, num_key_value_heads=32,
                 num_hidden_layers=16, vocab_size=32064, max_position_embeddings=4096,
                 original_max_position_embeddings=4096, sliding_window=None, tie_word_embeddings=False,
                 resid_pdrop=0.0, embd_pdrop=0.0, architectures=["Phi3ForCausalLM"], **NO_DROPOUT),
    # OLMo 2 1B: 16 x 2048, 16 heads, q/k RMSNorm over the projections, post-norm blocks, vocabulary
    # 100352, untied.
    "olmo2": dict(hidden_size=2048, intermediate_size=8192, num_attention_heads=16, num_key_value_heads=16,
                  num_hidden_layers=16, vocab_size=100352, max_position_embeddings=4096, rms_norm_eps=1e-6,
                  tie_word_embeddings=False, architectures=["Olmo2ForCausalLM"], **NO_DROPOUT),
    # GPT-2 large: 36 x 1280, 20 heads, 1024 positions, vocabulary 50257, gelu_new, tied; dropout off.
    "gpt2": dict(n_embd=1280, n_head=20, n_layer=36, n_positions=1024, vocab_size=50257,
                 resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, summary_first_dropout=0.0,
                 architectures=["GPT2LMHeadModel"]),
    # Pythia 1.4B: 24 x 2048, 16 heads, GELU 8192, 25% rotary, parallel residual, vocabulary 50304, untied.
    "gpt_neox": dict(hidden_size=2048, intermediate_size=8192, num_attention_heads=16, num_hidden_layers=24,
                     vocab_size=50304, max_position_embeddings=2048, use_parallel_residual=True,
                     tie_word_embeddings=False, hidden_dropout=0.0, architectures=["GPTNeoXForCausalLM"],
                     **NO_DROPOUT),
    # StarCoder2 3B's width (3072, 24 heads of 128, 2 KV heads, GELU 12288, biases, LayerNorm, sliding
    # window 4096, vocabulary 49152, tied) at 12 layers.
    "starcoder2": dict(hidden_size=3072, intermediate_size=12288, num_attention_heads=24, num_key_value_heads=2,
                       num_hidden_layers=12, vocab_size=49152, max_position_embeddings=16384, sliding_window=4096,
                       use_bias=True, tie_word_embeddings=True, residual_dropout=0.0, embedding_dropout=0.0,
                       bos_token_id=0, eos_token_id=0,
                       architectures=["Starcoder2ForCausalLM"], **NO_DROPOUT),
    # Falcon 7B's conventions (multi-query attention, parallel attention and MLP, no biases, heads of
    # 64, vocabulary 65024, tied) at width 2048 and 24 layers.
    "falcon": dict(hidden_size=2048, num_attention_heads=32, num_hidden_layers=24, vocab_size=65024,
                   new_decoder_architecture=False, multi_query=True, parallel_attn=True, bias=False, alibi=False,
                   tie_word_embeddings=True, hidden_dropout=0.0, architectures=["FalconForCausalLM"],
                   **NO_DROPOUT),
}

SHAPE_FROM = {
    "llama": "Llama 3.2 1B", "mistral": "Mistral 7B conventions, 24 x 2048", "qwen2": "Qwen2 1.5B",
    "qwen3": "Qwen3 1.7B", "gemma": "Gemma 2B", "gemma2": "Gemma 2 2B", "phi3": "Phi-3 conventions, 16 x 2560",
    "olmo2": "OLMo 2 1B", "gpt2": "GPT-2 large", "gpt_neox": "Pythia 1.4B",
    "starcoder2": "StarCoder2 3B width, 12 layers", "falcon": "Falcon 7B conventions, 24 x 2048",
    "gpt_unfused": "GPT-2 XL width (1600, 25 heads of 64), 24 layers, 1024 positions",
    "llama_complex": "1.1B Llama: 22 x 2048, 16 heads of 128, 4 KV heads, SwiGLU 5632, vocabulary 32000",
}

HAND = {
    "gpt_unfused": dict(layers=24, dims=dict(a=25, d=64, f=6400, V=50257, P=1024), seq=1024),
    "llama_complex": dict(layers=22, dims=dict(kv=4, g=4, d=128, f=5632, V=32000), seq=2048),
}

# (arch, micro_batch, precision, recompute, group, expect_oom)
PLAN = [
    # every architecture: fp32 weights under autocast, no recompute
    ("llama", 4, "bf16-mixed", False, "base", None),
    ("qwen2", 2, "bf16-mixed", False, "base", None),
    ("llama_complex", 4, "bf16-mixed", False, "base", None),
    ("mistral", 4, "bf16-mixed", False, "base", None),
    ("qwen3", 2, "bf16-mixed", False, "base", None),
    ("gpt_unfused", 4, "bf16-mixed", False, "base", None),
    ("gpt2", 8, "bf16-mixed", False, "base", None),
    ("gpt_neox", 3, "bf16-mixed", False, "base", None),
    ("olmo2", 3, "bf16-mixed", False, "base", None),
    ("phi3", 3, "bf16-mixed", False, "base", None),
    ("starcoder2", 4, "bf16-mixed", False, "base", None),
    ("gemma", 1, "bf16-mixed", False, "base", None),
    ("gemma2", 1, "bf16-mixed", False, "base", None),
    ("falcon", 3, "bf16-mixed", False, "base", None),
    # meant not to fit: the prediction must say "does not fit"
    ("llama", 32, "bf16-mixed", False, "oom", "80GB+141GB"),
    ("qwen3", 48, "bf16", True, "oom", "80GB+141GB"),
    ("gpt_neox", 12, "bf16-mixed", False, "oom", "80GB"),
    # the other three combinations of precision and recompute, five architectures each
    ("llama", 8, "bf16-mixed", True, "variant", None),
    ("mistral", 4, "bf16", False, "variant", None),
    ("qwen2", 8, "bf16", True, "variant", None),
    ("llama_complex", 8, "bf16-mixed", True, "variant", None),
    ("gpt_unfused", 4, "bf16", False, "variant", None),
    ("gpt_unfused", 8, "bf16", True, "variant", None),
    ("qwen3", 4, "bf16-mixed", True, "variant", None),
    ("gemma", 2, "bf16", False, "variant", None),
    ("gemma2", 2, "bf16", True, "variant", None),
    ("gpt2", 8, "bf16-mixed", True, "variant", None),
    ("olmo2", 4, "bf16", False, "variant", None),
    ("phi3", 4, "bf16", True, "variant", None),
    ("falcon", 8, "bf16-mixed", True, "variant", None),
    ("qwen2", 4, "bf16", False, "variant", None),
    ("gpt_neox", 8, "bf16", True, "variant", None),
    # one more of each, run last (skipped first if the session runs short)
    ("starcoder2", 8, "bf16-mixed", True, "extra", None),
    ("starcoder2", 4, "bf16", False, "extra", None),
    ("llama", 8, "bf16", True, "extra", None),
]


def _size_tag(arch):
    if arch in HAND:
        h = HAND[arch]
        d = h["dims"]
        hidden = d["a"] * d["d"] if "a" in d else d["kv"] * d["g"] * d["d"]
        return f"L{h['layers']}-h{hidden}"
    c = HF[arch]
    L = c.get("num_hidden_layers", c.get("n_layer"))
    hidden = c.get("hidden_size", c.get("n_embd"))
    return f"L{L}-h{hidden}"


def run_name(arch, mb, precision, recompute):
    prefix = "hand-" if arch in HAND else "hf-"
    return f"{prefix}{arch}_{_size_tag(arch)}_mb{mb}_{precision}" + ("_recompute" if recompute else "")


def runs():
    """The full list, in session order."""
    out = []
    for arch, mb, precision, recompute, group, expect_oom in PLAN:
        r = {"name": run_name(arch, mb, precision, recompute), "arch": arch, "micro_batch": mb,
             "precision": precision, "recompute": recompute, "group": group, "expect_oom": expect_oom,
             "shape_from": SHAPE_FROM[arch]}
        if arch in HAND:
            h = HAND[arch]
            r.update(kind="hand", layers=h["layers"], config=dict(h["dims"]), seq=h["seq"])
        else:
            r.update(kind="hf", config=dict(HF[arch]), seq=1024 if arch == "gpt2" else SEQ)
        out.append(r)
    names = [r["name"] for r in out]
    assert len(set(names)) == len(names), "run names must be unique"
    return out


# The CPU dry run (torch 1.13 here): the two hand-written models at tiny sizes, a simulated OOM and a
# simulated hang (to exercise the OOM row and the driver's timeout path).
DRY_HAND = {
    "gpt_unfused": dict(layers=2, dims=dict(a=4, d=16, f=256, V=512, P=64), seq=64),
    "llama_complex": dict(layers=2, dims=dict(kv=2, g=2, d=16, f=176, V=512), seq=64),
}


def dry_runs():
    """The dry run's list. The bf16-mixed Llama has one query head per key/value head (g = 1, no
    repeat_interleave), so that its capture works on PyTorch 1.13, whose fake tensors cannot give
    repeat_interleave an output shape; the other Llama keeps g = 2 to run repeat_interleave for real."""
    out = []
    for arch, mb, precision, recompute, simulate, dims in (
            ("gpt_unfused", 2, "bf16-mixed", False, None, None),
            ("llama_complex", 2, "bf16", True, None, None),
            ("llama_complex", 2, "bf16-mixed", False, None, dict(kv=4, g=1, d=16, f=176, V=512)),
            ("gpt_unfused", 64, "bf16-mixed", False, "oom", None),
            ("gpt_unfused", 3, "bf16", True, "hang", None)):
        h = DRY_HAND[arch]
        name = "dry-" + arch + f"_mb{mb}_{precision}" + ("_recompute" if recompute else "")
        out.append({"name": name, "arch": arch, "kind": "hand", "layers": h["layers"], "config": dict(dims or h["dims"]),
                    "seq": h["seq"], "micro_batch": mb, "precision": precision, "recompute": recompute,
                    "group": "dry", "expect_oom": "simulated" if simulate == "oom" else None,
                    "simulate": simulate, "shape_from": "tiny (CPU dry run)"})
    # the Hugging Face path too, where a transformers module is importable (test_writer.py puts a
    # stand-in on the path; the GPU machines have the real one)
    import importlib.util
    if importlib.util.find_spec("transformers") is not None:
        tiny = dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                    num_hidden_layers=2, vocab_size=128, max_position_embeddings=64, tie_word_embeddings=False,
                    architectures=["LlamaForCausalLM"], **NO_DROPOUT)
        for mb, precision, recompute in ((2, "bf16-mixed", False), (2, "bf16", True)):
            out.append({"name": f"dry-hf-llama_mb{mb}_{precision}" + ("_recompute" if recompute else ""),
                        "arch": "llama", "kind": "hf", "config": dict(tiny), "seq": 32, "micro_batch": mb,
                        "precision": precision, "recompute": recompute, "group": "dry", "expect_oom": None,
                        "simulate": None, "shape_from": "tiny (CPU dry run)"})
    return out
