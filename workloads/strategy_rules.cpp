#include "strategy_rules.hpp"

#include <fmt/format.h>

#include <functional>
#include <optional>

namespace trainsim::wl {
namespace {

struct Broken {
  Field field;
  std::string expected;
  std::string got;
};
using Check = std::function<std::optional<Broken>(const ModelSpec&, const Strategy&)>;

struct Rule {
  RuleInfo info;
  Check check;
};

std::string str(std::int64_t v) { return std::to_string(v); }
bool raw(const ModelSpec& m) { return !m.has_architecture(); }

// The first and last stage layers of Megatron-LM (--decoder-first/last-pipeline-num-layers): the
// middle stages split what is left evenly, each stage over its chunks.
std::optional<Broken> stage_layers(const ModelSpec& m, const Strategy& s) {
  const int first = s.first_stage_layers, last = s.last_stage_layers;
  if (first == 0 && last == 0) return std::nullopt;
  if (s.pp < 2) return Broken{Field::FIRST_STAGE_LAYERS, "pp >= 2 for first and last stage layers", "pp 1"};
  if (raw(m)) return std::nullopt;
  const int free_stages = s.pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const std::int64_t rest = m.layers - first - last;
  const std::string got = fmt::format("first {}, last {}", first, last);
  if (rest < 0 || (free_stages == 0 && rest != 0) || (free_stages > 0 && (rest % free_stages != 0 || rest / free_stages < s.vpp))) {
    return Broken{Field::FIRST_STAGE_LAYERS,
                  fmt::format("first and last stage layers that leave the other {} stages an equal share (at least vpp = "
                              "{}) of the {} layers",
                              free_stages, s.vpp, m.layers),
                  got};
  }
  const int middle = free_stages > 0 ? static_cast<int>(rest / free_stages) : s.vpp;
  for (const auto& [n, what] : {std::pair{first, "first"}, std::pair{last, "last"}, std::pair{middle, "middle"}}) {
    if (n > 0 && n % s.vpp != 0) {
      return Broken{Field::FIRST_STAGE_LAYERS,
                    fmt::format("stage layers divisible by vpp = {} (the {} stage's {} layers split over its chunks)", s.vpp,
                                what, n),
                    got};
    }
  }
  return std::nullopt;
}

// The list, in the order resolve_inputs reports them. DeepSpeed's rules: deepspeed/runtime/zero/
// config.py and engine.py; Megatron-LM's: megatron/training/arguments.py.
const std::vector<Rule>& rules() {
  using S = RuleScope;
  static const std::vector<Rule> list = {
      {{"gpus-product", S::STRATEGY, "dp x tp x pp = GPUs"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (s.dp * s.tp * s.pp == s.gpus) return std::nullopt;
         return Broken{Field::DP,
                       fmt::format("dp x tp x pp = GPUs: {} x {} x {} = {} but the GPU count is {}", s.dp, s.tp, s.pp,
                                   s.dp * s.tp * s.pp, s.gpus),
                       str(s.dp)};
       }},
      {{"raw-model-no-model-parallelism", S::STRATEGY, "tp = pp = 1 with a raw parameter count"},
       [](const ModelSpec& m, const Strategy& s) -> std::optional<Broken> {
         if (!raw(m) || (s.tp == 1 && s.pp == 1)) return std::nullopt;
         return Broken{s.tp > 1 ? Field::TP : Field::PP,
                       "tp = pp = 1 with --params (a raw parameter count has no layers or heads to split; use --model)",
                       str(s.tp > 1 ? s.tp : s.pp)};
       }},
      {{"tp-divides-heads", S::STRATEGY, "tp divides the attention heads"},
       [](const ModelSpec& m, const Strategy& s) -> std::optional<Broken> {
         if (raw(m) || m.heads % s.tp == 0) return std::nullopt;
         return Broken{Field::TP, fmt::format("a divisor of the attention heads ({}) of {}", m.heads, m.name), str(s.tp)};
       }},
      {{"tp-divides-kv-heads", S::STRATEGY, "tp divides the key/value heads"},
       [](const ModelSpec& m, const Strategy& s) -> std::optional<Broken> {
         if (raw(m) || m.kv_heads % s.tp == 0) return std::nullopt;
         return Broken{Field::TP, fmt::format("a divisor of the key/value heads ({}) of {}", m.kv_heads, m.name), str(s.tp)};
       }},
      // Megatron-LM splits the MLP's first GEMM by columns and the second by rows over tp
      // (ColumnParallelLinear / RowParallelLinear), and megatron/core/utils.py divide() asserts that
      // ffn_hidden_size divides evenly (tag core_v0.16.1: tensor_parallel/layers.py lines 842 and
      // 1166 call divide(), utils.py line 468 asserts): a remainder would leave ranks of unequal width.
      {{"tp-divides-ffn", S::STRATEGY, "tp divides the MLP hidden size"},
       [](const ModelSpec& m, const Strategy& s) -> std::optional<Broken> {
         if (raw(m) || m.ffn_hidden % s.tp == 0) return std::nullopt;
         return Broken{Field::TP,
                       fmt::format("a divisor of the MLP hidden size ({}) of {} (Megatron-LM asserts ffn_hidden_size "
                                   "% tp == 0 where it splits the MLP)",
                                   m.ffn_hidden, m.name),
                       str(s.tp)};
       }},
      // Layers need not divide evenly (stage_partition.hpp), but every virtual stage holds one.
      {{"layers-per-virtual-stage", S::STRATEGY, "at least one layer per virtual pipeline stage"},
       [](const ModelSpec& m, const Strategy& s) -> std::optional<Broken> {
         if (raw(m) || m.layers >= s.pp * s.vpp) return std::nullopt;
         return Broken{s.vpp > 1 ? Field::VPP : Field::PP,
                       fmt::format("pp x vpp ({} x {}) at most the {} layers of {}", s.pp, s.vpp, m.layers, m.name),
                       str(s.pp * s.vpp)};
       }},
      {{"stage-layers", S::STRATEGY, "first and last stage layers leave the other stages an equal share"}, stage_layers},
      {{"interleaved-needs-vpp", S::STRATEGY, "the interleaved schedule needs vpp >= 2"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (!schedule_facts(s.schedule).model_chunks || s.vpp >= 2) return std::nullopt;
         return Broken{Field::VPP, "vpp >= 2 for the interleaved schedule", str(s.vpp)};
       }},
      {{"vpp-needs-interleaved", S::STRATEGY, "vpp > 1 only with the interleaved schedule"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (s.vpp <= 1 || schedule_facts(s.schedule).model_chunks) return std::nullopt;
         return Broken{Field::SCHEDULE, fmt::format("\"interleaved\" when vpp > 1 (vpp = {})", s.vpp),
                       "\"" + std::string(to_string(s.schedule)) + "\""};
       }},
      {{"vpp-needs-pipeline", S::STRATEGY, "virtual stages need pp >= 2"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (s.vpp <= 1 || s.pp >= 2) return std::nullopt;
         return Broken{Field::VPP, "pp >= 2 for virtual pipeline stages", str(s.vpp)};
       }},
      // Hydra (Nagrecha and Kumar 2021) spills one model per GPU through host memory: no
      // pipeline, no ZeRO, no other offload, no tensor parallelism.
      {{"hydra-no-pipeline", S::STRATEGY, "Hydra runs without a pipeline"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (!schedule_facts(s.schedule).one_device || s.pp == 1) return std::nullopt;
         return Broken{Field::SCHEDULE, "pp = 1 for Hydra (each GPU runs the whole model, shard by shard)", "pp > 1"};
       }},
      {{"hydra-alone", S::STRATEGY, "Hydra with ZeRO 0, tp 1, no L2L and no offload"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (s.schedule != Schedule::HYDRA ||
             (s.zero_stage == 0 && !s.l2l && s.offload_params == OffloadTarget::NONE &&
              s.offload_optimizer == OffloadTarget::NONE && s.tp == 1)) {
           return std::nullopt;
         }
         return Broken{Field::SCHEDULE,
                       "--zero 0, --tp 1, no --l2l and no --offload-* with Hydra (it keeps the model in host memory itself)",
                       "another setting"};
       }},
      {{"hydra-needs-architecture", S::STRATEGY, "Hydra needs a model architecture"},
       [](const ModelSpec& m, const Strategy& s) -> std::optional<Broken> {
         if (s.schedule != Schedule::HYDRA || !raw(m)) return std::nullopt;
         return Broken{Field::SCHEDULE, "a model architecture for Hydra (use --model)", "--params"};
       }},
      {{"hydra-shards", S::STRATEGY, "Hydra's shards between 1 and the layers; none without Hydra"},
       [](const ModelSpec& m, const Strategy& s) -> std::optional<Broken> {
         if (s.schedule != Schedule::HYDRA) {
           if (s.shards == 0) return std::nullopt;
           return Broken{Field::SHARDS, "--schedule hydra with --shards", "another schedule"};
         }
         if (raw(m) || (s.shards >= 1 && s.shards <= m.layers)) return std::nullopt;
         return Broken{Field::SHARDS, fmt::format("a shard count in [1, {}] (the layers of {})", m.layers, m.name),
                       str(s.shards)};
       }},
      {{"zero-with-pipeline", S::STRATEGY, "ZeRO stage 0 or 1 with pipeline parallelism (DeepSpeed)"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (s.zero_stage < 2 || s.pp == 1) return std::nullopt;
         return Broken{Field::ZERO,
                       "ZeRO stage 0 or 1 with pipeline parallelism (DeepSpeed rejects stages 2 and 3 with pp > 1)",
                       str(s.zero_stage)};
       }},
      {{"param-offload-needs-zero3", S::STRATEGY, "parameter offload needs ZeRO stage 3"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (s.offload_params == OffloadTarget::NONE || s.zero_stage == 3) return std::nullopt;
         return Broken{Field::OFFLOAD_PARAMS, "ZeRO stage 3 for parameter offload", fmt::format("stage {}", s.zero_stage)};
       }},
      {{"optimizer-offload-needs-zero", S::STRATEGY, "optimizer offload needs ZeRO stage 1, 2 or 3"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (s.offload_optimizer == OffloadTarget::NONE || s.zero_stage > 0) return std::nullopt;
         return Broken{Field::OFFLOAD_OPTIMIZER, "ZeRO stage 1, 2 or 3 for optimizer offload", "stage 0"};
       }},
      {{"nvme-optimizer-needs-zero3", S::STRATEGY, "NVMe optimizer offload needs ZeRO stage 3 (ZeRO-Infinity)"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (s.offload_optimizer != OffloadTarget::NVME || s.zero_stage == 3) return std::nullopt;
         return Broken{Field::OFFLOAD_OPTIMIZER, "ZeRO stage 3 for NVMe optimizer offload (ZeRO-Infinity)",
                       fmt::format("stage {}", s.zero_stage)};
       }},
      {{"activation-offload-needs-full-recompute", S::STRATEGY, "activation offload needs full recompute"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (s.offload_activations == ActivationOffload::NONE || s.recompute == Recompute::FULL) return std::nullopt;
         return Broken{Field::OFFLOAD_ACTIVATIONS,
                       "--recompute full: only activation checkpoints are offloaded (ZeRO-Infinity Sec. 5.1.2)",
                       "recompute " + std::string(to_string(s.recompute))};
       }},
      {{"partition-activations-one-stage", S::STRATEGY, "partitioned activation checkpoints without pipeline parallelism"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         // Replayed by the data-parallel schedule's recompute (sim/program/data_parallel_lowering.cpp).
         if (!s.partition_activations || s.pp == 1) return std::nullopt;
         return Broken{Field::RECOMPUTE, "--pp 1 with partition_activations (not modeled under pipeline parallelism)",
                       fmt::format("pp {}", s.pp)};
       }},
      {{"raw-model-no-activations", S::STRATEGY, "no activation settings with a raw parameter count"},
       [](const ModelSpec& m, const Strategy& s) -> std::optional<Broken> {
         if (!raw(m) || (s.recompute == Recompute::NONE && s.offload_activations == ActivationOffload::NONE)) return std::nullopt;
         return Broken{s.recompute != Recompute::NONE ? Field::RECOMPUTE : Field::OFFLOAD_ACTIVATIONS,
                       "no activation settings with --params (activations need the architecture; use --model)", "a setting"};
       }},
      {{"l2l-alone", S::STRATEGY, "L2L with ZeRO 0, pp 1 and no offload (it keeps model states on the host itself)"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (!s.l2l || (s.zero_stage == 0 && s.pp == 1 && s.offload_params == OffloadTarget::NONE &&
                        s.offload_optimizer == OffloadTarget::NONE)) {
           return std::nullopt;
         }
         return Broken{Field::L2L, "--zero 0, --pp 1 and no --offload-* with L2L (it keeps model states on the host by itself)",
                       "another setting"};
       }},
      // L2L (Pudipeddi et al. 2020) is data parallelism alone: a node keeps one copy of the model
      // states that its ranks share, which the memory model and the replay divide among all of
      // the node's ranks; tensor-parallel ranks would each need their own shard of it.
      {{"l2l-without-tp", S::STRATEGY, "L2L without tensor parallelism"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (!s.l2l || s.tp == 1) return std::nullopt;
         return Broken{Field::L2L, "tp = 1 with L2L (it is data parallelism alone: a node's ranks share one copy of the model states)",
                       fmt::format("tp {}", s.tp)};
       }},
      {{"l2l-needs-architecture", S::STRATEGY, "L2L needs a model architecture"},
       [](const ModelSpec& m, const Strategy& s) -> std::optional<Broken> {
         if (!s.l2l || !raw(m)) return std::nullopt;
         return Broken{Field::L2L, "a model architecture with L2L (use --model)", "--params"};
       }},
      {{"delayed-update-needs-cpu-optimizer", S::STRATEGY, "the delayed update needs the optimizer on the CPU"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (!s.delayed_update || s.offload_optimizer == OffloadTarget::CPU) return std::nullopt;
         return Broken{Field::DELAYED_UPDATE, "--offload-optimizer cpu: the delayed update overlaps the CPU optimizer step",
                       "offload-optimizer " + std::string(to_string(s.offload_optimizer))};
       }},
      {{"seq-within-positions", S::STRATEGY, "the sequence within the learned position table"},
       [](const ModelSpec& m, const Strategy& s) -> std::optional<Broken> {
         if (raw(m) || m.position != PositionKind::LEARNED || s.seq <= m.seq_len) return std::nullopt;
         return Broken{Field::SEQ, fmt::format("at most the {} learned positions of {}", m.seq_len, m.name), str(s.seq)};
       }},
      {{"sp-divides-seq", S::STRATEGY, "sequence parallelism needs a sequence divisible by tp"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (!s.sp || s.seq % s.tp == 0) return std::nullopt;
         return Broken{Field::SP, fmt::format("a sequence length divisible by tp ({}) for sequence parallelism", s.tp),
                       str(s.seq)};
       }},
      {{"global-batch-multiple", S::STRATEGY, "the global batch a multiple of micro-batch x dp"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         const std::int64_t per_step = s.micro_batch * s.dp;
         if (s.global_batch >= per_step && s.global_batch % per_step == 0) return std::nullopt;
         return Broken{Field::GLOBAL_BATCH,
                       fmt::format("a multiple of micro-batch x dp ({} x {} = {})", s.micro_batch, s.dp, per_step),
                       str(s.global_batch)};
       }},
      {{"interleaved-micro-batches", S::STRATEGY, "the interleaved schedule needs micro-batches divisible by pp"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (!schedule_facts(s.schedule).micro_batches_in_groups_of_stages || s.pp < 1 || s.micro_batches() % s.pp == 0) {
           return std::nullopt;
         }
         return Broken{Field::GLOBAL_BATCH,
                       fmt::format("a micro-batch count ({}) divisible by pp ({}) for the interleaved schedule (Megatron-LM)",
                                   s.micro_batches(), s.pp),
                       str(s.global_batch)};
       }},
      // What the simulator replays (planner/simulate_answer.cpp refuses the rest, as the stacks do).
      {{"replay-needs-architecture", S::REPLAY, "a replay needs a model architecture"},
       [](const ModelSpec& m, const Strategy&) -> std::optional<Broken> {
         if (!raw(m)) return std::nullopt;
         return Broken{Field::MODEL, "a model architecture for simulate (use --model): a raw count has no layers",
                       "a raw parameter count"};
       }},
      {{"pipeline-no-offload", S::REPLAY, "no ZeRO-Offload or ZeRO-Infinity with pipeline parallelism"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (s.pp == 1 || (s.offload_params == OffloadTarget::NONE && s.offload_optimizer == OffloadTarget::NONE)) {
           return std::nullopt;
         }
         return Broken{s.offload_params != OffloadTarget::NONE ? Field::OFFLOAD_PARAMS : Field::OFFLOAD_OPTIMIZER,
                       "none with pipeline parallelism (ZeRO-Offload and ZeRO-Infinity run the data-parallel family; use "
                       "--pp 1, or keep the model states on the GPU)",
                       "an offload with pp > 1"};
       }},
      {{"pipeline-no-l2l", S::REPLAY, "L2L runs without a pipeline"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (s.pp == 1 || !s.l2l) return std::nullopt;
         return Broken{Field::L2L, "pp = 1 with L2L (it runs one layer at a time on each GPU)", "pp > 1"};
       }},
      {{"pipeline-no-delayed-update", S::REPLAY, "the delayed update runs without a pipeline"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (s.pp == 1 || !s.delayed_update) return std::nullopt;
         return Broken{Field::DELAYED_UPDATE, "pp = 1 for ZeRO-Offload's delayed update", "pp > 1"};
       }},
      {{"asynchronous-pipeline-no-zero", S::REPLAY, "PipeDream and 2BW keep each stage's full optimizer state"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (!weight_stashing_pipeline(s) || s.zero_stage == 0) return std::nullopt;
         return Broken{Field::ZERO, "0 with PipeDream and 2BW (each stage keeps and updates its own full optimizer state)",
                       str(s.zero_stage)};
       }},
      {{"2bw-micro-batches", S::REPLAY, "2BW needs at least pp micro-batches"},
       [](const ModelSpec&, const Strategy& s) -> std::optional<Broken> {
         if (s.pp == 1 || !schedule_facts(s.schedule).micro_batches_at_least_stages || s.micro_batches() >= s.pp) {
           return std::nullopt;
         }
         return Broken{Field::GLOBAL_BATCH,
                       fmt::format("at least pp = {} micro-batches per pipeline for 2BW (it updates once every m >= p "
                                   "micro-batches, Narayanan et al. 2021)",
                                   s.pp),
                       fmt::format("{} micro-batches", s.micro_batches())};
       }},
  };
  return list;
}

}  // namespace

std::string_view to_string(Field f) {
  switch (f) {
    case Field::GPUS: return "gpus";
    case Field::DP: return "dp";
    case Field::TP: return "tp";
    case Field::PP: return "pp";
    case Field::VPP: return "vpp";
    case Field::FIRST_STAGE_LAYERS: return "first_stage_layers";
    case Field::SP: return "sp";
    case Field::SCHEDULE: return "schedule";
    case Field::ZERO: return "zero";
    case Field::OFFLOAD_PARAMS: return "offload_params";
    case Field::OFFLOAD_OPTIMIZER: return "offload_optimizer";
    case Field::OFFLOAD_ACTIVATIONS: return "offload_activations";
    case Field::RECOMPUTE: return "recompute";
    case Field::L2L: return "l2l";
    case Field::DELAYED_UPDATE: return "delayed_update";
    case Field::SHARDS: return "shards";
    case Field::MICRO_BATCH: return "micro_batch";
    case Field::GLOBAL_BATCH: return "global_batch";
    case Field::SEQ: return "seq";
    case Field::MODEL: return "model";
  }
  return "?";
}

std::string RuleViolation::message() const {
  return fmt::format("{}: expected {}, got {}", to_string(field), expected, got);
}

std::vector<RuleViolation> validate(const ModelSpec& m, const Strategy& s, RuleScope scope) {
  std::vector<RuleViolation> out;
  for (const Rule& r : rules()) {
    if (r.info.scope == RuleScope::REPLAY && scope != RuleScope::REPLAY) continue;
    if (auto broken = r.check(m, s)) {
      out.push_back({std::string(r.info.id), r.info.scope, broken->field, std::move(broken->expected), std::move(broken->got)});
    }
  }
  return out;
}

const std::vector<RuleInfo>& strategy_rules() {
  static const std::vector<RuleInfo> infos = [] {
    std::vector<RuleInfo> v;
    for (const Rule& r : rules()) v.push_back(r.info);
    return v;
  }();
  return infos;
}

}  // namespace trainsim::wl
