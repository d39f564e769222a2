#include "calibration_extras.hpp"

namespace trainsim::hw {
namespace {

// Ranges: a slowdown is at least 1 (nothing runs faster for sharing its GPU) and below 100; host
// times from 0 to a second; rates from a thousand parameters per second up.
NumberRange slowdown() { return {1.0, 100.0, true, "a number in [1, 100] (ratio to running alone)"}; }
NumberRange micros() { return {0.0, 1e6, true, "a number in [0, 1e6] (microseconds)"}; }
NumberRange tflops() { return {0.001, 1e5, true, "a number in [0.001, 1e5] (TFLOP/s)"}; }
NumberRange count(const char* unit) { return {1.0, 1e12, true, std::string("a number in [1, 1e12] (") + unit + ")"}; }

Interference read_interference(StrictObject o) {
  Interference i;
  i.compute_slowdown = o.number("compute_slowdown", slowdown());
  i.communication_slowdown = o.number("communication_slowdown", slowdown());
  i.source = o.string("source");
  o.finish();
  return i;
}

HostDispatch read_host_dispatch(StrictObject o) {
  HostDispatch h;
  h.kernel_launch_us = o.optional_number("kernel_launch_us", micros());
  h.gpu_kernel_us = o.optional_number("gpu_kernel_us", micros());
  h.op_us = o.optional_number("op_us", micros());
  h.hook_us = o.optional_number("hook_us", micros());
  if (o.has("stacks")) {
    for (StrictObject s : o.objects("stacks")) {
      StackDispatch d;
      d.stack = s.string("stack");
      d.layer_forward_us = s.number("layer_forward_us", micros());
      d.layer_backward_us = s.number("layer_backward_us", micros());
      d.micro_batch_forward_us = s.number("micro_batch_forward_us", micros());
      d.micro_batch_backward_us = s.number("micro_batch_backward_us", micros());
      d.sync_layer_us = s.number("sync_layer_us", micros());
      d.optimizer_step_us = s.number("optimizer_step_us", micros());
      d.optimizer_layer_us = s.number("optimizer_layer_us", micros());
      s.finish();
      h.stacks.push_back(d);
    }
  }
  h.source = o.string("source");
  o.finish();
  return h;
}

}  // namespace

void read_calibration_extras(StrictObject& o, Calibration& cal) {
  if (auto i = o.optional_object("interference")) cal.interference = read_interference(*i);
  if (auto h = o.optional_object("host_dispatch")) cal.host_dispatch = read_host_dispatch(*h);
  if (auto a = o.optional_object("attention")) {
    for (StrictObject k : a->objects("kernels")) {
      AttentionKernel e;
      e.head_dim = k.number("head_dim", count("elements"));
      e.seq = k.number("seq", count("tokens"));
      e.batch_heads = k.number("batch_heads", count("attention heads"));
      e.causal = k.boolean("causal");
      e.forward_TFLOPs = k.number("forward_TFLOPs", tflops());
      e.backward_TFLOPs = k.number("backward_TFLOPs", tflops());
      k.finish();
      cal.attention.push_back(e);
    }
    cal.attention_source = a->string("source");
    a->finish();
  }
  if (auto c = o.optional_object("cpu_optimizers")) {
    for (StrictObject r : c->objects("runs")) {
      CpuOptimizerRate e;
      e.what = r.string("what");
      e.processes = static_cast<int>(r.integer("processes", 1, 4096));
      e.threads_per_process = static_cast<int>(r.integer("threads_per_process", 1, 100000));
      e.params_per_s_per_process = r.number("params_per_s_per_process", count("parameters per second"));
      r.finish();
      cal.cpu_optimizers.push_back(e);
    }
    cal.cpu_optimizers_source = c->string("source");
    c->finish();
  }
}

void calibration_extras_to_json(const Calibration& c, nlohmann::ordered_json& cal) {
  if (c.interference) {
    cal["interference"] = {{"compute_slowdown", c.interference->compute_slowdown},
                           {"communication_slowdown", c.interference->communication_slowdown},
                           {"source", c.interference->source}};
  }
  if (c.host_dispatch) {
    const HostDispatch& h = *c.host_dispatch;
    nlohmann::ordered_json j;
    if (h.kernel_launch_us) j["kernel_launch_us"] = *h.kernel_launch_us;
    if (h.gpu_kernel_us) j["gpu_kernel_us"] = *h.gpu_kernel_us;
    if (h.op_us) j["op_us"] = *h.op_us;
    if (h.hook_us) j["hook_us"] = *h.hook_us;
    if (!h.stacks.empty()) {
      j["stacks"] = nlohmann::ordered_json::array();
      for (const StackDispatch& s : h.stacks) {
        j["stacks"].push_back({{"stack", s.stack},
                               {"layer_forward_us", s.layer_forward_us},
                               {"layer_backward_us", s.layer_backward_us},
                               {"micro_batch_forward_us", s.micro_batch_forward_us},
                               {"micro_batch_backward_us", s.micro_batch_backward_us},
                               {"sync_layer_us", s.sync_layer_us},
                               {"optimizer_step_us", s.optimizer_step_us},
                               {"optimizer_layer_us", s.optimizer_layer_us}});
      }
    }
    j["source"] = h.source;
    cal["host_dispatch"] = j;
  }
  if (!c.attention.empty()) {
    nlohmann::ordered_json k = nlohmann::ordered_json::array();
    for (const AttentionKernel& a : c.attention) {
      k.push_back({{"head_dim", a.head_dim},
                   {"seq", a.seq},
                   {"batch_heads", a.batch_heads},
                   {"causal", a.causal},
                   {"forward_TFLOPs", a.forward_TFLOPs},
                   {"backward_TFLOPs", a.backward_TFLOPs}});
    }
    cal["attention"] = {{"kernels", k}, {"source", c.attention_source}};
  }
  if (!c.cpu_optimizers.empty()) {
    nlohmann::ordered_json r = nlohmann::ordered_json::array();
    for (const CpuOptimizerRate& e : c.cpu_optimizers) {
      r.push_back({{"what", e.what},
                   {"processes", e.processes},
                   {"threads_per_process", e.threads_per_process},
                   {"params_per_s_per_process", e.params_per_s_per_process}});
    }
    cal["cpu_optimizers"] = {{"runs", r}, {"source", c.cpu_optimizers_source}};
  }
}

}  // namespace trainsim::hw
