#include "step_bound.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include "activation_memory.hpp"
#include "cost_model.hpp"
#include "model_params.hpp"
#include "pcie_topology.hpp"
#include "placement.hpp"
#include "platform.hpp"
#include "stage_partition.hpp"
#include "training_stack.hpp"
#include "unit_costs.hpp"
#include "unit_work.hpp"

namespace trainsim::sim {
namespace {

using wl::OffloadTarget;
using wl::Recompute;

// Capacities in bytes/s (CPU-Adam in parameters/s), as the platform builds its links
// (platform.cpp): nothing in the replay moves faster.
struct Rates {
  double intra = 0;      // a GPU's port into its node's fabric, per direction
  double port = 0;       // the fastest way out of a GPU at all (fabric, PCIe or every NIC of its node)
  double pcie = 0;       // a GPU's PCIe link, per direction
  double host_path = 0;  // a node's host memory path, per direction
  double nic_node = 0;   // all NICs of a node, per direction
  double read = 0, write = 0;  // a node's storage, striped
  double cpu_adam = 0;
  double nic = 0;        // one NIC, per direction
  // The fastest rank 0's data-parallel ring can move its hop bytes when it crosses nodes, over
  // its channels (pcie_topology.hpp); 0 when it stays in a node or the bound does not use it.
  double dp_ring = 0;
};

Rates rates_of(const hw::ClusterProfile& p) {
  Rates r;
  r.pcie = p.pcie.link_GBps * 1e9;
  r.intra = std::max(p.intra_node.link_GBps * 1e9, r.pcie);
  r.nic_node = p.nic.count * p.nic.link_Gbps * 1e9 / 8;
  r.port = std::max(r.intra, r.nic_node);
  r.host_path = p.pcie.host_aggregate_GBps * 1e9;
  r.read = p.storage.count * p.storage.read_GBps * 1e9;
  r.write = p.storage.count * p.storage.write_GBps * 1e9;
  r.cpu_adam = cpu_adam_params_per_s(p);
  r.nic = p.nic.link_Gbps * 1e9 / 8;
  return r;
}

double ratio(double bytes, double rate) { return bytes <= 0 ? 0.0 : rate > 0 ? bytes / rate : 0.0; }

// Bytes a rank sends per byte of a ring collective over n ranks (NCCL's ring: all-reduce
// 2(n-1)/n, reduce-scatter and all-gather (n-1)/n).
double all_reduce_share(int n) { return n > 1 ? 2.0 * (n - 1) / n : 0.0; }
double gather_share(int n) { return n > 1 ? static_cast<double>(n - 1) / n : 0.0; }

// The compute stream of one rank: its unit passes with the synchronous tensor-parallel
// collectives after the segments that end in one (unit_work.cpp).
struct Passes {
  const std::vector<UnitCost>* units = nullptr;
  double tp_collective_s = 0;
  Recompute recompute = Recompute::NONE;
  std::int64_t layers = 0;

