// torch.distributed.pipelining stages under torch.autocast (training_stacks.md, "pipelining").
#include <algorithm>

#include <fmt/format.h>

#include "stack_modules.hpp"

namespace trainsim::wl {
namespace {

void refusals(const Strategy& s, const ModelSpec& m, const StackNeed& need) {
  pytorch_refusals(s, m, need);
  need(s.dp == 1 && s.zero_stage == 0, "dp = 1 and ZeRO stage 0", fmt::format("dp {}, stage {}", s.dp, s.zero_stage));
  need(s.schedule == Schedule::GPIPE || s.schedule == Schedule::ONE_F_ONE_B, "schedule gpipe or 1f1b",
       std::string(to_string(s.schedule)));
}

void buffers(const ModelSpec& m, const Strategy& s, const StageMemory& st, BufferMemory& buf) {
  pytorch_buffers(m, s, st, buf);
  if (s.pp <= 1) return;
  // torch.distributed.pipelining allocates a receive buffer per micro-batch and keeps them across
  // steps (PipelineStage: one per micro-batch for the activation a non-first stage receives, one
  // for the gradient a non-last stage receives of its output). A received activation is the first
  // layer's saved input while its micro-batch is in flight, which the layers' saved tensors already
  // count; the buffers of the micro-batches not in flight come on top.
  const double boundary = residual_tensor_bytes(m, s.micro_batch, s.seq);
  const double M = static_cast<double>(s.micro_batches());
  if (st.stage < s.pp - 1) buf.receive_buffer_bytes += M * boundary;
  if (st.stage > 0) buf.receive_buffer_bytes += std::max(0.0, M - st.activations.in_flight_microbatches) * boundary;
}

// The calibration measured each schedule's dispatch on its own.
std::string dispatch_key(const Strategy& s) {
  return s.schedule == Schedule::GPIPE ? "pytorch-pipelining:gpipe" : "pytorch-pipelining:1f1b";
}

}  // namespace

const StackModel& pytorch_pipelining_stack() {
  static const StackModel model = [] {
    StackModel m = pytorch_eager_model(StackKind::PYTORCH_PIPELINING);
    m.refusals = refusals;
    m.buffers = buffers;
    m.dispatch_key = dispatch_key;
    return m;
  }();
  return model;
}

}  // namespace trainsim::wl
