#include "cost_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "activation_memory.hpp"
#include "reference_kernels.hpp"
#include "reference_stack.hpp"
#include "torch_kernels.hpp"
#include "torch_offload_calibration.hpp"

namespace trainsim::sim {

double interpolate_curve(const std::vector<hw::CurvePoint>& points, double bytes) {
  if (points.empty()) return 0;
  if (bytes <= points.front().bytes) return points.front().value;
  if (bytes >= points.back().bytes) return points.back().value;
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (bytes <= points[i].bytes) {
      const double x0 = std::log(points[i - 1].bytes), x1 = std::log(points[i].bytes);
      const double w = (std::log(bytes) - x0) / (x1 - x0);
      return points[i - 1].value + w * (points[i].value - points[i - 1].value);
    }
  }
  return points.back().value;
}

namespace {

const hw::BandwidthCurve* find_curve(const std::vector<hw::BandwidthCurve>& curves, std::string_view what, int group) {
  const hw::BandwidthCurve* best = nullptr;
  for (const auto& c : curves) {
    if (c.what != what) continue;
    // The measured group closest in size (calibration covers the group sizes one node has).
    if (best == nullptr || std::abs(c.group_size - group) < std::abs(best->group_size - group)) best = &c;
  }
  return best;
}

}  // namespace

hw::ComputePrecision compute_precision(wl::Numerics n) {
  switch (n) {
    case wl::Numerics::FP16_MIXED: return hw::ComputePrecision::FP16;
    case wl::Numerics::BF16_MIXED:
    case wl::Numerics::BF16: return hw::ComputePrecision::BF16;
    case wl::Numerics::FP32: return hw::ComputePrecision::FP32;
  }
  return hw::ComputePrecision::FP16;
}

CostModel::CostModel(const hw::ClusterProfile& profile, wl::Numerics numerics, const wl::TrainingStack& stack)
    : profile_(profile),
      precision_(compute_precision(numerics)),
      element_bytes_(wl::activation_element_bytes(numerics)),
      stack_(&wl::stack_model(stack.kind)) {
  auto it = profile.gpu.peak_TFLOPs.find(precision_);
  if (it == profile.gpu.peak_TFLOPs.end()) {
    throw std::invalid_argument(fmt::format("the {} of {} has no {} peak in its profile", profile.gpu.model,
                                            profile.name, hw::to_string(precision_)));
  }
  peak_flops_ = it->second * 1e12;
  // The tables' entries of this precision in log space, once: a replay looks GEMMs up often.
  for (const auto& e : profile.calibration.gemm) {
    if (e.precision == precision_) block_gemms_.push_back(log_gemm(e.m, e.n, e.k, e.efficiency));
    if (e.precision == hw::ComputePrecision::FP32) {
      fp32_gemms_.push_back(log_gemm(e.m, e.n, e.k, e.efficiency));
    }
  }
  if (auto fp32 = profile.gpu.peak_TFLOPs.find(hw::ComputePrecision::FP32); fp32 != profile.gpu.peak_TFLOPs.end()) {
    fp32_peak_flops_ = fp32->second * 1e12;
  }
  // Products timed inside training steps (calibration.gemm_in_step), each also as its transpose
  // (C^T = B^T A^T is the same work for cuBLAS; the table holds each shape as the step's aten::mm saw
  // it). Not for the trainsim reference (see the constructor's comment in cost_model.hpp).
  if (stack_->gemm_in_step_table) {
    for (const auto& e : profile.calibration.gemm_in_step) {
      if (e.precision != precision_) continue;
      step_gemms_.push_back(log_gemm(e.m, e.n, e.k, e.efficiency));
      step_gemms_.push_back(log_gemm(e.n, e.m, e.k, e.efficiency));
    }
  }
}

bool aligned_gemm(double m, double n, double k) {
  const auto multiple_of_8 = [](double x) { return std::fmod(x, 8.0) == 0.0; };
  return multiple_of_8(m) && multiple_of_8(n) && multiple_of_8(k);
}

CostModel::LogGemm CostModel::log_gemm(double m, double n, double k, double efficiency) {
  return {std::log(m), std::log(n), std::log(k), efficiency, aligned_gemm(m, n, k)};
}

bool CostModel::costs_in_step(const wl::Gemm& g) const {
  return g.batch == 1 && !step_gemms_.empty() && !fp32_in_lower_precision(g);
}

