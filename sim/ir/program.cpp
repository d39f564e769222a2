#include "program.hpp"

namespace trainsim::sim {

std::string_view to_string(Tier t) {
  switch (t) {
    case Tier::GPU: return "gpu";
    case Tier::HOST: return "host";
    case Tier::STORAGE: return "storage";
  }
  return "?";
}

std::string_view to_string(Dtype d) {
  switch (d) {
    case Dtype::FP16: return "fp16";
    case Dtype::BF16: return "bf16";
    case Dtype::FP32: return "fp32";
  }
  return "?";
}

std::string_view to_string(GroupKind g) {
  switch (g) {
    case GroupKind::TENSOR: return "tensor";
    case GroupKind::DATA: return "data";
    case GroupKind::PIPELINE: return "pipeline";
    case GroupKind::EMBEDDING: return "embedding";
  }
  return "?";
}

std::string_view to_string(ComputePass p) {
  switch (p) {
    case ComputePass::FORWARD: return "forward";
    case ComputePass::BACKWARD: return "backward";
    case ComputePass::RECOMPUTE: return "recompute";
    case ComputePass::OPTIMIZER: return "optimizer";
    case ComputePass::OTHER: return "other";
  }
  return "?";
}

std::string_view to_string(InstrKind k) {
  switch (k) {
    case InstrKind::COMPUTE: return "compute";
    case InstrKind::HOST_COMPUTE: return "host_compute";
    case InstrKind::COLLECTIVE: return "collective";
    case InstrKind::SEND: return "send";
    case InstrKind::RECV: return "recv";
    case InstrKind::COPY: return "copy";
    case InstrKind::MEMORY: return "memory";
  }
  return "?";
}

}  // namespace trainsim::sim
