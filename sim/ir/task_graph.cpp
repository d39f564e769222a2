#include "task_graph.hpp"

namespace trainsim::sim {

std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::COMPUTE: return "compute";
    case OpKind::COLLECTIVE: return "collective";
    case OpKind::TRANSFER: return "transfer";
    case OpKind::COPY_H2D: return "h2d";
    case OpKind::COPY_D2H: return "d2h";
    case OpKind::STORAGE_READ: return "storage_read";
    case OpKind::STORAGE_WRITE: return "storage_write";
    case OpKind::CPU: return "cpu";
    case OpKind::DELAY: return "delay";
  }
  return "?";
}

std::string_view to_string(Category c) {
  switch (c) {
    case Category::COMPUTE: return "compute";
    case Category::COMMUNICATION: return "communication";
    case Category::OFFLOAD_IO: return "offload_io";
    case Category::OPTIMIZER: return "optimizer";
  }
  return "?";
}

std::string_view to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::ALL_REDUCE: return "all_reduce";
    case CollectiveKind::ALL_GATHER: return "all_gather";
    case CollectiveKind::REDUCE_SCATTER: return "reduce_scatter";
    case CollectiveKind::BROADCAST: return "broadcast";
  }
  return "?";
}

std::string_view to_string(MemClass c) {
  switch (c) {
    case MemClass::PARAMS: return "params";
    case MemClass::GRADS: return "grads";
    case MemClass::OPTIMIZER: return "optimizer";
    case MemClass::ACTIVATIONS: return "activations";
    case MemClass::CHECKPOINTS: return "checkpoints";
    case MemClass::GATHERED: return "gathered_params";
    case MemClass::BUCKETS: return "buckets";
    case MemClass::LOGITS: return "logits";
    case MemClass::STAGING: return "staging";
  }
  return "?";
}

void GraphBuilder::chain(OpId id, int gpu, Stream stream) {
  if (gpu < 0 || stream == Stream::NODE) return;
  OpId& previous = last_[static_cast<std::size_t>(gpu) * STREAMS + static_cast<std::size_t>(stream)];
  if (previous != NONE) boost::add_edge(previous, id, *graph_);
  previous = id;
}

OpId GraphBuilder::add_with_deps(Op&& op, const OpId* first, const OpId* last) {
  // boost::add_vertex(property, graph) copies the property (two vectors' allocations per op):
  // the op is moved into a default vertex instead.
  const OpId id = boost::add_vertex(*graph_);
  Op& stored = (*graph_)[id];
  stored = std::move(op);
  if (stored.participants.empty()) {
    chain(id, stored.gpu, stored.stream);
  } else {
    for (int g : stored.participants) chain(id, g, stored.stream);
  }
  for (const OpId* d = first; d != last; ++d) {
    if (*d != NONE) boost::add_edge(*d, id, *graph_);
  }
  return id;
}

OpId GraphBuilder::add(Op op, const std::vector<OpId>& deps) { return add_with_deps(std::move(op), deps.data(), deps.data() + deps.size()); }

OpId GraphBuilder::add(Op op, std::initializer_list<OpId> deps) { return add_with_deps(std::move(op), deps.begin(), deps.end()); }

}  // namespace trainsim::sim
