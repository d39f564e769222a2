#!/usr/bin/env python3
"""Runs device_session.sh --dry-run (the two hand-written models, tiny, on the CPU with PyTorch 1.13;
a simulated OOM; a simulated hang the driver must kill) and checks what it packs: every measured run
against what planner/validate/measured_run.cpp requires and tolerates (unknown keys are errors there),
its strategy against workloads/strategy_sources.cpp's reader, its trainsim model JSON against
workloads/model_loader.cpp's, the OOM row (its measured exactly measured.oom and measured.oom_message),
the failure rows and the summary. Where a trainsim binary is found ($TRAINSIM, else build/trainsim), also
reads the bf16-mixed rows and the OOM row with `trainsim validate`.

    /usr/bin/python3 reports/validation/captured_models/test_writer.py

Exit 0: passed (or SKIPPED without torch); 1: a check failed. About a minute on a 2-core machine."""
import json
import os
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

# planner/validate/measured_run.cpp
TOP_KEYS = {"schema_version", "kind", "name", "provenance", "model", "profile", "capture", "strategy", "stack",
            "machine_storage", "measured"}
TOP_REQUIRED = {"schema_version", "kind", "name", "provenance", "model", "strategy", "stack", "measured"}
STACKS = {"pytorch", "pytorch-ddp", "pytorch-fsdp", "pytorch-pipelining", "megatron", "deepspeed",
          "trainsim-reference"}
MEASURED_KEYS = {"step_time_s", "step_time_spread", "peak_allocated_bytes", "peak_reserved_bytes", "busy", "bytes",
                 "launches", "trace", "warmup_steps", "warmup_step_times_s", "step_times_s", "step_times_s_per_rank",
                 "params_per_rank", "tokens_per_s", "build_s"}
# an OOM row's measured: exactly these (the reader refuses any other key beside "oom": true)
OOM_KEYS = {"oom", "oom_message"}
# workloads/strategy_sources.cpp strategy_from_json
STRATEGY_INT = {"gpus", "nodes", "dp", "tp", "pp", "vpp", "first_stage_layers", "last_stage_layers", "shards", "zero",
                "micro_batch", "global_batch", "seq"}
STRATEGY_CHOICE = {"schedule": {"gpipe", "1f1b", "interleaved", "pipedream", "2bw", "hydra"},
                   "offload_params": {"none", "cpu", "nvme"}, "offload_optimizer": {"none", "cpu", "nvme"},
                   "offload_activations": {"none", "cpu"}, "recompute": {"none", "selective", "full"},
                   "precision": {"fp16-mixed", "bf16-mixed", "bf16", "fp32"}, "attention": {"materialized", "flash"}}
STRATEGY_KEYS = {"schema_version", "sp", "l2l", "delayed_update", "stack"} | STRATEGY_INT | set(STRATEGY_CHOICE)
# workloads/model_loader.cpp load_own_model
MODEL_KEYS = {"schema_version", "name", "description", "architecture", "numerics", "published"}
ARCH_REQUIRED = {"layers", "hidden", "heads", "vocab", "seq_len", "tied_embeddings", "biases", "dropout", "norm",
                 "mlp", "position"}
ARCH_KEYS = ARCH_REQUIRED | {"kv_heads", "ffn_hidden", "type_vocab", "head"}

failures = []

