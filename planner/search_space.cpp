#include "search_space.hpp"

namespace trainsim::planner {
namespace {

using wl::OffloadTarget;
using wl::Schedule;

std::vector<int> axis_tp(const wl::Strategy& s, const SpaceShape& shape) {
  // Tensor parallelism stays inside a node (Megatron-LM: its all-reduces need NVLink; Narayanan
  // et al. 2021, Sec. 3.3 takeaway #1); any divisor of the node's GPUs that divides the job.
  std::vector<int> out;
  for (int t : divisors(shape.gpus_per_node)) {
    if (s.gpus % t == 0) out.push_back(t);
  }
  return out;
}

std::vector<int> axis_pp(const wl::Strategy& s, const SpaceShape& shape) {
  // Pipeline degrees that split the layers evenly, as Megatron-LM requires (arguments.py: num_layers
  // divisible by the pipeline size, unless first and last stages are sized by hand); uneven splits
  // balanced by cost only when asked (`plan --uneven-pipelines`): such a pipeline repeats only over
  // as many micro-batches as it has stages of one kind, so its replay folds late and costs up to a
  // hundred times an even one's (sim/micro_batch_fold.hpp). `simulate` takes any split.
  std::vector<int> out;
  for (int p : divisors(s.gpus / s.tp)) {
    if (shape.uneven_pipelines || !shape.model->has_architecture() || shape.model->layers % p == 0) out.push_back(p);
  }
  return out;
}

std::vector<int> axis_vpp(const wl::Strategy& s, const SpaceShape& shape) {
  std::vector<int> out{1};
  if (s.pp == 1) return out;
  // Megatron-LM interleaves only when the layers split evenly into pp x vpp chunks (arguments.py).
  const std::int64_t layers = shape.model->layers;
  if (layers % s.pp != 0) return out;
  for (int v : divisors(layers / s.pp)) {
    if (v >= 2) out.push_back(v);
  }
  return out;
}

std::vector<int> axis_schedule(const wl::Strategy& s, const SpaceShape& shape) {
  // Without a pipeline: plain steps, or Hydra's spilled execution (Nagrecha and Kumar 2021),
  // which runs the whole model shard by shard on one GPU (no tensor parallelism).
  if (s.pp == 1 && s.tp == 1 && shape.model->has_architecture()) {
    return {static_cast<int>(Schedule::ONE_F_ONE_B), static_cast<int>(Schedule::HYDRA)};
  }
  if (s.pp == 1) return {static_cast<int>(Schedule::ONE_F_ONE_B)};
  if (s.vpp > 1) return {static_cast<int>(Schedule::INTERLEAVED)};
  return {static_cast<int>(Schedule::GPIPE), static_cast<int>(Schedule::ONE_F_ONE_B), static_cast<int>(Schedule::PIPEDREAM),
          static_cast<int>(Schedule::TWO_BW)};
}

// Hydra's shards: one per layer (what `simulate` defaults to; the smallest shard on the GPU).
std::vector<int> axis_shards(const wl::Strategy& s, const SpaceShape& shape) {
  if (s.schedule != Schedule::HYDRA) return {0};
  return {static_cast<int>(shape.model->layers)};
}

std::vector<int> axis_sp(const wl::Strategy& s, const SpaceShape&) {
  if (s.tp == 1) return {0};
  return {0, 1};
}

std::vector<int> axis_zero(const wl::Strategy& s, const SpaceShape&) {
  if (s.schedule == Schedule::HYDRA) return {0};
  if (s.pp == 1) return {0, 1, 2, 3};
  return {0, 1};
}

std::vector<int> axis_l2l(const wl::Strategy& s, const SpaceShape&) {
  if (s.pp == 1 && s.zero_stage == 0 && s.tp == 1 && s.schedule != Schedule::HYDRA) return {0, 1};
  return {0};
}

std::vector<int> axis_offload_params(const wl::Strategy& s, const SpaceShape&) {
  if (s.zero_stage != 3) return {static_cast<int>(OffloadTarget::NONE)};
  return {static_cast<int>(OffloadTarget::NONE), static_cast<int>(OffloadTarget::CPU), static_cast<int>(OffloadTarget::NVME)};
}

std::vector<int> axis_offload_optimizer(const wl::Strategy& s, const SpaceShape&) {
  if (s.zero_stage == 0 || s.pp > 1) return {static_cast<int>(OffloadTarget::NONE)};
  if (s.zero_stage < 3) return {static_cast<int>(OffloadTarget::NONE), static_cast<int>(OffloadTarget::CPU)};
  return {static_cast<int>(OffloadTarget::NONE), static_cast<int>(OffloadTarget::CPU), static_cast<int>(OffloadTarget::NVME)};
}

std::vector<int> axis_delayed_update(const wl::Strategy& s, const SpaceShape&) {
  if (s.offload_optimizer != OffloadTarget::CPU) return {0};
  return {0, 1};
}

std::vector<int> axis_recompute(const wl::Strategy&, const SpaceShape&) {
  return {static_cast<int>(wl::Recompute::NONE), static_cast<int>(wl::Recompute::SELECTIVE), static_cast<int>(wl::Recompute::FULL)};
}

std::vector<int> axis_offload_activations(const wl::Strategy& s, const SpaceShape&) {
  // Checkpoints go to the CPU under full recompute, in the data-parallel family (the pipeline
  // programs keep them on the GPU).
  if (s.recompute != wl::Recompute::FULL || s.pp > 1) return {static_cast<int>(wl::ActivationOffload::NONE)};
  return {static_cast<int>(wl::ActivationOffload::NONE), static_cast<int>(wl::ActivationOffload::CPU)};
}

std::vector<int> axis_micro_batch(const wl::Strategy& s, const SpaceShape& shape) {
  // Every micro-batch that divides a replica's share of the batch; a batch that does not split
  // over the replicas keeps micro-batch 1, which the rules then refuse (counted).
  if (shape.global_batch % s.dp != 0) return {1};
  return divisors(shape.global_batch / s.dp);
}

}  // namespace

std::vector<int> divisors(std::int64_t n) {
  std::vector<int> small, large;
  for (std::int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    small.push_back(static_cast<int>(d));
    if (d != n / d) large.push_back(static_cast<int>(n / d));
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

const std::vector<Axis>& search_axes() {
  static const std::vector<Axis> axes = {
      {"tp", "tensor-parallel degree (inside a node)", axis_tp,
       [](wl::Strategy& s, int v) { s.tp = v; }},
      {"pp", "pipeline stages; dp = GPUs / (tp x pp)", axis_pp,
       [](wl::Strategy& s, int v) {
         s.pp = v;
         s.dp = s.gpus / (s.tp * s.pp);
       }},
      {"vpp", "virtual stages per GPU (interleaved 1F1B)", axis_vpp, [](wl::Strategy& s, int v) { s.vpp = v; }},
      {"schedule", "pipeline schedule", axis_schedule, [](wl::Strategy& s, int v) { s.schedule = static_cast<Schedule>(v); }},
      {"shards", "Hydra's model shards per GPU", axis_shards, [](wl::Strategy& s, int v) { s.shards = v; }},
      {"sp", "sequence parallelism", axis_sp, [](wl::Strategy& s, int v) { s.sp = v != 0; }},
      {"zero", "ZeRO stage", axis_zero, [](wl::Strategy& s, int v) { s.zero_stage = v; }},
      {"l2l", "L2L (one layer on the GPU at a time)", axis_l2l, [](wl::Strategy& s, int v) { s.l2l = v != 0; }},
      {"offload_params", "parameter offload (ZeRO-Infinity)", axis_offload_params,
       [](wl::Strategy& s, int v) { s.offload_params = static_cast<OffloadTarget>(v); }},
      {"offload_optimizer", "optimizer offload (ZeRO-Offload, ZeRO-Infinity)", axis_offload_optimizer,
       [](wl::Strategy& s, int v) { s.offload_optimizer = static_cast<OffloadTarget>(v); }},
      {"delayed_update", "ZeRO-Offload's one-step delayed update", axis_delayed_update,
       [](wl::Strategy& s, int v) { s.delayed_update = v != 0; }},
      {"recompute", "activation recomputation", axis_recompute,
       [](wl::Strategy& s, int v) { s.recompute = static_cast<wl::Recompute>(v); }},
      {"offload_activations", "checkpoints in host memory", axis_offload_activations,
       [](wl::Strategy& s, int v) { s.offload_activations = static_cast<wl::ActivationOffload>(v); }},
      {"micro_batch", "sequences per micro-batch", axis_micro_batch,
       [](wl::Strategy& s, int v) { s.micro_batch = v; }},
  };
  return axes;
}

namespace {

void walk(std::size_t axis, wl::Strategy& s, const SpaceShape& shape, const std::function<void(const wl::Strategy&)>& visit) {
  const auto& axes = search_axes();
  if (axis == axes.size()) {
    if (shape.framework == nullptr) {
      visit(s);
    } else if (const std::optional<wl::Strategy> run = as_run_by(*shape.framework, s, *shape.model)) {
      visit(*run);
    }
    return;
  }
  const Axis& a = axes[axis];
  for (int v : a.values(s, shape)) {
    wl::Strategy next = s;
    a.apply(next, v);
    walk(axis + 1, next, shape, visit);
  }
}

}  // namespace

void enumerate_space(const SpaceShape& shape, const std::function<void(const wl::Strategy&)>& visit) {
  wl::Strategy s;
  s.nodes = shape.nodes;
  s.gpus = shape.gpus();
  s.dp = s.gpus;
  s.global_batch = shape.global_batch;
  s.seq = shape.seq;
  walk(0, s, shape, visit);
}

}  // namespace trainsim::planner
