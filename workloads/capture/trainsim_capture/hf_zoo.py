"""Capture a list of Hugging Face architectures at one small size each, from configs written here
(no downloads): for the GPU machines, where transformers is installed.

    PYTHONPATH=workloads/capture python3 -m trainsim_capture.hf_zoo OUTDIR [--jobs 12] [--only llama,gpt2]

Writes OUTDIR/<name>.<variant>.json (a capture), OUTDIR/<name>.config.json (the config it was made
from), OUTDIR/<name>.effective_config.json (that config as transformers completes it) and OUTDIR/summary.json (per capture: status, seconds, error). Each capture runs in its own
process (one architecture failing does not stop the others), several at once. Exit 0 when every
capture succeeded, 1 otherwise. The sizes are small but not degenerate (micro-batch 2, so b stays a
symbol; grouped-query attention where the architecture has it; head_dim set apart from
hidden/heads where the config allows it)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from . import jsonio

H, A, KV, D, F, V, P, L = 256, 8, 2, 32, 704, 1024, 512, 4

CONFIGS = {
    "llama": {"model_type": "llama", "hidden_size": H, "intermediate_size": F, "num_attention_heads": A,
              "num_key_value_heads": KV, "head_dim": D, "num_hidden_layers": L, "vocab_size": V,
              "max_position_embeddings": P, "architectures": ["LlamaForCausalLM"]},
    "mistral": {"model_type": "mistral", "hidden_size": H, "intermediate_size": F, "num_attention_heads": A,
                "num_key_value_heads": KV, "head_dim": D, "num_hidden_layers": L, "vocab_size": V,
                "max_position_embeddings": P, "sliding_window": 4096, "architectures": ["MistralForCausalLM"]},
    "qwen2": {"model_type": "qwen2", "hidden_size": H, "intermediate_size": F, "num_attention_heads": A,
              "num_key_value_heads": KV, "num_hidden_layers": L, "vocab_size": V, "max_position_embeddings": P,
              "architectures": ["Qwen2ForCausalLM"]},
    "qwen3": {"model_type": "qwen3", "hidden_size": H, "intermediate_size": F, "num_attention_heads": A,
              "num_key_value_heads": KV, "head_dim": D, "num_hidden_layers": L, "vocab_size": V,
              "max_position_embeddings": P, "architectures": ["Qwen3ForCausalLM"]},
    "gemma": {"model_type": "gemma", "hidden_size": H, "intermediate_size": F, "num_attention_heads": A,
              "num_key_value_heads": 1, "head_dim": 64, "num_hidden_layers": L, "vocab_size": V,
              "max_position_embeddings": P, "architectures": ["GemmaForCausalLM"]},
    "gemma2": {"model_type": "gemma2", "hidden_size": H, "intermediate_size": F, "num_attention_heads": A,
               "num_key_value_heads": KV, "head_dim": 64, "num_hidden_layers": L, "vocab_size": V,
               "max_position_embeddings": P, "sliding_window": 64, "architectures": ["Gemma2ForCausalLM"]},
    "gemma3_text": {"model_type": "gemma3_text", "hidden_size": H, "intermediate_size": F,
                    "num_attention_heads": A, "num_key_value_heads": KV, "head_dim": 64, "num_hidden_layers": 6,
                    "vocab_size": V, "max_position_embeddings": P, "sliding_window": 64,
                    "architectures": ["Gemma3ForCausalLM"]},
    "phi3": {"model_type": "phi3", "hidden_size": H, "intermediate_size": F, "num_attention_heads": A,
             "num_key_value_heads": KV, "num_hidden_layers": L, "vocab_size": V, "max_position_embeddings": P,
             "original_max_position_embeddings": P, "architectures": ["Phi3ForCausalLM"]},
    "olmo2": {"model_type": "olmo2", "hidden_size": H, "intermediate_size": F, "num_attention_heads": A,
              "num_key_value_heads": KV, "num_hidden_layers": L, "vocab_size": V, "max_position_embeddings": P,
              "architectures": ["Olmo2ForCausalLM"]},
    "starcoder2": {"model_type": "starcoder2", "hidden_size": H, "intermediate_size": 4 * H,
                   "num_attention_heads": A, "num_key_value_heads": KV, "num_hidden_layers": L, "vocab_size": V,
                   "max_position_embeddings": P, "sliding_window": 4096, "architectures": ["Starcoder2ForCausalLM"]},
    "gpt2": {"model_type": "gpt2", "n_embd": H, "n_head": A, "n_layer": L, "n_positions": P, "vocab_size": V,
             "architectures": ["GPT2LMHeadModel"]},
    "gpt_neox": {"model_type": "gpt_neox", "hidden_size": H, "intermediate_size": 4 * H, "num_attention_heads": A,
                 "num_hidden_layers": L, "vocab_size": V, "max_position_embeddings": P, "rotary_pct": 0.25,
                 "architectures": ["GPTNeoXForCausalLM"]},
    "falcon": {"model_type": "falcon", "hidden_size": H, "num_attention_heads": A, "num_hidden_layers": L,
               "vocab_size": V, "new_decoder_architecture": True, "num_kv_heads": KV, "parallel_attn": True,
               "bias": False, "architectures": ["FalconForCausalLM"]},
    "falcon_mqa": {"model_type": "falcon", "hidden_size": H, "num_attention_heads": A, "num_hidden_layers": L,
                   "vocab_size": V, "new_decoder_architecture": False, "multi_query": True, "parallel_attn": True,
                   "bias": False, "architectures": ["FalconForCausalLM"]},
}

# The same families as their other common published form: tied input and output embeddings
# (Llama 3.2 1B/3B, Qwen2.5 0.5B-3B, Qwen3 0.6B-4B), GPT-2 trained without dropout (nanoGPT):
# a committed capture stands in only for configs with the same structural keys.
for _name, _change in (("llama", {"tie_word_embeddings": True}), ("qwen2", {"tie_word_embeddings": True}),
                       ("qwen3", {"tie_word_embeddings": True}),
                       ("gpt2", {"attn_pdrop": 0.0, "embd_pdrop": 0.0, "resid_pdrop": 0.0, "summary_first_dropout": 0.0})):
    CONFIGS[_name + ("_tied" if "tie_word_embeddings" in _change else "_nodropout")] = dict(CONFIGS[_name], **_change)

VARIANTS = {
    "autocast-bf16": ["--precision", "autocast-bf16"],
    "autocast-bf16.recompute": ["--precision", "autocast-bf16", "--recompute"],
    "bf16": ["--precision", "bf16"],
    "bf16.recompute": ["--precision", "bf16", "--recompute"],
}


def effective_config(cfg):
    """The config as transformers completes it (every default spelled out), or None without
    transformers: what a user's config.json is compared with before this capture stands in for it."""
    try:
        from transformers import AutoConfig
    except ImportError:
        return None
    d = AutoConfig.for_model(**cfg).to_dict()
    d.pop("transformers_version", None)
    return d


