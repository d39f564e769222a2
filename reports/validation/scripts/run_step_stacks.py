"""The stacks run_step.py times, built from model.py's GPT: single, DDP and FSDP2 (ZeRO-2, ZeRO-3, CPU
offload) by build_dp, and one pipeline stage of torch.distributed.pipelining (Stage)."""
import torch

from model import Block, init_weights

BF16 = torch.bfloat16


def build_dp(cfg, dev, local_rank):
    """single, ddp, fsdp2-*: the model on `dev` (this rank's GPU, `local_rank` on its node) wrapped as the
    stack wraps it, and the stack's details for the measured run: returns (module, details)."""
    from model import GPT
    stack = cfg["stack"]
    L, h, a, V, s = cfg["layers"], cfg["hidden"], cfg["heads"], cfg["vocab"], cfg["seq"]
    details = {}
    if stack in ("single", "ddp"):
        with torch.device(dev):
            model = GPT(L, h, a, V, s)
        init_weights(model, L)
        if stack == "ddp":
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = DDP(model, device_ids=[local_rank], gradient_as_bucket_view=True)
            details.update({"wrapper": "torch.nn.parallel.DistributedDataParallel", "bucket_cap_mb": 25,
                            "gradient_as_bucket_view": True, "grad_sync": "all-reduce on the last micro-batch "
                            "(no_sync on the others)", "reduce_dtype": "fp32 (gradients of fp32 parameters)"})
        details.update({"mixed_precision": "torch.autocast(cuda, bfloat16) around forward and loss; fp32 "
                                           "parameters, gradients and AdamW states",
                        "residual_stream": "fp32 (autocast leaves the embedding sum and residual adds in fp32)"})
    else:
        from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard
        mp = MixedPrecisionPolicy(param_dtype=BF16, reduce_dtype=torch.float32)
        offload = stack == "fsdp2-offload"
        reshard = stack != "fsdp2-zero2"
        policy = CPUOffloadPolicy(pin_memory=True) if offload else OffloadPolicy()
        if offload:
            # Built and initialised on the GPU, then fully_shard moves each shard to pinned host memory.
            with torch.device(dev):
                model = GPT(L, h, a, V, s)
            init_weights(model, L)
        else:
            with torch.device("meta"):
                model = GPT(L, h, a, V, s)
        for blk in model.blocks:
            fully_shard(blk, mp_policy=mp, reshard_after_forward=reshard, offload_policy=policy)
        fully_shard(model, mp_policy=mp, reshard_after_forward=reshard, offload_policy=policy)
        if not offload:
            model.to_empty(device=dev)
            init_weights(model, L)
        details.update({
            "wrapper": "torch.distributed.fsdp.fully_shard (FSDP2), one unit per transformer layer plus the root "
                       "(embeddings, final LayerNorm, tied head)",
            "mp_policy": "MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32)",
            "reshard_after_forward": reshard,
            "offload_policy": "CPUOffloadPolicy(pin_memory=True)" if offload else "OffloadPolicy() (none)",
            "grad_sync": "reduce-scatter after every micro-batch's backward (FSDP2 default), accumulated "
                         "into the fp32 sharded gradients",
            "residual_stream": "bf16 (parameters are cast to bf16, no autocast)",
        })
        if offload:
            details["cpu_threads_per_rank"] = torch.get_num_threads()
    return model, details


class Stage(torch.nn.Module):
    """One pipeline stage: blocks [lo, hi); stage 0 holds the embeddings, the last the head and loss."""

    def __init__(self, cfg, lo, hi, first, last):
        super().__init__()
        h, V, s = cfg["hidden"], cfg["vocab"], cfg["seq"]
        self.first, self.last = first, last
        if first:
            self.wte = torch.nn.Embedding(V, h)
            self.wpe = torch.nn.Embedding(s, h)
        self.blocks = torch.nn.ModuleList([Block(h, cfg["heads"], 4 * h) for _ in range(lo, hi)])
        if last:
            self.ln_f = torch.nn.LayerNorm(h)
            if not first:
                # The tied head's copy of the token embedding; its gradient is summed with stage 0's.
                self.head = torch.nn.Parameter(torch.empty(V, h))

    def head_weight(self):
        return self.wte.weight if self.first else self.head

    def forward(self, x):
        with torch.autocast("cuda", dtype=BF16):
            if self.first:
                pos = torch.arange(x.shape[1], device=x.device)
                x = self.wte(x) + self.wpe(pos)
            for blk in self.blocks:
                x = blk(x)
            if self.last:
                x = torch.nn.functional.linear(self.ln_f(x), self.head_weight())
        return x
