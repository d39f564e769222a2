#include "host_dispatch.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <set>
#include <tuple>
#include <utility>

#include "stack_model.hpp"

namespace trainsim::sim {

std::string stack_dispatch_key(const wl::Strategy& s) {
  const auto key = wl::stack_model(s).dispatch_key;
  return key != nullptr ? key(s) : std::string(wl::to_string(s.stack.kind));
}

const hw::StackDispatch* stack_dispatch(const wl::Strategy& s, const hw::ClusterProfile& profile) {
  if (wl::stack_model(s).dispatch_key == nullptr || !profile.calibration.host_dispatch) return nullptr;
  const std::string key = stack_dispatch_key(s);
  // A stack calibrated at several rank counts (every entry names its "ranks"; the loader checks):
  // the entry at the run's ranks, else the nearest (fewer on a tie), the calibration's world size
  // being the run's whole world (torch_stack_dispatch.py: data-parallel ranks, or stages).
  const auto distance = [&](const hw::StackDispatch& e) { return std::pair(std::abs(*e.ranks - s.gpus), *e.ranks); };
  const hw::StackDispatch* best = nullptr;
  for (const auto& d : profile.calibration.host_dispatch->stacks) {
    if (d.stack != key) continue;
    if (!d.ranks) return &d;
    if (best == nullptr || distance(d) < distance(*best)) best = &d;
  }
  return best;
}

void assign_host_dispatch(ProgramSet& programs, const wl::Strategy& s, const hw::ClusterProfile& profile,
                          int transformer_layers, int micro_batches, std::vector<std::string>& notes) {
  const hw::StackDispatch* d = stack_dispatch(s, profile);
  if (d == nullptr) {
    if (wl::stack_model(s).dispatch_key != nullptr) {
      notes.push_back(fmt::format("host dispatch: {} has no calibrated host time for stack {}: GPU streams are fed at once",
                                  profile.name, stack_dispatch_key(s)));
    }
    return;
  }
  const double us = 1e-6;
  for (Program& prog : programs.stages) {
    // (step, micro-batch, chunk, pass) already charged its per-micro-batch host time; (step,
    // micro-batch, chunk, pass, layer) its per-layer time (a unit cut into segments pays once).
    std::set<std::tuple<int, int, int, int>> micro_batch_paid;
    std::set<std::tuple<int, int, int, int, int>> layer_paid;
    for (Instruction& in : prog.instructions) {
      if (in.kind != InstrKind::COMPUTE) continue;
      double host = 0;
      if (in.pass == ComputePass::OPTIMIZER) {
        host = (d->optimizer_step_us + d->optimizer_layer_us * transformer_layers) * us;
      } else if (in.pass == ComputePass::FORWARD || in.pass == ComputePass::BACKWARD) {
        const bool fwd = in.pass == ComputePass::FORWARD;
        const int p = static_cast<int>(in.pass);
        if (micro_batch_paid.insert({in.step, in.micro_batch, in.chunk, p}).second) {
          host += (fwd ? d->micro_batch_forward_us : d->micro_batch_backward_us) * us;
        }
        const bool layer = in.layer >= 0 && in.layer < transformer_layers;
        if (layer && layer_paid.insert({in.step, in.micro_batch, in.chunk, p, in.layer}).second) {
          host += (fwd ? d->layer_forward_us : d->layer_backward_us) * us;
          // DDP's reducer hooks run in the micro-batch that synchronizes gradients.
          if (!fwd && in.micro_batch == micro_batches - 1) host += d->sync_layer_us * us;
        }
      } else if (in.pass == ComputePass::RECOMPUTE) {
        // Activation checkpointing runs the layer's forward again inside its backward: the host
        // issues that forward's kernels again (its per-micro-batch cost is the backward's own).
        const int p = static_cast<int>(in.pass);
        const bool layer = in.layer >= 0 && in.layer < transformer_layers;
        if (layer && layer_paid.insert({in.step, in.micro_batch, in.chunk, p, in.layer}).second) host += d->layer_forward_us * us;
      }
      in.host_seconds = host;
    }
  }
  notes.push_back(fmt::format(
      "host dispatch ({}'s calibration of {}{}): {:.0f} us per layer forward, {:.0f} us per layer backward, {:.0f} + {:.0f} us "
      "per micro-batch, {:.0f} us per optimizer step; replayed as a host stream feeding the compute stream",
      profile.name, d->stack, d->ranks ? fmt::format(" at {} ranks", *d->ranks) : "", d->layer_forward_us, d->layer_backward_us, d->micro_batch_forward_us, d->micro_batch_backward_us,
      d->optimizer_step_us + d->optimizer_layer_us * transformer_layers));
}

}  // namespace trainsim::sim