# A stand-in `transformers` (the real one is on the GPU machines only) with the entry points measure.py
# uses: AutoConfig.for_model, a config's to_json_string, AutoModelForCausalLM.from_config(config, dtype=,
# attn_implementation=), gradient_checkpointing_enable and a forward that returns .loss. It runs the
# Hugging Face branch of measure.py (prepare, build_hf, the run) on the CPU; it proves nothing about
# transformers itself.
STUB = r'''
import json, math
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
__version__ = "0.0-stand-in"

class PretrainedConfig:
    def __init__(self, **kw):
        self.__dict__.update(dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2,
                                  head_dim=16, num_hidden_layers=2, vocab_size=128, max_position_embeddings=64,
                                  tie_word_embeddings=False, attention_dropout=0.0, use_cache=True, dtype=None))
        self.__dict__.update(kw)
        self.model_type = "llama"
    def to_json_string(self, use_diff=True):
        return json.dumps({k: v for k, v in self.__dict__.items() if not k.startswith("_")}, indent=2, sort_keys=True) + "\n"

class AutoConfig:
    @staticmethod
    def for_model(model_type, **kw):
        if model_type != "llama":
            raise ValueError(model_type)
        return PretrainedConfig(**kw)

class Out:
    def __init__(self, loss, logits):
        self.loss, self.logits = loss, logits

class Layer(nn.Module):
    gradient_checkpointing = False
    def __init__(self, c):
        super().__init__()
        h, a, kv, d, f = c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.intermediate_size
        self.a, self.kv, self.d = a, kv, d
        self.norm1, self.norm2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.q, self.k, self.v, self.o = nn.Linear(h, a * d), nn.Linear(h, kv * d), nn.Linear(h, kv * d), nn.Linear(a * d, h)
        self.up, self.down = nn.Linear(h, f), nn.Linear(f, h)
    def _forward(self, x):
        b, s, _ = x.shape
        y = self.norm1(x)
        q = self.q(y).view(b, s, self.a, self.d).transpose(1, 2)
        k = self.k(y).view(b, s, self.kv, self.d).transpose(1, 2).repeat_interleave(self.a // self.kv, dim=1)
        v = self.v(y).view(b, s, self.kv, self.d).transpose(1, 2).repeat_interleave(self.a // self.kv, dim=1)
        sdpa = getattr(F, "scaled_dot_product_attention", None)
        if sdpa is not None:
            o = sdpa(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(self.d)
            att = att.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
            o = att.softmax(-1) @ v
        x = x + self.o(o.transpose(1, 2).reshape(b, s, -1))
        return x + self.down(F.gelu(self.up(self.norm2(x))))
    def forward(self, x):
        if self.gradient_checkpointing and self.training:
            return self._gradient_checkpointing_func(self._forward, x)
        return self._forward(x)

class StandInForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([Layer(config) for _ in range(config.num_hidden_layers)])
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
        kw = gradient_checkpointing_kwargs or {}
        for m in self.layers:
            m.gradient_checkpointing = True
            m._gradient_checkpointing_func = lambda f, *a: checkpoint(f, *a, **kw)
    def forward(self, input_ids, labels=None, use_cache=None):
        x = self.embed(input_ids)
        for layer in self.layers:
            x = layer(x)
        logits = self.lm_head(x)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.float()[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))
        return Out(loss, logits)

class AutoModelForCausalLM:
    _model_mapping = {}
    @staticmethod
    def from_config(config, dtype=None, attn_implementation=None, **kw):
        config._attn_implementation = attn_implementation
        m = StandInForCausalLM(config)
        return m.to(dtype) if dtype is not None else m
'''


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def is_num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def check_strategy(s, where):
    check(isinstance(s, dict), f"{where}: strategy is an object")
    check(set(s) <= STRATEGY_KEYS, f"{where}: strategy keys {sorted(set(s) - STRATEGY_KEYS)} unknown to the reader")
    check(s.get("schema_version") == 1, f"{where}: strategy.schema_version 1")
    for k in STRATEGY_INT & set(s):
        check(isinstance(s[k], int) and not isinstance(s[k], bool) and s[k] >= (0 if k == "zero" else 1),
              f"{where}: strategy.{k} a positive integer")
    for k, allowed in STRATEGY_CHOICE.items():
        if k in s:
            check(s[k] in allowed, f"{where}: strategy.{k} {s[k]!r} one of {sorted(allowed)}")
    check(s.get("gpus") == 1 and s.get("dp") == 1 and s.get("tp") == 1 and s.get("pp") == 1 and s.get("zero") == 0,
          f"{where}: single GPU strategy")
    check(s.get("global_batch") == s.get("micro_batch"), f"{where}: global_batch = micro_batch (no accumulation)")


