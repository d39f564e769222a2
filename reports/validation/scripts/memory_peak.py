# Where the GPU peak of reports/validation's fsdp2-offload L32-h2560 mb1x2 run lies: the same model and
# FSDP2 setup as run_step.py's build_dp (offload branch) and train_step, one warm-up step, then one step
# with per-phase peaks and the caching allocator's history (alloc / free_requested) replayed to the peak.
import json, os, sys, time, datetime
import torch, torch.distributed as dist
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import GPT, init_weights, loss_fn
from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard
from torch.nn.attention import SDPBackend, sdpa_kernel
L, h, a, V, s = int(os.environ.get("L", 32)), int(os.environ.get("H", 2560)), int(os.environ.get("A", 20)), 50304, 2048
mb, ga = int(os.environ.get("MB", 1)), 2
RANK = int(os.environ["RANK"]); LR = int(os.environ["LOCAL_RANK"]); W = int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(LR); DEV = torch.device("cuda", LR)
dist.init_process_group("nccl", device_id=DEV, timeout=datetime.timedelta(seconds=120))
torch.set_num_threads(max(1, (os.cpu_count() or 1) // W))
torch.manual_seed(1234)
BF16 = torch.bfloat16
mp = MixedPrecisionPolicy(param_dtype=BF16, reduce_dtype=torch.float32)
pol = CPUOffloadPolicy(pin_memory=True)
with torch.device(DEV):
    model = GPT(L, h, a, V, s)
init_weights(model, L)
for blk in model.blocks:
    fully_shard(blk, mp_policy=mp, reshard_after_forward=True, offload_policy=pol)
fully_shard(model, mp_policy=mp, reshard_after_forward=True, offload_policy=pol)
params = list(model.parameters())
opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
g = torch.Generator(device=DEV); g.manual_seed(100 + RANK)
xs = [torch.randint(0, V, (mb, s), device=DEV, generator=g) for _ in range(ga)]
ys = [torch.randint(0, V, (mb, s), device=DEV, generator=g) for _ in range(ga)]
MiB = 2 ** 20
phases = []
def mark(name):
    torch.cuda.synchronize()
    phases.append({"phase": name, "peak_MiB": torch.cuda.max_memory_allocated(DEV) / MiB,
                   "now_MiB": torch.cuda.memory_allocated(DEV) / MiB})
    torch.cuda.reset_peak_memory_stats(DEV)
def kind(p):
    return type(p).__name__
def step(record):
    states = {}
    for i in range(ga):
        logits = model(xs[i])
        if record:
            states[f"mb{i}_after_forward"] = {"wte": kind(model.wte.weight), "block31_fc1": kind(model.blocks[-1].fc1.weight)}
            mark(f"mb{i} forward")
        loss = loss_fn(logits, ys[i]) / ga
        del logits
        if record: mark(f"mb{i} loss")
        loss.backward()
        if record:
            states[f"mb{i}_after_backward"] = {"wte": kind(model.wte.weight), "wte_grad": None if model.wte.weight.grad is None else str(model.wte.weight.grad.device)}
            mark(f"mb{i} backward")
    opt.step(); opt.zero_grad(set_to_none=True)
    if record: mark("optimizer")
    return states
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    step(False)
    torch.cuda.synchronize(); torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated(DEV)
    torch.cuda.memory._record_memory_history(max_entries=400000, context="alloc", stacks="python")
    torch.cuda.reset_peak_memory_stats(DEV)
    dist.barrier()
    states = step(True)
    torch.cuda.synchronize()
snap = torch.cuda.memory._snapshot()
torch.cuda.memory._record_memory_history(enabled=None)
tr = snap["device_traces"][LR]
live, cur, best, best_i = {}, base, base, -1
for i, e in enumerate(tr):
    if e["action"] == "alloc":
        live[e["addr"]] = (e["size"], i); cur += e["size"]
        if cur > best: best, best_i = cur, i
    elif e["action"] == "free_requested":
        if e["addr"] in live: cur -= live.pop(e["addr"])[0]
def fr(e):
    return [f'{os.path.basename(f["filename"])}:{f["line"]}:{f["name"]}' for f in e.get("frames", [])
            if "torch/nn/modules/module.py" not in f["filename"]][:5]
live = {}
for e in tr[:best_i + 1]:
    if e["action"] == "alloc": live[e["addr"]] = e
    elif e["action"] == "free_requested": live.pop(e["addr"], None)
blocks = sorted(live.values(), key=lambda e: -e["size"])
agg = {}
for e in blocks:
    k = (e["size"], tuple(fr(e)[:3]))
    agg.setdefault(k, [0, 0]); agg[k][0] += 1; agg[k][1] += e["size"]
out = {"rank": RANK, "world": W, "config": [L, h, a, mb, ga], "torch": torch.__version__,
       "base_MiB_before_step": base / MiB, "replayed_peak_MiB": best / MiB, "peak_event_index": best_i, "events": len(tr),
       "phases": phases, "param_types": states,
       "live_at_peak": [{"size": k[0], "count": v[0], "total_MiB": v[1] / MiB, "frames": list(k[1])}
                        for k, v in sorted(agg.items(), key=lambda kv: -kv[1][1])],
       "events_before_peak": [{"i": i, "action": e["action"], "size": e["size"], "frames": fr(e)} for i, e in
                              enumerate(tr) if best_i - 40 <= i <= best_i + 10]}
if RANK == 0:
    print(json.dumps({k: out[k] for k in ("base_MiB_before_step", "replayed_peak_MiB", "phases", "param_types")}, indent=0))
    for r in out["live_at_peak"][:25]: print(r)
od = os.environ.get("OUT", "/tmp")
with open(os.path.join(od, f"peak_{os.environ.get('TAG','')}_r{RANK}.json"), "w") as f: json.dump(out, f, indent=1)
dist.destroy_process_group()
