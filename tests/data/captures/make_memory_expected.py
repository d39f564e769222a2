#!/usr/bin/env python3
"""Writes the expected values of tests/workloads/capture_memory_test.cpp with trainsim_capture's own
replay (replay.py) and scaling (scale.py), so that the C++ replay is held to the Python one and
never to itself. Run from the repository root with Debian's torch 1.13 (the committed captures were
made with it):

    /usr/bin/python3 tests/data/captures/make_memory_expected.py

It (1) captures examples.tiny_mlp (autocast-bf16, for-loop AdamW on the CPU, recompute: buffers
per optimizer repetition, host copies, a recompute inside the backward) into
tiny_mlp.autocast_forloop_cpu_recompute.json, (2) scales it with `--scale` to a size whose peak is
inside a layer's recompute (..scaled_h512_s512.json), and (3) writes memory_replay_expected.json:
replay.replay of the captures and scalings at other layer counts, and of a two-kind model (the
`twin` transform below, which the C++ test repeats) over several layer sequences, and of the MLP
capture with probe buffers added (PROBES) whose summary turns on one detail of replay.py each."""
import copy
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "workloads", "capture"))
from trainsim_capture import jsonio, replay, scale  # noqa: E402

DATA = "tests/data/captures"
MLP = f"{DATA}/tiny_mlp.autocast_forloop_cpu_recompute.json"
MLP_SCALED = f"{DATA}/tiny_mlp.autocast_forloop_cpu_recompute.scaled_h512_s512.json"
MLP_SCALE = {"h": 512, "f": 512, "V": 64, "s": 512, "b": 2, "L": 4}
GPT = "workloads/captures/gpt_model_py.json"
LLAMA = "workloads/captures/llama_model_llama_py.recompute.json"


def cli(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "workloads", "capture"))
    subprocess.run([sys.executable, "-m", "trainsim_capture", "-q", *args], check=True, cwd=ROOT, env=env)


def load(path):
    with open(os.path.join(ROOT, path)) as f:
        return json.load(f)


def twin(doc):
    """A second layer kind, `twin`: a copy of the first kind's phases whose recompute never runs
    (recompute_at null: its recompute positions do not resolve), with its own copy of every buffer
    of the first kind (layer buffers and per-repetition optimizer buffers, appended in order) and the
    first kind's optimizer bodies."""
    out = copy.deepcopy(doc)
    kind = out["layers"][0]["kind"]
    t = copy.deepcopy(out["layers"][0])
    t["kind"] = "twin"
    t["recompute_at"] = None
    out["layers"].append(t)
    for b in list(out["buffers"]):
        if b.get("layer_kind") == kind:
            c = copy.deepcopy(b)
            c["id"] = len(out["buffers"])
            c["layer_kind"] = "twin"
            out["buffers"].append(c)
    for seg in out["phases"]["optimizer"]["segments"]:
        if seg["group"] == "layers" and kind in seg["bodies"]:
            seg["bodies"]["twin"] = copy.deepcopy(seg["bodies"][kind])
    return out


def _buf(nbytes, alloc, free, owner="ends", **extra):
    b = {"kind": "activation", "dtype": "f32", "bytes": nbytes, "alloc_bytes": nbytes, "owner": owner,
         "alloc": alloc, "free": free}
    b.update(extra)
    return b


def _at(phase, op, after=False, **where):
    p = {"phase": phase, "op": op}
    p.update(where)
    if after:
        p["after"] = True
    return p