def checked_variants(parser, text):
    """The comma-separated variants of `text`, each one of VARIANTS (else the parser's error, exit 2)."""
    variants = text.split(",")
    for v in variants:
        if v not in VARIANTS:
            parser.error(f"unknown variant {v!r}; known: {', '.join(VARIANTS)}")
    return variants


def writable_outdir(parser, path):
    """Makes `path` (a folder) if missing and checks that it takes files; else the parser's error
    naming the folder (exit 2), before any capture starts."""
    try:
        os.makedirs(path, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".writable-", delete=True)
        probe.close()
    except OSError as e:
        parser.error(f"OUTDIR {path!r}: expected a writable folder ({e.strerror or e})")


def capture_env():
    """The environment of a capture's child process: this package first on PYTHONPATH."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return dict(os.environ, PYTHONPATH=pkg + os.pathsep + os.environ.get("PYTHONPATH", ""))


def run_captures(jobs, outdir, workers, timeout, env):
    """Runs each (name, command) in its own process, `workers` at once, each killed after `timeout`
    seconds; writes outdir/summary.json (per capture: status, seconds, error). Returns the exit
    status: 0 when every capture succeeded, 1 otherwise."""
    def run(job):
        name, cmd = job
        t0 = time.time()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
            code, err = r.returncode, r.stderr.strip()[-4000:]
        except subprocess.TimeoutExpired:
            code, err = -1, f"timed out after {timeout} s"
        dt = round(time.time() - t0, 1)
        print(f"{'ok  ' if code == 0 else 'FAIL'} {name} ({dt} s)" + ("" if code == 0 else f": {err.splitlines()[-1] if err else code}"),
              flush=True)
        return name, {"status": "ok" if code == 0 else "failed", "exit": code, "seconds": dt,
                      "error": None if code == 0 else err}

    t0 = time.time()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as ex:
        results = dict(ex.map(run, jobs))
    summary = {"total_seconds": round(time.time() - t0, 1), "captures": results}
    jsonio.write_text(os.path.join(outdir, "summary.json"), json.dumps(summary, indent=1, sort_keys=True) + "\n")
    failed = [k for k, r in results.items() if r["status"] != "ok"]
    print(f"{len(results) - len(failed)} of {len(results)} captures written to {outdir} in "
          f"{summary['total_seconds']} s" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m trainsim_capture.hf_zoo", description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--jobs", type=int, default=min(12, os.cpu_count() or 1))
    p.add_argument("--only", help="comma-separated names (default: all): " + ",".join(CONFIGS))
    p.add_argument("--variants", default="autocast-bf16,autocast-bf16.recompute",
                   help="comma-separated: " + ",".join(VARIANTS))
    p.add_argument("--micro-batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--optimizer", default="adamw-fused")
    p.add_argument("--timeout", type=int, default=600, help="seconds per capture")
    args = p.parse_args(argv)
    names = args.only.split(",") if args.only else list(CONFIGS)
    for n in names:
        if n not in CONFIGS:
            p.error(f"unknown architecture {n!r}; known: {', '.join(CONFIGS)}")
    variants = checked_variants(p, args.variants)
    writable_outdir(p, args.outdir)
    env = capture_env()
    jobs = []
    for n in names:
        cfg_path = os.path.join(args.outdir, f"{n}.config.json")
        with open(cfg_path, "w") as f:
            json.dump(CONFIGS[n], f, indent=1, sort_keys=True)
            f.write("\n")
        try:
            full = effective_config(CONFIGS[n])
        except Exception as e:  # the captures still run; the reader then has no completed config
            print(f"{n}: transformers could not complete the config: {type(e).__name__}: {e}", flush=True)
            full = None
        if full is not None:
            with open(os.path.join(args.outdir, f"{n}.effective_config.json"), "w") as f:
                json.dump(full, f, indent=1, sort_keys=True, default=str)
                f.write("\n")
        for v in variants:
            out = os.path.join(args.outdir, f"{n}.{v}.json")
            cmd = [sys.executable, "-m", "trainsim_capture", "--hf-config", cfg_path, "--micro-batch",
                   str(args.micro_batch), "--seq", str(args.seq), "--optimizer", args.optimizer, "-q", "-o", out] \
                + VARIANTS[v]
            jobs.append((f"{n}.{v}", cmd))

    return run_captures(jobs, args.outdir, args.jobs, args.timeout, env)

if __name__ == "__main__":
    sys.exit(main())