bool CostModel::fp32_in_lower_precision(const wl::Gemm& g) const {
  return g.fp32 && precision_ != hw::ComputePrecision::FP32 && fp32_peak_flops_ > 0;
}

double CostModel::gemm_seconds(const wl::Gemm& g) const {
  // The nearest entry in log space of the table that applies (the first of equals).
  const bool fp32 = fp32_in_lower_precision(g);
  const std::vector<LogGemm>& table = fp32 ? fp32_gemms_ : costs_in_step(g) ? step_gemms_ : block_gemms_;
  const double lm = std::log(g.m), ln = std::log(g.n), lk = std::log(g.k);
  // Among the entries of the product's own alignment where the table has any (cuBLAS's fast kernels
  // want every leading dimension a multiple of 16 bytes; an odd vocabulary such as GPT-2's 50257 falls
  // to slower ones), else among all.
  const bool aligned = aligned_gemm(g.m, g.n, g.k);
  const bool same_alignment = std::any_of(table.begin(), table.end(), [&](const LogGemm& e) { return e.aligned == aligned; });
  double efficiency = DEFAULT_GEMM_EFFICIENCY;
  double best = std::numeric_limits<double>::infinity();
  for (const LogGemm& e : table) {
    if (same_alignment && e.aligned != aligned) continue;
    const double d = (e.lm - lm) * (e.lm - lm) + (e.ln - ln) * (e.ln - ln) + (e.lk - lk) * (e.lk - lk);
    if (d < best) {
      best = d;
      efficiency = e.efficiency;
    }
  }
  const double compute = g.flops() / ((fp32 ? fp32_peak_flops_ : peak_flops_) * efficiency);
  // A roofline floor: the operands and the result cross HBM at least once.
  const double traffic = (g.m * g.k + g.k * g.n + g.m * g.n) * g.batch * (fp32 ? 4.0 : element_bytes_);
  return std::max(compute, traffic / (profile_.gpu.hbm_GBps * 1e9 * DEFAULT_KERNEL_EFFICIENCY));
}

namespace {
// trainsim-calibrate's name for each generic kernel it measures (calibrate/profile_writer.cpp).
std::string_view generic_curve(wl::KernelClass c) {
  switch (c) {
    case wl::KernelClass::COPY: return "copy";
    case wl::KernelClass::LAYERNORM: return "layernorm";
    case wl::KernelClass::GELU: return "gelu";
    case wl::KernelClass::SOFTMAX: return "softmax";
  }
  return "copy";
}
}  // namespace

double CostModel::kernel_seconds(const wl::MemoryKernel& k) const {
  // The first of the kernel's own calibrated curves the profile has (the stack that launches it
  // orders them), else its generic class's, else the copy's, else a share of HBM bandwidth.
  for (const wl::CalibratedCurve& c : k.curves) {
    if (c.name == nullptr) break;
    const auto& table = c.table == wl::CurveTable::REFERENCE_KERNELS ? profile_.calibration.reference_kernels
                                                                     : profile_.calibration.kernels;
    if (const hw::BandwidthCurve* own = find_curve(table, c.name, 1)) {
      return k.bytes / (interpolate_curve(own->points, k.bytes) * 1e9);
    }
  }
  double GBps = profile_.gpu.hbm_GBps * DEFAULT_KERNEL_EFFICIENCY;
  const hw::BandwidthCurve* curve = find_curve(profile_.calibration.kernels, generic_curve(k.generic), 1);
  if (curve == nullptr) curve = find_curve(profile_.calibration.kernels, "copy", 1);
  if (curve != nullptr) GBps = interpolate_curve(curve->points, k.bytes);
  return k.bytes / (GBps * 1e9);
}

bool CostModel::attention_gemm(const wl::Gemm& g) {
  const std::string_view n = g.name;
  return n == "attention_scores" || n == "attention_context";
}

bool CostModel::times_flash(const wl::PassCost& pass) const {
  return pass.fused_attention && pass.flash.seq > 0 && !profile_.calibration.attention.empty();
}

