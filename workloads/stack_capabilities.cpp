#include "stack_capabilities.hpp"

#include <fmt/format.h>

namespace trainsim::wl {

std::optional<StackRefusal> stack_cannot_run(const Strategy& s, const ModelSpec& m) {
  const std::string name(to_string(s.stack.kind));
  std::optional<StackRefusal> out;
  auto need = [&](bool ok, const std::string& what, const std::string& got) {
    if (!ok && !out) out = StackRefusal{fmt::format("{} for stack {}", what, name), got};
  };
  const bool raw = !m.has_architecture();
  if (s.stack.is_pytorch()) {
    need(s.tp == 1, "tp = 1 (no tensor parallelism in plain PyTorch)", fmt::format("tp {}", s.tp));
    need(!s.l2l && s.schedule != Schedule::HYDRA, "no L2L or Hydra", "one of them");
    // torch.utils.checkpoint around each layer is full recompute; selective recompute is Megatron's.
    need(s.recompute != Recompute::SELECTIVE, "recompute none or full (PyTorch checkpoints whole layers)",
         std::string(to_string(s.recompute)));
    // A capture records what the user's code runs (pure bf16, say); trainsim's own layer is autocast's.
    const bool captured = m.capture_numerics && *m.capture_numerics == m.numerics;
    need(!raw && (m.numerics == Numerics::BF16_MIXED || captured),
         "a model architecture trained in bf16-mixed (or as its --capture recorded)",
         raw ? std::string("--params") : std::string(to_string(m.numerics)));
    need(!s.delayed_update, "no delayed parameter update (torch.optim steps after the backward)", "delayed update");
    // torch.utils.checkpoint keeps each layer's input on the GPU; moving checkpoints to the host is
    // not a wrapper's option (torch.autograd.graph.save_on_cpu moves every saved tensor instead).
    need(s.offload_activations == ActivationOffload::NONE, "checkpoints kept on the GPU (no wrapper offloads them)",
         "offload_activations cpu");
  }
  switch (s.stack.kind) {
    case StackKind::PYTORCH:
      need(s.gpus == 1 && s.dp == 1 && s.pp == 1, "one GPU (dp = pp = 1)", fmt::format("{} GPUs", s.gpus));
      need(s.zero_stage == 0, "ZeRO stage 0", fmt::format("stage {}", s.zero_stage));
      break;
    case StackKind::PYTORCH_DDP:
      need(s.pp == 1 && s.zero_stage == 0, "pp = 1 and ZeRO stage 0", fmt::format("pp {}, stage {}", s.pp, s.zero_stage));
      break;
    case StackKind::PYTORCH_FSDP:
      need(s.pp == 1 && (s.zero_stage == 2 || s.zero_stage == 3),
           "pp = 1 and ZeRO stage 2 (reshard_after_forward=False) or 3 (True)", fmt::format("pp {}, stage {}", s.pp, s.zero_stage));
      need(s.offload_params == s.offload_optimizer && s.offload_params != OffloadTarget::NVME,
           "offload of both parameters and optimizer to cpu (CPUOffloadPolicy) or of neither", "another offload");
      break;
    case StackKind::PYTORCH_PIPELINING:
      need(s.dp == 1 && s.zero_stage == 0, "dp = 1 and ZeRO stage 0", fmt::format("dp {}, stage {}", s.dp, s.zero_stage));
      need(s.schedule == Schedule::GPIPE || s.schedule == Schedule::ONE_F_ONE_B, "schedule gpipe or 1f1b",
           std::string(to_string(s.schedule)));
      break;
    case StackKind::MEGATRON:
      need(s.offload_params == OffloadTarget::NONE && s.offload_optimizer == OffloadTarget::NONE && s.zero_stage <= 1,
           "no offload and ZeRO stage 0 or 1 (the distributed optimizer)", "another setting");
      // Megatron-LM's schedules (megatron/core/pipeline_parallel/schedules.py): 1F1B without and
      // with interleaving; no GPipe, no weight stashing, no L2L or Hydra.
      need(s.pp == 1 || s.schedule == Schedule::ONE_F_ONE_B || s.schedule == Schedule::INTERLEAVED,
           "schedule 1f1b or interleaved (Megatron-LM's pipeline schedules)", std::string(to_string(s.schedule)));
      need(!s.l2l && s.schedule != Schedule::HYDRA && !s.delayed_update, "no L2L, Hydra or delayed update", "one of them");
      break;
    case StackKind::DEEPSPEED:
      // DeepSpeed 0.16.5: its pipeline engine runs TrainSchedule, a synchronous 1F1B
      // (deepspeed/runtime/pipe/schedule.py), without interleaving or sequence parallelism; its
      // activation checkpointing (deepspeed/runtime/activation_checkpointing) recomputes whole
      // layers; ZeRO-Offload has no delayed parameter update there (deepspeed/runtime/zero/).
      // Tensor parallelism needs the model's own split layers: the engine on a model as written
      // has none, but given Megatron-LM's model and its mpu (Megatron-DeepSpeed, the ZeRO papers'
      // runs) it partitions over the mpu's data-parallel group (deepspeed/utils/groups.py,
      // _get_data_parallel_group) beside Megatron's tensor slicing.
      need(s.tp == 1 || s.stack.megatron_mpu,
           "tp = 1 (DeepSpeed's engine splits no layers unless the model is Megatron-LM's: add --megatron-args)",
           fmt::format("tp {}", s.tp));
      need(s.pp == 1 || s.schedule == Schedule::ONE_F_ONE_B, "schedule 1f1b (DeepSpeed's pipeline engine)",
           std::string(to_string(s.schedule)));
      need(!s.sp, "no sequence parallelism", "sp");
      need(s.recompute != Recompute::SELECTIVE, "recompute none or full (DeepSpeed checkpoints whole layers)", "selective");
      need(!s.l2l && s.schedule != Schedule::HYDRA && !s.delayed_update, "no L2L, Hydra or delayed update", "one of them");
      break;
    case StackKind::TRAINSIM_REFERENCE:
      need(s.tp == 1 && !s.l2l && s.schedule != Schedule::HYDRA, "tp = 1, no L2L or Hydra (what the reference runs)",
           fmt::format("tp {}", s.tp));
      need(s.recompute != Recompute::SELECTIVE, "recompute none or full (--recompute layer)", "selective");
      need(!raw && m.numerics == Numerics::BF16_MIXED, "a model architecture trained in bf16-mixed",
           raw ? std::string("--params") : std::string(to_string(m.numerics)));
      break;
    case StackKind::IDEALIZED: break;
  }
  return out;
}

}  // namespace trainsim::wl
