"""The stacks run_step.py times, built from model.py's GPT or model_llama.py's decoder (a configuration's
"arch"): single, DDP and FSDP2 (ZeRO-2, ZeRO-3, CPU offload) by build_dp, and one pipeline stage of
torch.distributed.pipelining (Stage)."""
from types import SimpleNamespace

import torch
import torch.distributed as dist

from model import Block, build_model, init_weights, is_llama, llama_dims, loss_fn
from run_step_probes import BusyTimer

BF16 = torch.bfloat16


class Checkpointed(torch.nn.Module):
    """A transformer block under activation checkpointing (cfg["recompute"] == "full"), as torchtitan
    applies it: torch.utils.checkpoint, non-reentrant, around the whole block; the RNG state is not
    saved (no dropout)."""

    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint
        return checkpoint(self.block, x, use_reentrant=False, preserve_rng_state=False)


def checkpoint_blocks(module, cfg, details):
    """Wraps every block of `module` (its .blocks) in Checkpointed when the configuration asks for
    activation checkpointing; before FSDP2 shards them, so that each shards its wrapped block."""
    if cfg.get("recompute", "none") != "full":
        return
    for i, blk in enumerate(module.blocks):
        module.blocks[i] = Checkpointed(blk)
    details["activation_checkpointing"] = ("torch.utils.checkpoint.checkpoint(block, use_reentrant=False, "
                                           "preserve_rng_state=False) around each transformer block")


def build_dp(cfg, dev, local_rank):
    """single, ddp, fsdp2-*: the model on `dev` (this rank's GPU, `local_rank` on its node) wrapped as the
    stack wraps it, and the stack's details for the measured run: returns (module, details)."""
    stack = cfg["stack"]
    L = cfg["layers"]
    details = {}
    if stack in ("single", "ddp"):
        with torch.device(dev):
            model = build_model(cfg)
        init_weights(model, L)
        checkpoint_blocks(model, cfg, details)
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
                model = build_model(cfg)
            init_weights(model, L)
        else:
            with torch.device("meta"):
                model = build_model(cfg)
        checkpoint_blocks(model, cfg, details)
        for blk in model.blocks:
            fully_shard(blk, mp_policy=mp, reshard_after_forward=reshard, offload_policy=policy)
        fully_shard(model, mp_policy=mp, reshard_after_forward=reshard, offload_policy=policy)
        if not offload:
            model.to_empty(device=dev)
            init_weights(model, L)
        details.update({
            "wrapper": "torch.distributed.fsdp.fully_shard (FSDP2), one unit per transformer layer plus the root "
                       + ("(embedding, final RMSNorm, untied head)" if is_llama(cfg) else
                          "(embeddings, final LayerNorm, tied head)"),
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
    """One pipeline stage: blocks [lo, hi); stage 0 holds the embeddings, the last the head and loss.
    The GPT's head is tied (the last stage keeps a copy of the token embedding, `tied`); the Llama-style
    decoder's is its own, and it has no position embedding."""

    def __init__(self, cfg, lo, hi, first, last):
        super().__init__()
        h, V, s = cfg["hidden"], cfg["vocab"], cfg["seq"]
        self.first, self.last, self.tied = first, last, not is_llama(cfg)
        if first:
            self.wte = torch.nn.Embedding(V, h)
            if self.tied:
                self.wpe = torch.nn.Embedding(s, h)
        if is_llama(cfg):
            from model_llama import LlamaBlock
            _, _, a, kv, f = llama_dims(cfg)
            self.blocks = torch.nn.ModuleList([LlamaBlock(h, a, kv, f, s) for _ in range(lo, hi)])
        else:
            self.blocks = torch.nn.ModuleList([Block(h, cfg["heads"], 4 * h) for _ in range(lo, hi)])
        if last:
            self.ln_f = torch.nn.LayerNorm(h) if self.tied else torch.nn.RMSNorm(h, eps=1e-5)
            if not first or not self.tied:
                # The tied head's copy of the token embedding (its gradient is summed with stage 0's),
                # or the untied head.
                self.head = torch.nn.Parameter(torch.empty(V, h))

    def head_weight(self):
        return self.wte.weight if self.first and self.tied else self.head

    def forward(self, x):
        with torch.autocast("cuda", dtype=BF16):
            if self.first and self.tied:
                pos = torch.arange(x.shape[1], device=x.device)
                x = self.wte(x) + self.wpe(pos)
            elif self.first:
                x = self.wte(x)
            for blk in self.blocks:
                x = blk(x)
            if self.last:
                x = torch.nn.functional.linear(self.ln_f(x), self.head_weight())
        return x


def build_pipeline(cfg, dev, rank, world):
    """pipe-gpipe, pipe-1f1b: this rank's stage (layers split as evenly as they go, the first stages
    one more), its schedule over cfg["micro_batches"] (default 2 x stages), the tied head's group
    (GPT: the first and last stage, whose head copies start equal and whose gradients are summed
    after each backward), and a BusyTimer around the stage's compute calls and the loss."""
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
    S, L = world, cfg["layers"]
    M = cfg["micro_batches"] or 2 * S
    per = [L // S + (1 if i < L % S else 0) for i in range(S)]
    lo = sum(per[:rank])
    first, last = rank == 0, rank == S - 1
    with torch.device(dev):
        stage_mod = Stage(cfg, lo, lo + per[rank], first, last)
    init_weights(stage_mod, L)
    checkpoint_details = {}
    checkpoint_blocks(stage_mod, cfg, checkpoint_details)
    tie_group = None
    if S > 1 and stage_mod.tied:
        tie_group = dist.new_group([0, S - 1])
        if first or last:
            with torch.no_grad():
                dist.broadcast(stage_mod.head_weight().data, src=0, group=tie_group)
    stage = PipelineStage(stage_mod, rank, S, dev)
    Sched = ScheduleGPipe if cfg["stack"] == "pipe-gpipe" else Schedule1F1B
    schedule = Sched(stage, n_microbatches=M, loss_fn=loss_fn)
    busy_timer = BusyTimer()
    timed_calls = [n for n in ("forward_one_chunk", "backward_one_chunk", "backward_weight_one_chunk",
                               "scale_grads") if busy_timer.wrap(stage, n, n)]
    timed_calls += [n for n in ("_maybe_compute_loss", "_compute_loss") if busy_timer.wrap(schedule, n, "loss")]
    details = {
        "wrapper": f"torch.distributed.pipelining.PipelineStage + {Sched.__name__}(n_microbatches={M}, "
                   f"loss_fn=cross_entropy, scale_grads default)",
        "layers_per_stage": per,
        "stage0": "token + position embeddings and its layers", "last_stage": "its layers, final LayerNorm, "
        "tied LM head (a copy of the embedding; its gradient is all-reduced with stage 0's after backward, as "
        "Megatron-LM does) and the loss",
        "mixed_precision": "torch.autocast(cuda, bfloat16) inside each stage's forward; fp32 parameters, "
                           "gradients and AdamW states",
        "residual_stream": "fp32 (autocast); stage-to-stage activations are fp32 [micro_batch, seq, hidden]",
    }
    details.update(checkpoint_details)
    if not stage_mod.tied:
        details.update({"stage0": "token embedding and its layers",
                        "last_stage": "its layers, final RMSNorm, its own LM head and the loss"})
    return SimpleNamespace(stage_mod=stage_mod, tie_group=tie_group, schedule=schedule, busy_timer=busy_timer,
                           timed_calls=timed_calls, details=details, micro_batches=M,
                           schedule_name="gpipe" if cfg["stack"] == "pipe-gpipe" else "1f1b")