double CostModel::flash_seconds(const wl::PassCost& pass) const {
  if (!times_flash(pass)) return 0;
  const wl::FlashWork& w = pass.flash;
  // The calibrated entry nearest in (log seq, log batch x heads, head_dim).
  const hw::AttentionKernel* best = nullptr;
  double dist = std::numeric_limits<double>::infinity();
  for (const auto& e : profile_.calibration.attention) {
    const double d = std::pow(std::log(e.seq / w.seq), 2) + std::pow(std::log(e.batch_heads / w.batch_heads), 2) +
                     4 * std::pow(std::log(e.head_dim / w.head_dim), 2);
    if (d < dist) {
      dist = d;
      best = &e;
    }
  }
  // FlashAttention-2's FLOP convention, as calibrated (calibrate/scripts/torch_microbench.py):
  // forward 4 b a s^2 d halved by the causal mask, backward 2.5 times that. Decoder stacks are
  // causal; an encoder (no mask) does twice the work at the same rate.
  const double causal = 0.5;
  const double forward_flops = 4.0 * w.batch_heads * w.seq * w.seq * w.head_dim * causal;
  return w.backward ? 2.5 * forward_flops / (best->backward_TFLOPs * 1e12) : forward_flops / (best->forward_TFLOPs * 1e12);
}

double CostModel::pass_seconds(const wl::PassCost& pass) const {
  double t = flash_seconds(pass);
  for (const auto& g : pass.gemms) {
    if (!(times_flash(pass) && attention_gemm(g))) t += gemm_seconds(g);
  }
  for (const auto& k : pass.kernels) t += kernel_seconds(k);
  return t + launch_gap_seconds(pass);
}

double CostModel::launch_gap_seconds(const wl::PassCost& pass) const {
  const auto& dispatch = profile_.calibration.host_dispatch;
  if (pass.launches <= 0 || !dispatch || !dispatch->gpu_kernel_us) return 0;
  return std::max(0.0, pass.launches - pass.launches_in_entries()) * *dispatch->gpu_kernel_us * 1e-6;
}

CostModel::PassClasses CostModel::pass_classes(const wl::PassCost& pass) const {
  PassClasses c;
  c.attention = flash_seconds(pass);
  c.gaps = launch_gap_seconds(pass);
  for (const auto& g : pass.gemms) {
    if (!(times_flash(pass) && attention_gemm(g))) c.gemm += gemm_seconds(g);
  }
  return c;
}

double CostModel::gpu_adam_seconds(double params, wl::Numerics numerics) const {
  return kernel_seconds({"adam", params * wl::adam_bytes_per_param(numerics)});
}

double CostModel::reference_adam_seconds(double params, bool writes_bf16_copy) const {
  const double per_param = wl::reference_kernel_bytes(wl::ReferenceKernel::ADAM, 1, 1) - (writes_bf16_copy ? 0 : 2);
  wl::MemoryKernel adam = wl::reference_kernel(wl::ReferenceKernel::ADAM, params, 1);
  adam.bytes = params * per_param;
  return kernel_seconds(adam);
}

double CostModel::gpu_optimizer_seconds(double params, wl::Numerics numerics, const wl::StackStates& states) const {
  switch (stack_->gpu_optimizer) {
    case wl::GpuOptimizer::TORCH_FUSED_ADAMW: return kernel_seconds(wl::torch_kernel("torch:adamw_fused_fp32", params * 28.0));
    case wl::GpuOptimizer::REFERENCE_ADAM: return reference_adam_seconds(params, states.keeps_param_shard);
    case wl::GpuOptimizer::PROFILE_ADAM: break;
  }
  return gpu_adam_seconds(params, numerics);
}

namespace {

// One tensor of `elements` from seconds-per-tensor points (sizes ascending): linear between
// measured sizes, the smallest size's time below it, the largest size's time per element above.
double seconds_for_tensor(const std::vector<hw::CpuOptimizerRate::TensorPoint>& points, double elements) {
  if (elements <= points.front().elements) return points.front().seconds;
  if (elements >= points.back().elements) return points.back().seconds * elements / points.back().elements;
  // Strictly inside the measured sizes: the first point above `elements` has one below it.
  const auto hi = std::upper_bound(points.begin(), points.end(), elements,
                                   [](double e, const hw::CpuOptimizerRate::TensorPoint& p) { return e < p.elements; });
  const auto lo = hi - 1;
  return lo->seconds + (hi->seconds - lo->seconds) * (elements - lo->elements) / (hi->elements - lo->elements);
}

}  // namespace