def check_model(path, doc_name, params_total):
    with open(path) as f:
        m = json.load(f)
    check(set(m) <= MODEL_KEYS and {"schema_version", "name", "description", "architecture", "numerics"} <= set(m),
          f"{path}: trainsim model keys")
    a = m["architecture"]
    check(ARCH_REQUIRED <= set(a) and set(a) <= ARCH_KEYS, f"{path}: architecture keys {sorted(a)}")
    check(a["norm"] in ("layernorm", "rmsnorm") and a["mlp"] in ("gelu", "swiglu") and a["position"] in
          ("learned", "rotary"), f"{path}: architecture enumerations")
    check(a["hidden"] % a["heads"] == 0 and a["heads"] % a.get("kv_heads", a["heads"]) == 0,
          f"{path}: heads divide hidden, kv_heads divide heads")
    n = m["numerics"]
    check(set(n) <= {"precision", "attention", "fp32_residual"} and n["precision"] in STRATEGY_CHOICE["precision"]
          and n["attention"] in ("materialized", "flash"), f"{path}: numerics")
    p = m.get("published", {})
    check(set(p) == {"params", "significant_digits", "source"} and 1 <= p["significant_digits"] <= 6,
          f"{path}: published")
    if params_total is not None:
        check(p.get("params") == float(params_total),
              f"{path}: published.params {p.get('params')} = the module's parameter count {params_total}")