  double run(const Segments& segments) const {
    double t = 0;
    for (const Segment& s : segments) t += s.seconds + (s.tp_allreduce_after ? tp_collective_s : 0.0);
    return t;
  }
  bool is_layer(const UnitCost& u) const { return u.layer >= 0 && u.layer < layers; }
  double forward(int u) const { return run(at(u).forward); }
  double recompute_s(int u) const {
    const UnitCost& uc = at(u);
    if (!is_layer(uc) || recompute == Recompute::NONE) return 0;
    return run(recompute == Recompute::FULL ? uc.full_recompute : uc.selective_recompute);
  }
  double backward(int u) const { return run(at(u).backward) + recompute_s(u); }
  const UnitCost& at(int u) const { return (*units)[static_cast<std::size_t>(u)]; }
};

double tp_collective_seconds(const wl::ModelSpec& m, const wl::Strategy& s, const Rates& r, int gpus_per_node) {
  if (s.tp < 2) return 0;
  // All-reduce, or reduce-scatter then all-gather under sequence parallelism: the same bytes.
  const double bytes = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq) * static_cast<double>(m.hidden) *
                       wl::activation_element_bytes(m.numerics);
  return ratio(all_reduce_share(s.tp) * bytes, s.tp <= gpus_per_node ? r.intra : r.port);
}

// A data-parallel collective's bytes per rank: through the rank's port and, when its group spans
// nodes, through the NICs of a node (each of the node's `groups` rings leaves it at least once per
// channel, carrying the share of every step).
double dp_comm_seconds(double per_rank_bytes, const wl::Strategy& s, const Rates& r, int gpus_per_node) {
  double t = ratio(per_rank_bytes, r.port);
  const int span = s.tp * s.dp;
  if (span > gpus_per_node && span % gpus_per_node == 0 && gpus_per_node % s.tp == 0) {
    t = std::max(t, ratio(s.tp * per_rank_bytes, r.nic_node));
  }
  // Rank 0's ring, no faster than its channels: every collective of the step crosses them.
  if (r.dp_ring > 0) t = std::max(t, ratio(per_rank_bytes, r.dp_ring));
  return t;
}

// Rank 0's data-parallel ring's limit when it crosses nodes (Rates::dp_ring), else 0. A search
// asks it of every candidate of a layout (each offload target, ZeRO stage, recompute...): the
// answer is kept per thread, by what it depends on.
double dp_ring_rate(const wl::Strategy& s, const hw::ClusterProfile& p, const Rates& r) {
  if (s.dp < 2 || p.nic.count <= 0 || !(r.pcie > 0) || !(r.nic > 0)) return 0;
  using Key = std::tuple<int, int, int, int, int, int, double, double>;
  const Key key{s.tp, s.dp, s.pp, p.gpus_per_node(), p.pcie.gpus_per_switch, p.nic.count, r.pcie, r.nic};
  thread_local std::map<Key, double> seen;
  if (const auto it = seen.find(key); it != seen.end()) return it->second;
  if (seen.size() >= 4096) seen.clear();
  const Placement placement(s.tp, s.dp, s.pp, p.gpus_per_node());
  const double rate = crossing_ring_rate(PcieTopology(p), placement, placement.group(0, GroupKind::DATA), r.pcie, r.nic);
  seen.emplace(key, rate);
  return rate;
}

StepBound data_parallel_bound(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                              const wl::MemoryEstimate& memory, const CostModel& c, const Rates& r) {
  const int gpn = profile.gpus_per_node();
  const bool zero3_units = s.zero_stage == 3 && !s.l2l;
  const std::vector<UnitCost> units = unit_costs(m, s, c, zero3_units);
  Passes p{&units, tp_collective_seconds(m, s, r, gpn), s.recompute, m.layers};
  const wl::StateBytes b = wl::state_bytes(m.numerics);
  const wl::StackStates stack = wl::stack_states(s.stack, m.numerics, s.zero_stage, s.micro_batches());
  const double mb = static_cast<double>(s.micro_batches());
  const double ranks_per_node = std::min(s.gpus, gpn);
  const bool full = s.recompute == Recompute::FULL;
  const bool fetch = s.l2l || s.offload_params != OffloadTarget::NONE;
  const bool gather = s.zero_stage == 3 && s.dp > 1 && !s.l2l;

  double compute = 0, fetched_bytes = 0, gathered_bytes = 0, grad_bytes = 0;
  for (int u = 0; u < static_cast<int>(units.size()); ++u) {
    const UnitCost& uc = units[static_cast<std::size_t>(u)];
    compute += p.forward(u) + p.backward(u);
    // Parameters are needed by the forward, the backward and a full recompute (schedule items).
    const double uses = 2.0 + (full && p.is_layer(uc) ? 1.0 : 0.0);
    fetched_bytes += uses * (s.l2l ? uc.params : std::ceil(uc.params / s.dp)) * b.params;
    gathered_bytes += uses * uc.params * b.params;
    grad_bytes += owned_params(uc, m, s, stack.head_gathers_tied_embedding) * b.grads;
  }
  compute *= mb;

  // Passes: host<->device copies per GPU and per node, storage per node.
  double h2d = 0, d2h = 0, read = 0, write = 0;
  if (fetch) {
    h2d += mb * fetched_bytes;
    if (s.offload_params == OffloadTarget::NVME) read += ranks_per_node * mb * fetched_bytes;
  }
  if (s.offload_activations == wl::ActivationOffload::CPU) {
    const double checkpoints = mb * static_cast<double>(m.layers) * activation_sizes(m, s).stored;
    h2d += checkpoints;
    d2h += checkpoints;
  }
  const bool every_micro_batch = s.zero_stage >= 2 && !s.l2l;
  const double reductions = every_micro_batch ? mb : 1.0;
  if (s.l2l || s.offload_optimizer != OffloadTarget::NONE) {
    const double per_reduction = s.l2l ? grad_bytes / ranks_per_node : grad_bytes / s.dp;
    d2h += reductions * per_reduction;
    if (s.offload_optimizer == OffloadTarget::NVME) write += ranks_per_node * reductions * per_reduction;
  }
  const double io = std::max({ratio(h2d, r.pcie), ratio(d2h, r.pcie), ratio(ranks_per_node * h2d, r.host_path),
                              ratio(ranks_per_node * d2h, r.host_path), ratio(read, r.read), ratio(write, r.write)});

  // Data-parallel collectives on the communication stream.
  double comm_bytes = 0;
  if (gather) comm_bytes += mb * gather_share(s.dp) * gathered_bytes;
  comm_bytes += reductions * (every_micro_batch ? gather_share(s.dp) : all_reduce_share(s.dp)) * grad_bytes;
  const double comm = dp_comm_seconds(comm_bytes, s, r, gpn);

  // The optimizer step, after the last backward.
  const double rank_params = memory.stages.front().params_on_rank;
  const double shard = s.zero_stage >= 1 ? std::ceil(rank_params / s.dp) : rank_params;
  double optimizer = 0;
  if (s.l2l) {
    optimizer = ratio(rank_params, r.cpu_adam);
  } else if (s.offload_optimizer == OffloadTarget::NONE) {
    optimizer = c.gpu_adam_seconds(shard, m.numerics);
  } else {
    const double node_params = ranks_per_node * shard;
    optimizer = ratio(node_params, r.cpu_adam);
    if (s.offload_optimizer == OffloadTarget::NVME) {
      const double written = b.optimizer + (s.offload_params == OffloadTarget::NVME ? b.params : 0.0);
      optimizer = std::max({optimizer, ratio(node_params * (b.optimizer + b.grads), r.read), ratio(node_params * written, r.write)});
    }
    // The updated 16-bit parameters go back to the GPU after the update, where they live there
    // (data_parallel_schedule: update_params); offloaded parameters stay on their tier.
    if (s.offload_params == OffloadTarget::NONE) {
      const double back = shard * b.params;
      optimizer += std::max(ratio(back, r.pcie), ratio(ranks_per_node * back, r.host_path));
    }
  }

  StepBound out;
  out.compute_s = compute;
  out.communication_s = comm;
  out.offload_io_s = io;
  out.optimizer_s = optimizer;
  // The optimizer waits for every reduction and offload of the passes (data_parallel_schedule).
  out.seconds = std::max({compute, comm, io}) + optimizer;
  return out;
}

StepBound pipeline_bound(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                         const wl::MemoryEstimate& memory, const CostModel& c, const Rates& r) {
  const int gpn = profile.gpus_per_node();
  const std::vector<UnitCost> units = unit_costs(m, s, c, false);
  Passes p{&units, tp_collective_seconds(m, s, r, gpn), s.recompute, m.layers};
  const wl::StagePartition part = wl::partition_stages(m, s);
  const wl::StateBytes b = wl::state_bytes(m.numerics);
  const double mb = static_cast<double>(s.micro_batches());
  const int P = s.pp, V = part.virtual_stages();
  // Received activations are all-gathered over the tensor-parallel group (scatter/gather,
  // pipeline_program.cpp), on the compute stream.
  const double boundary = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq) * static_cast<double>(m.hidden) *
                          wl::activation_element_bytes(m.numerics);
  const double receive_gather = s.tp > 1 && !s.sp ? ratio(gather_share(s.tp) * boundary, r.intra) : 0.0;