double CostModel::torch_cpu_adam_seconds(double params, int processes, const std::vector<ShardPiece>& tensors) const {
  // FSDP2 steps torch.optim.AdamW(fused=True) over the rank's pinned CPU shards in every rank at
  // once (workloads/stacks/training_stacks.md, "FSDP2"): the run measured that way first, tensor by
  // tensor where it was measured by tensor size (calibrate/scripts/torch_offload_bench.py, `adam`).
  if (const auto& t = profile_.calibration.torch_offload) {
    if (const hw::CpuOptimizerRate* r = hw::torch_offload_adamw(*t, processes)) {
      if (r->seconds_per_tensor.empty() || tensors.empty()) return params / r->params_per_s_per_process;
      double seconds = 0;
      for (const ShardPiece& p : tensors) seconds += p.count * seconds_for_tensor(r->seconds_per_tensor, p.bytes);
      return seconds;
    }
  }
  const hw::CpuOptimizerRate* best = nullptr;
  for (const auto& r : profile_.calibration.cpu_optimizers) {
    if (r.what != "torch_adamw_fused_cpu") continue;
    if (best == nullptr || std::abs(r.processes - processes) < std::abs(best->processes - processes)) best = &r;
  }
  if (best != nullptr) return params / best->params_per_s_per_process;
  const double node_rate = profile_.calibration.cpu_adam_params_per_s.value_or(1e9);
  return params * processes / node_rate;
}

double CostModel::collective_cap(CollectiveKind kind, int group_size, double bytes) const {
  const hw::BandwidthCurve* curve = find_curve(profile_.calibration.collectives, to_string(kind), group_size);
  return curve == nullptr ? 0.0 : interpolate_curve(curve->points, bytes) * 1e9;
}

double CostModel::torch_grad_add_seconds(double bytes, int gpus) const {
  const auto& t = profile_.calibration.torch_offload;
  const hw::BandwidthCurve* curve = t ? hw::torch_offload_curve(*t, "cpu_grad_add", gpus) : nullptr;
  return curve == nullptr ? 0.0 : bytes / (interpolate_curve(curve->points, bytes) * 1e9);
}

double fresh_page_seconds_per_byte(const std::vector<hw::CurvePoint>& points) {
  const hw::CurvePoint* resident = nullptr;
  double fresh_seconds = 0;
  int fresh = 0;
  for (const auto& p : points) {
    if (p.bytes < GLIBC_MMAP_THRESHOLD_MAX_BYTES) {
      resident = &p;  // sizes ascend: the last one below is the largest
    } else {
      fresh_seconds += 1.0 / (p.value * 1e9);
      ++fresh;
    }
  }
  if (resident == nullptr || fresh == 0) return 0.0;
  return std::max(0.0, fresh_seconds / fresh - 1.0 / (resident->value * 1e9));
}

double CostModel::pageable_fault_seconds(double bytes, int gpus) const {
  if (bytes >= GLIBC_MMAP_THRESHOLD_MAX_BYTES) return 0.0;
  const auto& t = profile_.calibration.torch_offload;
  const hw::BandwidthCurve* curve = t ? hw::torch_offload_curve(*t, "d2h_pageable", gpus) : nullptr;
  return curve == nullptr ? 0.0 : bytes * fresh_page_seconds_per_byte(curve->points);
}

double CostModel::copy_cap(OpKind kind, double bytes, bool pageable, int gpus) const {
  const std::string what = std::string(kind == OpKind::COPY_H2D ? "h2d_" : "d2h_") + (pageable ? "pageable" : "pinned");
  const hw::BandwidthCurve* curve = nullptr;
  // Measured with the node's GPUs copying at once (calibrate/scripts/torch_offload_bench.py): a
  // pageable copy's rate depends on the host allocator and the CPU, not only on PCIe.
  if (const auto& t = profile_.calibration.torch_offload) curve = hw::torch_offload_curve(*t, what, gpus);
  if (curve == nullptr) curve = find_curve(profile_.calibration.copies, what, 1);
  return curve == nullptr ? 0.0 : interpolate_curve(curve->points, bytes) * 1e9;
}