def check_run(path):
    d = os.path.dirname(path)
    with open(path) as f:
        doc = json.load(f)
    where = os.path.basename(path)
    check(set(doc) <= TOP_KEYS, f"{where}: top-level keys {sorted(set(doc) - TOP_KEYS)} unknown to the reader")
    check(TOP_REQUIRED <= set(doc), f"{where}: missing {sorted(TOP_REQUIRED - set(doc))}")
    check(doc["schema_version"] == 1 and doc["kind"] == "trainsim.measured_run", f"{where}: schema_version and kind")
    check(isinstance(doc["name"], str) and doc["name"] + ".json" == where, f"{where}: name matches the file")
    prov = doc["provenance"]
    check(isinstance(prov, dict) and isinstance(prov.get("gpu"), str) and prov.get("gpus") == 1,
          f"{where}: provenance gpu and gpus")
    if "cpu_steal_fraction" in prov:
        check(is_num(prov["cpu_steal_fraction"]) and 0 <= prov["cpu_steal_fraction"] <= 1, f"{where}: cpu_steal_fraction")
    check(isinstance(prov.get("command"), str) and "measure.py run" in prov["command"], f"{where}: provenance.command")
    model = doc["model"]
    check(isinstance(model, str) and "/" not in model and os.path.isfile(os.path.join(d, model)),
          f"{where}: model {model!r} a file beside the run")
    check_strategy(doc["strategy"], where)
    st = doc["stack"]
    check(set(st) <= {"name", "details"} and st.get("name") in STACKS, f"{where}: stack")
    det = st.get("details", {})
    check(isinstance(det, dict), f"{where}: stack.details an object")
    check("gradient_as_bucket_view" not in det and "layers_per_stage" not in det,
          f"{where}: no stack.details key the reader applies")
    m = doc["measured"]
    if m.get("oom"):
        check(set(m) == OOM_KEYS and m["oom"] is True and isinstance(m["oom_message"], str) and m["oom_message"],
              f"{where}: an OOM row's measured is exactly {sorted(OOM_KEYS)}")
        check(isinstance(det.get("oom"), dict) and det["oom"].get("at"), f"{where}: stack.details.oom.at")
        return doc, "oom"
    check(set(m) <= MEASURED_KEYS, f"{where}: measured keys {sorted(set(m) - MEASURED_KEYS)} unknown to the reader")
    check(is_num(m.get("step_time_s")) and 0 < m["step_time_s"] <= 1e6, f"{where}: measured.step_time_s in (0, 1e6]")
    pa, pr = m.get("peak_allocated_bytes"), m.get("peak_reserved_bytes")
    check(isinstance(pa, list) and isinstance(pr, list) and len(pa) == len(pr) == 1 and
          all(is_num(x) and 0 < x <= 1e15 for x in pa + pr), f"{where}: one peak per rank, bytes in (0, 1e15]")
    check(0 <= m.get("step_time_spread", 0) <= 1000, f"{where}: step_time_spread in [0, 1000]")
    times = m.get("step_times_s", [])
    check(len(times) == 10 and m.get("warmup_steps") == 3 and len(m.get("warmup_step_times_s", [])) == 3,
          f"{where}: 3 warm-up and 10 timed steps")
    med = sorted(times)[4:6]
    check(abs(m["step_time_s"] - sum(med) / 2) < 1e-12, f"{where}: step_time_s is the median of step_times_s")
    check(m.get("params_per_rank") == [det.get("params_total")], f"{where}: params_per_rank = params_total")
    for k in ("loss_first_step", "loss_last_step", "sdpa_calls", "memory", "optimizer", "data", "mixed_precision",
              "backend_flags", "capture_command", "cuda_event_step_times_s"):
        check(k in det, f"{where}: stack.details.{k}")
    if det.get("framework") == "plain PyTorch":
        check(det.get("capture_module", "").startswith("reports.validation.captured_models.hand_models:"),
              f"{where}: stack.details.capture_module")
    return doc, "ok"


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIPPED: no torch for this Python")
        return 0
    out = tempfile.mkdtemp(prefix="captured_models_test.")
    stub_dir = tempfile.mkdtemp(prefix="transformers_stand_in.")
    os.makedirs(os.path.join(stub_dir, "transformers"))
    with open(os.path.join(stub_dir, "transformers", "__init__.py"), "w") as f:
        f.write(STUB)
    env = dict(os.environ, OUT=out, PYTHON=sys.executable,
               PYTHONPATH=stub_dir + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""))
    r = subprocess.run(["bash", os.path.join(HERE, "device_session.sh"), "--dry-run"], env=env, cwd=REPO,
                       capture_output=True, text=True, timeout=600)
    print(r.stdout[-3000:])
    check(r.returncode == 0, f"device_session.sh --dry-run exit {r.returncode}: {r.stderr[-2000:]}")
    files = sorted(os.listdir(out))
    check(files == ["captured_models.tar.gz", "session.log"], f"$OUT holds the archive and the log: {files}")
    with open(os.path.join(out, "session.log")) as f:
        log = f.read()
    check(log.startswith("session: GPU ") and "done:" in log, "session.log: header line and the end")
    unpack = tempfile.mkdtemp(prefix="captured_models_unpacked.")
    with tarfile.open(os.path.join(out, "captured_models.tar.gz")) as t:
        t.extractall(unpack)
    stage = os.path.join(unpack, "captured_models")
    runs_dir = os.path.join(stage, "runs")
    with open(os.path.join(runs_dir, "plan.json")) as f:
        plan = json.load(f)
    outcomes = {}
    for p in plan:
        name = p["name"]
        ok_path, fail_path = os.path.join(runs_dir, name + ".json"), os.path.join(runs_dir, name + ".failed.json")
        if os.path.exists(ok_path):
            doc, outcome = check_run(ok_path)
            outcomes[name] = outcome
            if p["kind"] == "hand":
                check_model(os.path.join(runs_dir, doc["model"]), name,
                            doc["stack"]["details"].get("params_total") if outcome == "ok" else None)
            else:
                with open(os.path.join(runs_dir, doc["model"])) as f:
                    cfg = json.load(f)
                check(cfg.get("model_type") == p["arch"] and all(cfg.get(k) == v for k, v in p["config"].items()),
                      f"{name}: the config.json beside it holds the run's config")
                det = doc["stack"]["details"]
                check(det.get("attn_implementation") == "sdpa" and det.get("framework") == "transformers",
                      f"{name}: transformers details")
                if p["recompute"]:
                    check(det.get("checkpointed_modules", 0) > 0, f"{name}: checkpointed modules counted")
                check(det.get("param_dtypes") == (["bfloat16"] if p["precision"] == "bf16" else ["float32"]),
                      f"{name}: parameter dtype {det.get('param_dtypes')}")
        elif os.path.exists(fail_path):
            with open(fail_path) as f:
                fd = json.load(f)
            check(fd.get("kind") == "trainsim.measured_run_failed" and fd.get("reason") in ("error", "timeout", "budget",
                                                                                           "crash"),
                  f"{name}: failure row kind and reason")
            outcomes[name] = fd.get("reason")
        else:
            outcomes[name] = "missing"
    print("outcomes:", json.dumps(outcomes, indent=1))
    expected = {p["name"]: ("oom" if p.get("simulate") == "oom" else "timeout" if p.get("simulate") == "hang" else "ok")
                for p in plan}
    check(outcomes == expected, f"outcomes {outcomes} = {expected}")
    with open(os.path.join(stage, "summary.json")) as f:
        summ = json.load(f)
    n_hf = sum(1 for p in plan if p["kind"] == "hf")
    check(n_hf == 2, "the stand-in transformers put the two Hugging Face dry runs in the plan")
    check(summ["status_counts"] == {"ok": 3 + n_hf, "oom": 1, "timeout": 1}, f"summary counts {summ['status_counts']}")
    with open(os.path.join(runs_dir, "captures.json")) as f:
        caps = json.load(f)
    check(len(caps) == len(plan) and all(c["args"][0] == ("--module" if p["kind"] == "hand" else "--hf-config")
                                         for c, p in zip(caps, plan)), "one capture command per run")
    with open(os.path.join(stage, "captures", "summary.json")) as f:
        cs = json.load(f)["captures"]
    # PyTorch 1.13's fake tensors: the g = 1 Llama captures; the others fail there (README: "Dry run")
    check(cs.get("dry-llama_complex_mb2_bf16-mixed", {}).get("status") == "ok", "the g = 1 Llama's capture")
    # the GPU session's list: unique names, every one in README.md's table, the variant counts it claims
    sys.path.insert(0, HERE)
    import runs as runs_mod
    full = runs_mod.runs()
    with open(os.path.join(HERE, "README.md")) as f:
        readme = f.read()
    check(all(f"`{r['name']}`" in readme for r in full), "README.md lists every run of runs.py")
    combos = {}
    for r in full:
        if r["expect_oom"] is None:
            k = (r["precision"], r["recompute"])
            combos[k] = combos.get(k, 0) + 1
    check(len(full) >= 27 and min(combos.values()) >= 6 and len(combos) == 4,
          f"at least 24 timed runs, each precision/recompute combination at least 6 times: {combos}")
    check(len({r["arch"] for r in full}) >= 12, "12 Hugging Face architectures and 2 hand-written models")
    # collect: the rows as committed, each with its model file, "oom" stated, its capture where made
    dest = os.path.join(unpack, "collected")
    r = subprocess.run([sys.executable, os.path.join(HERE, "measure.py"), "collect", dest, stage],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"measure.py collect: {r.stderr.strip()}")
    for name, outcome in outcomes.items():
        if outcome not in ("ok", "oom"):
            check(not os.path.exists(os.path.join(dest, name + ".json")), f"collect: no row for the failed {name}")
            continue
        with open(os.path.join(dest, name + ".json")) as f:
            row = json.load(f)
        check(row["measured"].get("oom") is (outcome == "oom"), f"collect: {name}: measured.oom stated")
        check(os.path.isfile(os.path.join(dest, row["model"])), f"collect: {name}: its model file beside it")
        captured = cs.get(name, {}).get("status") == "ok"
        check(("capture" in row) == captured and (not captured or os.path.isfile(os.path.join(dest, row["capture"]))),
              f"collect: {name}: its capture named and beside it exactly when made")
    trainsim = os.environ.get("TRAINSIM") or os.path.join(REPO, "build", "trainsim")
    if os.access(trainsim, os.X_OK):
        for p in plan:
            if outcomes[p["name"]] not in ("ok", "oom"):
                continue
            r = subprocess.run([trainsim, "validate", "--measured", os.path.join(runs_dir, p["name"] + ".json"),
                                "--hw", "h200x2-measured"], capture_output=True, text=True, timeout=300)
            msg = (r.stderr or r.stdout).strip().splitlines()
            print(f"trainsim validate {p['name']}: exit {r.returncode}: {msg[0] if msg else ''}")
            if p["precision"] == "bf16-mixed":
                check(r.returncode == 0, f"trainsim validate reads {p['name']}")
            if outcomes[p["name"]] == "oom" and r.returncode == 0:
                # one row: whether it fits (the dry run's OOM is simulated on a tiny model: predicted to fit)
                check(" fits " in r.stdout and "step_time" not in r.stdout, f"{p['name']}: a fits row alone")
    else:
        print(f"(no trainsim binary at {trainsim}: the C++ reader itself not run; set TRAINSIM)")
    import shutil
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(stub_dir, ignore_errors=True)
    shutil.rmtree(unpack, ignore_errors=True)
    print(f"test_writer: {len(failures)} failed checks" if failures else "test_writer: all checks passed")
    print("1 passed, 0 failed" if not failures else "0 passed, 1 failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