  // Forward and backward of each virtual stage for one micro-batch (unit 0: embedding, 1 + l:
  // layer l, L + 1: the head, as pipeline_program.cpp numbers them).
  std::vector<double> fwd(static_cast<std::size_t>(V), 0.0), bwd(static_cast<std::size_t>(V), 0.0);
  for (int vs = 0; vs < V; ++vs) {
    std::vector<int> us;
    if (vs == 0) us.push_back(0);
    for (int l = part.first_layer(vs); l < part.first_layer(vs) + part.layer_count(vs); ++l) us.push_back(l + 1);
    if (vs == V - 1) us.push_back(static_cast<int>(m.layers) + 1);
    auto& f = fwd[static_cast<std::size_t>(vs)];
    auto& k = bwd[static_cast<std::size_t>(vs)];
    for (int u : us) {
      f += p.forward(u);
      k += p.backward(u);
    }
    if (vs > 0) f += receive_gather;
    if (vs < V - 1) k += receive_gather;
  }
  std::vector<double> work(static_cast<std::size_t>(P), 0.0), optimizer(static_cast<std::size_t>(P), 0.0);
  for (int st = 0; st < P; ++st) {
    for (int ch = 0; ch < part.chunks; ++ch) {
      const auto vs = static_cast<std::size_t>(ch * P + st);
      work[static_cast<std::size_t>(st)] += mb * (fwd[vs] + bwd[vs]);
    }
    // After the flush: the data-parallel reduction (communication stream), Adam on the GPU, and
    // with the distributed optimizer the all-gather of the updated parameters.
    const double params = memory.stages[static_cast<std::size_t>(st)].params_on_rank;
    const bool zero1 = s.zero_stage >= 1;
    double t = dp_comm_seconds((zero1 ? gather_share(s.dp) : all_reduce_share(s.dp)) * params * b.grads, s, r, gpn);
    t += c.gpu_adam_seconds(zero1 ? params / s.dp : params, m.numerics);
    if (zero1) t += dp_comm_seconds(gather_share(s.dp) * params * b.params, s, r, gpn);
    optimizer[static_cast<std::size_t>(st)] = t;
  }