BIG = 1 << 40
# Buffers added to the MLP capture (recompute_at 2, 41 backward ops; optimizer segments ends,
# layers, ends), to its twin() where the sequence has a twin layer, so that a detail of replay.py
# decides the summary: each is one case, replayed over its layer sequence by both sides.
D3 = [["decoder", 3]]
PROBES = [
    # Backward op `recompute_at` runs after the recompute, not before it.
    ("backward op recompute_at", D3, [_buf(BIG, _at("layer.backward", 2, layer_index=0),
                                          _at("layer.backward", 2, True, layer_index=0))]),
    # A free before its allocation is dropped: the buffer stays to the end.
    ("free before alloc", D3, [_buf(1 << 30, _at("head.forward", 0), _at("embed.forward", 0, True))]),
    # "op": -1 in an ends segment frees before the optimizer's first op.
    ("optimizer op -1", D3, [_buf(BIG, _at("embed.forward", 0), _at("optimizer", -1, True, segment=2)),
                            _buf(BIG, _at("optimizer", 0, segment=0), _at("optimizer", 0, True, segment=0))]),
    # In a layers segment, before the last layer's body (after the first's).
    ("layers segment op -1", D3, [_buf(BIG, _at("embed.forward", 0), _at("optimizer", -1, True, segment=1)),
                                  _buf(BIG, _at("optimizer", 0, segment=1, layer_index=0),
                                       _at("optimizer", 0, True, segment=1, layer_index=0)),
                                  _buf(BIG, _at("optimizer", 0, segment=1, layer_index=-1),
                                       _at("optimizer", 0, True, segment=1, layer_index=-1))]),
    # A layers-segment position with no layer: the last layer's body.
    ("layers segment without a layer", D3, [_buf(BIG, _at("optimizer", 0, segment=1), _at("optimizer", 0, True, segment=1))]),
    # A recompute that never runs (the twin's): its "op": -1 is the end of the layer's backward.
    ("unplaced recompute op -1", [["decoder", 1], ["twin", 1], ["decoder", 1]],
     [_buf(BIG, _at("embed.forward", 0), _at("layer.recompute", -1, True, layer_index=1)),
      _buf(BIG, _at("layer.backward", 40, layer_index=1), _at("layer.backward", 40, True, layer_index=1))]),
    # A recompute's and a forward's "op": -1.
    ("recompute op -1", D3, [_buf(BIG, _at("embed.forward", 0), _at("layer.recompute", -1, True, layer_index=1)),
                            _buf(BIG, _at("layer.recompute", 0, layer_index=1),
                                 _at("layer.recompute", 0, True, layer_index=1))]),
    ("forward op -1", D3, [_buf(BIG, _at("embed.forward", 0), _at("layer.forward", -1, True, layer_index=2)),
                          _buf(BIG, _at("layer.forward", 0, layer_index=2), _at("layer.forward", 0, True, layer_index=2))]),
    # free_first given as null: the first layer's copy is never freed.
    ("free_first null", D3, [_buf(1 << 20, _at("layer.forward", 0), _at("layer.forward", 0, True), owner="layer",
                                 layer_kind="decoder", free_first=None)]),
    # One layer is the first and the last: free_first wins.
    ("free_first over free_last", [["decoder", 1]], [_buf(1 << 20, _at("layer.forward", 0), None, owner="layer", layer_kind="decoder",
                                           free_first=_at("layer.forward", 0, True), free_last=None)]),
    # A layer's buffer copied per layer, an optimizer buffer per repetition freed in the next one.
    ("per repetition", [["decoder", 4]], [_buf(1 << 30, _at("optimizer", 0, segment=1, layer_offset=0),
                                _at("optimizer", 3, True, segment=1, layer_offset=1), owner="optimizer",
                                layer_kind="decoder", per_repetition=True)]),
]


def main():
    cli("--module", "trainsim_capture.examples:tiny_mlp", "--dims", "h=8,f=32,V=50", "--layers", "3",
        "--micro-batch", "2", "--seq", "8", "--precision", "autocast-bf16", "--optimizer", "adamw-forloop",
        "--optimizer-device", "cpu", "--recompute", "--device", "cpu", "-o", MLP)
    cli("--scale", MLP, "--set", ",".join(f"{k}={v}" for k, v in MLP_SCALE.items()), "-o", MLP_SCALED)
    layers = [0, 1, 2, 5, 13]
    cases = []
    for path, changes in ((GPT, {}), (LLAMA, {}), (MLP, {}), (MLP, MLP_SCALE),
                          (MLP, {"h": 64, "f": 4096, "V": 100, "s": 256, "b": 4})):
        doc = load(path)
        if changes:
            doc = scale.scale(doc, changes)
        for n in layers:
            cases.append({"capture": path, "scale": changes, "layers": n, "memory": replay.replay(doc, layers=n)})
    sequences = []
    for path in (LLAMA, MLP):
        doc = twin(load(path))
        kind = doc["layers"][0]["kind"]
        for seq in ([[kind, 1], ["twin", 2], [kind, 1], ["twin", 1]], [["twin", 3]], [[kind, 2], ["twin", 1]]):
            kinds = [k for k, n in seq for _ in range(n)]
            sequences.append({"capture": path, "sequence": seq, "memory": replay.replay(doc, kinds=kinds)})
    probes = []
    for name, seq, bufs in PROBES:
        doc = load(MLP)
        with_twin = any(k == "twin" for k, _ in seq)
        if with_twin:
            doc = twin(doc)
        for b in bufs:
            doc["buffers"].append(dict(b, id=len(doc["buffers"])))
        kinds = [k for k, n in seq for _ in range(n)]
        probes.append({"capture": MLP, "probe": name, "twin": with_twin, "sequence": seq, "add_buffers": bufs,
                       "memory": replay.replay(doc, kinds=kinds)})
    jsonio.write({"cases": cases, "sequences": sequences, "probes": probes,
                  "written_by": "tests/data/captures/make_memory_expected.py (trainsim_capture replay.py)"},
                 os.path.join(ROOT, DATA, "memory_replay_expected.json"))


if __name__ == "__main__":
    main()
