"""The framework parts: what each measures, how many sizes it has, how long it takes.

trainsim-calibrate plans a run from this table (`python3 -m framework parts`): with --quick each
part runs its quick sizes, with --full all of them, and with --budget as many as fit
(calibrate/run_plan.cpp). Needs no torch.

`seconds` are the estimated seconds of a part run at 1, 2, ... sizes on one H200 (cumulative), the
driver's start (importing torch, a CUDA context) apart. Before the first run of the driver on a GPU
they were set from what the scripts it came from took there (reports/calibration/fsdp-kernels/ and
reports/calibration/h200x2/host_dispatch/torch/ record about 1 s for fsdp_kernels and host) and
from the sizes' work for the others; each run records what each part took (raw_results.json,
provenance.seconds), which is what to set them from.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Part:
    name: str
    module: str       # framework.<module>
    function: str     # its measurement: function(device, sizes, progress) -> records
    what: str
    quick_sizes: int
    seconds: tuple    # cumulative estimated seconds at 1, 2, ... sizes; len() = every size
    needs_gpu: bool = True

    @property
    def full_sizes(self):
        return len(self.seconds)


# In the order they run: the cheap ones that every profile needs first, so an interrupted run keeps them.
PARTS = (
    Part("torch_host", "torch_host", "host", "PyTorch's host time per operator and per module hook", 1, (2.0,)),
    Part("torch_kernels", "torch_kernels", "kernels",
         "PyTorch's memory-bound kernels (casts, adds, norms, GELU, SwiGLU, rotary, cross-entropy, fused AdamW) at "
         "4 M, 16 M and 64 M elements", 2, (6.0, 14.0, 40.0)),
    Part("torch_attention", "torch_attention", "attention",
         "flash attention (scaled_dot_product_attention) forward and backward, the measured rows' shapes first", 5,
         (1.5, 3.0, 4.5, 6.0, 7.5, 9.5, 11.5, 15.0, 27.0, 28.5)),
    Part("torch_fsdp_kernels", "torch_kernels", "fsdp_kernels",
         "FSDP2's copy-in, copy-out and reduce-scatter input kernels over one layer (GPT h1024, Llama 8B, 70B)",
         1, (0.5, 2.0, 5.0)),
    Part("torch_cpu_adam", "torch_host", "cpu_adam",
         "PyTorch's fused CPU AdamW, 1, 2 and 4 processes at once (FSDP2 CPU offload's optimizer)", 3,
         (10.0, 20.0, 35.0), needs_gpu=False),
    # Per stack: single, ddp, fsdp2-zero2, -zero3, -offload, at one rank. reports/calibration/h200x2/
    # host_dispatch/stack_w*.log: single 4.5 s, ddp 6.5 s (at 2 ranks, NCCL's start included), each
    # FSDP2 stack 1.1 s; here the one-rank group's start (about 1 s, not yet timed) is in the first.
    Part("torch_stacks", "torch_stacks", "stacks",
         "each PyTorch stack's host time per layer, per micro-batch and per optimizer step (the validation rows' "
         "stacks on a tiny GPT at 2 and 8 layers, one rank; no pipelines on one GPU)", 5,
         (5.5, 12.0, 13.1, 14.2, 15.3)),
    # Per width (the GPT at hidden 1024, Llama 3 8B's layer, the GPT at 2560, 4096, 5120, 6144, 8192,
    # Llama 3 70B's layer, the GPT at 12288), each at 1, 2 and 4 sequences: the sums of
    # reports/calibration/step-gemms/gpu0.log's per-configuration seconds on an H200 (the first
    # holds cuBLAS's and the profiler's start, 4.9 s).
    Part("torch_step_gemms", "torch_steps", "step_gemms",
         "every GEMM and flash attention kernel of profiled single-GPU training steps (bf16 autocast) of two-layer "
         "GPT and Llama models, the measured rows' widths first", 4,
         (5.5, 8.1, 9.2, 10.8, 12.9, 15.3, 18.9, 24.0, 30.8)),
    # reports/calibration/layer-kernels/torch_layer_kernels.json, seconds: kernels 3.8 s, attention 1.1 s.
    Part("torch_layer_kernels", "torch_layer", "layer",
         "a layer's kernels in the layouts it runs them (bias gradients, mixed-dtype residual adds, split "
         "backward, SwiGLU and rotary over fused outputs), then flash attention over views of the fused QKV", 2,
         (4.0, 5.2)),
    # reports/calibration/offload/h200x4/torch_offload_bench_r1.json, seconds: copies 8.5 s, AdamW 23.8 s
    # (one rank, 64 cores); the rounds on autograd's thread are estimated as long as the copies (they
    # copy the same sizes, 5 samples of 4 to 24 rounds; not yet timed on a GPU).
    Part("torch_offload", "torch_offload", "offload",
         "FSDP2 CPU offload's copies (pageable and pinned, each way) and CPU gradient adds, and its fused CPU AdamW "
         "by tensor size, one rank", 1, (32.5, 41.0)),
)

# The driver's own start: importing torch and creating a CUDA context.
STARTUP_SECONDS = 8.0


def by_name(name):
    for p in PARTS:
        if p.name == name:
            return p
    raise KeyError(name)


def describe(mode):
    """What `parts --mode MODE` prints: per part its sizes at this mode and the seconds at each count."""
    out = []
    for p in PARTS:
        sizes = p.quick_sizes if mode == "quick" else p.full_sizes
        out.append({"name": p.name, "what": p.what, "sizes": sizes, "needs_gpu": p.needs_gpu,
                    "seconds": list(p.seconds[:sizes])})
    return {"startup_seconds": STARTUP_SECONDS, "parts": out}
