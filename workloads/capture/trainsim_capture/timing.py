"""--time: run the captured step for real on a GPU and time every op (UNTESTED: written without a
GPU; the capture machinery it reuses is tested).

The same driver (step.record_step) runs the same model at the same size with real tensors on
cuda:0, `warmup` untimed forward/backward passes first; a TorchDispatchMode records a CUDA event
before and after every ATen op of the recorded step, and after a synchronize each op's
`measured_us` is the time between its two events (the GPU time of its kernels and the gaps between
them; 0-kernel ops measure about nothing). Ops are matched to the capture by (phase, layer, index)
and their names must agree, else the op gets no measurement and the document a note. The
capture's stand-ins apply to the timed run too (the SDPA rule calls the same backend op), so the
op sequences match; what the GPU would have chosen itself is not measured.
"""
import torch

from .recorder import Recorder
from .step import record_step


class TimingRecorder(Recorder):
    def before_call(self):
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        return e

    def after_call(self, token):
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        self._last_end = e

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if self.timings and len(self.timings[-1]) == 2:
            g, start = self.timings[-1]
            self.timings[-1] = (g, start, self._last_end)
        return out


def time_capture(doc, source, run, warmup=2):
    if not torch.cuda.is_available():
        raise RuntimeError("--time needs a CUDA GPU")
    values = source.target_values(run)
    kinds = source.capture_kinds()
    with source.patches():
        raw = record_step(lambda: source.build(values, kinds), run, recorder_cls=TimingRecorder, real=True,
                          vocab=values["V"], warmup=warmup)
    torch.cuda.synchronize()
    measured = {}
    for g, start, end in raw.timings:
        o = raw.ops[g]
        measured[(o["occ"][0], o["occ"][1], o["idx"])] = (o["op"], start.elapsed_time(end) * 1000.0)
    notes = []
    matched = 0

    def attach(ops, phase, layer):
        nonlocal matched
        for e in ops:
            m = measured.get((phase, layer, e["i"]))
            if m is None:
                continue
            if m[0] != e["op"]:
                notes.append(f"{phase} op {e['i']}: timed {m[0]}, captured {e['op']}")
                continue
            e["measured_us"] = round(m[1], 3)
            matched += 1

    for ph in ("embed.forward", "head.forward", "head.backward", "embed.backward"):
        attach(doc["phases"][ph]["ops"], ph, None)
    for L in doc["layers"]:
        for ph, key in (("layer.forward", "forward"), ("layer.recompute", "recompute"), ("layer.backward", "backward")):
            attach(L["phases"][key]["ops"], ph, L["captured_index"])
    for seg in doc["phases"]["optimizer"]["segments"]:
        if "ops" in seg:
            attach(seg["ops"], "optimizer", None)
        else:
            for body in seg["bodies"].values():
                attach(body["ops"], "optimizer", None)
    doc["timing"] = {"device": torch.cuda.get_device_name(0), "warmup": warmup, "matched_ops": matched,
                     "notes": notes[:50], "method": "CUDA events around each ATen op of one step (tested: no)"}
    return doc