std::vector<std::string> CostModel::assumptions() const {
  std::vector<std::string> out;
  const auto& cal = profile_.calibration;
  const bool gemm = !block_gemms_.empty();
  // Say what is calibrated and applied as well as what is assumed.
  if (!step_gemms_.empty()) {
    out.push_back(fmt::format("GEMM efficiency from {}'s {} table of products timed inside training steps (nearest "
                              "shape; calibrate/scripts/torch_step_gemms.py){}",
                              profile_.name, hw::to_string(precision_),
                              gemm ? ", batched products from its table timed back to back" : ""));
  } else {
    out.push_back(gemm ? fmt::format("GEMM efficiency from {}'s calibrated {} table (nearest shape)", profile_.name,
                                     hw::to_string(precision_))
                       : fmt::format("no calibrated {} GEMM table in {}: GEMMs at {:.0f}% of peak (assumed)",
                                     hw::to_string(precision_), profile_.name, DEFAULT_GEMM_EFFICIENCY * 100));
  }
  out.push_back(!cal.kernels.empty()
                    ? fmt::format("memory-bound kernels at {}'s calibrated bandwidth by size", profile_.name)
                    : fmt::format("no calibrated kernel bandwidth in {}: memory-bound kernels at {:.0f}% of HBM (assumed)",
                                  profile_.name, DEFAULT_KERNEL_EFFICIENCY * 100));
  out.push_back(!cal.collectives.empty()
                    ? fmt::format("collectives capped at {}'s calibrated bus bandwidth by size and group", profile_.name)
                    : fmt::format("no calibrated collectives in {}: rings run at link bandwidth", profile_.name));
  if (profile_.nccl) {
    out.push_back(fmt::format("collectives as NCCL {} runs them (its tuning model, sim/engine/nccl_tuning.hpp): ring or tree, "
                              "LL, LL128 or Simple by size, with its latencies and its bandwidth per protocol",
                              profile_.nccl->version));
  }
  out.push_back(!cal.copies.empty()
                    ? fmt::format("host<->device copies capped at {}'s calibrated pinned bandwidth by size", profile_.name)
                    : fmt::format("no calibrated copy curves in {}: host<->device copies at the PCIe figures", profile_.name));
  out.push_back(cal.cpu_adam_params_per_s
                    ? fmt::format("CPU-Adam at {}'s calibrated {:.3g} parameters/s per node", profile_.name,
                                  *cal.cpu_adam_params_per_s)
                    : fmt::format("no calibrated CPU-Adam rate in {}: scaled from ZeRO-Offload's DGX-2 figure by core count",
                                  profile_.name));
  if (cal.torch_offload) {
    const bool by_tensor = std::any_of(cal.torch_offload->adamw.begin(), cal.torch_offload->adamw.end(),
                                       [](const hw::CpuOptimizerRate& r) { return !r.seconds_per_tensor.empty(); });
    out.push_back(fmt::format("PyTorch CPU offload from {}'s calibration.torch_offload: host copies by size (pageable and "
                              "pinned) with the node's ranks copying at once, the CPU gradient add and fused CPU AdamW per "
                              "rank{} as measured by calibrate/scripts/torch_offload_bench.py",
                              profile_.name, by_tensor ? " (tensor by tensor, at its measured time per tensor by size)" : ""));
  }
  if (stack_->pytorch_eager && cal.host_dispatch && cal.host_dispatch->gpu_kernel_us) {
    out.push_back(fmt::format("a PyTorch layer's kernels wait {:.3g} us each for the GPU to start them behind the one before "
                              "({}'s calibration.host_dispatch.gpu_kernel_us), the kernels a layer launches counted as its "
                              "stack launches them (workloads/stacks/stack_layer.hpp)",
                              *cal.host_dispatch->gpu_kernel_us, profile_.name));
  }
  if (stack_->reference_kernels && !cal.reference_kernels.empty()) {
    out.push_back(fmt::format("the trainsim reference's own kernels (LayerNorm, causal softmax, head transposes, column "
                              "sums) at {}'s calibration.reference_kernels rates by size",
                              profile_.name));
  }
  if (cal.interference) {
    out.push_back(fmt::format("interference from {}'s measured table ({} points: collective kind x size x GEMM shape): a "
                              "collective starting beside compute waits its measured extra time, compute beside it is slowed",
                              profile_.name, cal.interference->points.size()));
  }
  return out;
}

}  // namespace trainsim::sim