  StepBound out;
  double busiest = 0, slowest = 0;
  for (int st = 0; st < P; ++st) {
    busiest = std::max(busiest, work[static_cast<std::size_t>(st)]);
    slowest = std::max(slowest, work[static_cast<std::size_t>(st)] + optimizer[static_cast<std::size_t>(st)]);
  }
  out.compute_s = busiest;
  // Synchronous: the last backward of stage s ends no earlier than the first micro-batch's
  // forwards before it plus its own work, nor earlier than the last backward of stage s + 1 plus
  // its own backward of that micro-batch (GPipe and 1F1B end with the last micro-batch).
  std::vector<double> last_backward(static_cast<std::size_t>(P), 0.0);
  double fill = 0;
  std::vector<double> fill_before(static_cast<std::size_t>(P), 0.0);
  for (int st = 0; st < P; ++st) {
    fill_before[static_cast<std::size_t>(st)] = fill;
    fill += fwd[static_cast<std::size_t>(st)];  // chunk 0's virtual stage st
  }
  for (int st = P - 1; st >= 0; --st) {
    double t = fill_before[static_cast<std::size_t>(st)] + work[static_cast<std::size_t>(st)];
    if (part.chunks == 1 && st + 1 < P) t = std::max(t, last_backward[static_cast<std::size_t>(st + 1)] + bwd[static_cast<std::size_t>(st)]);
    last_backward[static_cast<std::size_t>(st)] = t;
  }
  for (int st = 0; st < P; ++st) {
    const double end = last_backward[static_cast<std::size_t>(st)] + optimizer[static_cast<std::size_t>(st)];
    if (end > out.seconds) {
      out.seconds = end;
      out.optimizer_s = optimizer[static_cast<std::size_t>(st)];
    }
  }
  out.pipeline_fill_s = std::max(0.0, out.seconds - slowest);
  return out;
}

}  // namespace

StepBound step_time_lower_bound(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                                const wl::MemoryEstimate& memory) {
  if (wl::asynchronous(s)) {
    // Measured between the ends of two of several replayed steps (sim/ir/program.hpp): a
    // difference of two ends, which no per-resource or per-path argument bounds from below (an
    // earlier end that comes late shortens it). No bound is claimed: such a step is replayed.
    StepBound none;
    none.dominant = "none (an asynchronous step is replayed, not bounded)";
    return none;
  }
  const CostModel c(profile, m.numerics, s.stack);
  Rates r = rates_of(profile);
  // Data parallelism alone: the step is no shorter than rank 0's collectives over its ring. (A
  // pipeline's stages each have their own data-parallel rings; the bound there keeps the NICs.)
  if (s.pp == 1) r.dp_ring = dp_ring_rate(s, profile, r);
  StepBound out = s.pp > 1 ? pipeline_bound(m, s, profile, memory, c, r) : data_parallel_bound(m, s, profile, memory, c, r);
  struct Term {
    double seconds;
    const char* name;
  };
  const Term terms[] = {{out.compute_s + out.pipeline_fill_s, "compute"},
                        {out.communication_s, "communication"},
                        {out.offload_io_s, "offload I/O"},
                        {out.optimizer_s, "optimizer"}};
  const Term* top = &terms[0];
  for (const Term& t : terms) {
    if (t.seconds > top->seconds) top = &t;
  }
  out.dominant = top->name;
  return out;
}

}  // namespace trainsim::sim
