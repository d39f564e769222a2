#!/usr/bin/env python3
"""Refused inputs exit 2 with a message naming the file and key: mixture-of-experts configs (every
spelling), encoder-decoder and cross-attention models, malformed JSON, a missing model_type, bad
command-line values. The refusals are decided from the JSON alone, so they hold without
transformers installed (this machine has none)."""
import json
import os
import tempfile

import _common

_common.require_torch()
c = _common.Checks("test_refusals")
dense = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
         "vocab_size": 100, "intermediate_size": 128, "architectures": ["LlamaForCausalLM"]}
cases = [
    ("mixtral", dict(dense, model_type="mixtral", num_local_experts=8, architectures=["MixtralForCausalLM"]),
     "num_local_experts", "mixture-of-experts"),
    ("qwen2_moe", dict(dense, model_type="qwen2_moe", num_experts=60), "num_experts", "mixture-of-experts"),
    ("moe_num_experts", dict(dense, moe_num_experts=16), "moe_num_experts", "token-routing"),
    ("deepseek n_routed_experts", dict(dense, model_type="deepseek_v3", n_routed_experts=256),
     "n_routed_experts", "mixture-of-experts"),
    ("n_shared_experts", dict(dense, n_shared_experts=2), "n_shared_experts", "mixture-of-experts"),
    ("moe model_type only", dict(dense, model_type="qwen3_moe"), "model_type", "mixture-of-experts"),
    ("llama4 type", {"model_type": "llama4", "text_config": dict(dense, num_local_experts=16)},
     "model_type", "mixture-of-experts"),
    ("text_config MoE", {"model_type": "gemma3", "text_config": dict(dense, num_local_experts=16)},
     "text_config.num_local_experts", "mixture-of-experts"),
    ("encoder-decoder", dict(dense, model_type="t5", is_encoder_decoder=True), "is_encoder_decoder",
     "encoder-decoder"),
    ("cross-attention", dict(dense, add_cross_attention=True), "add_cross_attention", "cross-attention"),
    ("bart", dict(dense, model_type="bart"), "model_type", "encoder-decoder"),
    ("missing model_type", {k: v for k, v in dense.items() if k != "model_type"}, "model_type", "model_type"),
    ("bad hidden_size", dict(dense, hidden_size="big"), "hidden_size", "positive integer"),
]
with tempfile.TemporaryDirectory() as tmp:
    for name, cfg, key, words in cases:
        path = os.path.join(tmp, name.replace(" ", "_") + ".json")
        json.dump(cfg, open(path, "w"))
        r = _common.run_cli(["--hf-config", path, "--micro-batch", "1", "--seq", "16", "-o", os.path.join(tmp, "o.json")])
        msg = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
        c.eq(r.returncode, 2, f"{name}: exit 2")
        c.check(os.path.basename(path) in msg and f"'{key}'" in msg and words in msg,
                f"{name}: message names the file, the key and the missing capability", msg)
    bad = os.path.join(tmp, "broken.json")
    open(bad, "w").write("{not json")
    r = _common.run_cli(["--hf-config", bad])
    c.eq(r.returncode, 2, "malformed JSON: exit 2")
    c.check("broken.json" in r.stderr and "not valid JSON" in r.stderr, "malformed JSON: message names the file",
            r.stderr[-300:])
    r = _common.run_cli(["--hf-config", os.path.join(tmp, "absent.json")])
    c.eq(r.returncode, 2, "missing file: exit 2")
    r = _common.run_cli(["--module", "trainsim_capture.examples:tiny_mlp", "--layers", "2", "--dims", "h=8,f=16,V=9,q=3"])
    c.eq(r.returncode, 2, "an unknown --dims symbol: exit 2")
    c.check("'q'" in r.stderr, "the message names the symbol", r.stderr[-300:])
    r = _common.run_cli(["--module", "trainsim_capture.examples:tiny_mlp", "--layers", "2", "--dims", "h=8,f=16"])
    c.eq(r.returncode, 2, "a missing --dims symbol: exit 2")
    c.check("V" in r.stderr, "the message names the missing symbol", r.stderr[-300:])
    r = _common.run_cli(["--module", "trainsim_capture.examples:tiny_mlp", "--layers", "2", "--dims", "h=8,f=16,V=9",
                         "--precision", "fp64"])
    c.eq(r.returncode, 2, "an unknown precision: exit 2 (argparse)")
    r = _common.run_cli(["--module", "no_such_module:factory", "--layers", "2"])
    c.eq(r.returncode, 2, "an unimportable --module: exit 2")
c.done()
