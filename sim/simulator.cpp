#include "simulator.hpp"

#include "host_dispatch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>

#include "cost_model.hpp"
#include "data_parallel_program.hpp"
#include "engine.hpp"
#include "hydra_program.hpp"
#include "interpreter.hpp"
#include "isolation.hpp"
#include "layer_costs.hpp"
#include "memory_timeline.hpp"
#include "metrics.hpp"
#include "pipeline_program.hpp"
#include "pipeline_schedule.hpp"
#include "micro_batch_fold.hpp"
#include "placement.hpp"
#include "platform.hpp"
#include "trace_writer.hpp"

namespace trainsim::sim {
namespace {

// What one replay measured, per step; every field is one the micro-batch fold extrapolates.
struct Outcome {
  double step_time_s = 0;
  std::vector<GpuBusy> busy;                                  // per simulated GPU, per step
  std::vector<double> gpu_peak;                               // per simulated GPU
  // per simulated GPU (reserved_memory.hpp); not extrapolated like the rest (MicroBatchFold::run)
  std::vector<double> gpu_reserved_peak;
  std::vector<std::array<double, MEM_CLASSES>> gpu_at_peak;   // per simulated GPU
  std::vector<double> host_peak, storage_peak;                // per simulated node
  double ops = 0, activities = 0;
};

// The quantities a folded step extrapolates (not the op counts: those say what was replayed).
std::vector<double> flatten(const Outcome& o) {
  std::vector<double> v{o.step_time_s};
  for (const auto& b : o.busy) {
    v.insert(v.end(), {b.compute_s, b.exposed_communication_s, b.exposed_offload_io_s, b.optimizer_s, b.idle_s, b.hardware_flops,
                       b.call_span_compute_s, b.call_span_optimizer_s, b.gemm_kernel_s, b.attention_kernel_s, b.other_kernel_s,
                       b.optimizer_kernel_s});
  }
  v.insert(v.end(), o.gpu_peak.begin(), o.gpu_peak.end());
  for (const auto& a : o.gpu_at_peak) v.insert(v.end(), a.begin(), a.end());
  v.insert(v.end(), o.host_peak.begin(), o.host_peak.end());
  v.insert(v.end(), o.storage_peak.begin(), o.storage_peak.end());
  return v;
}

Outcome unflatten(const std::vector<double>& v, const Outcome& shape) {
  Outcome o = shape;
  std::size_t i = 0;
  o.step_time_s = v[i++];
  for (auto& b : o.busy) {
    b.compute_s = v[i++];
    b.exposed_communication_s = v[i++];
    b.exposed_offload_io_s = v[i++];
    b.optimizer_s = v[i++];
    b.idle_s = v[i++];
    b.hardware_flops = v[i++];
    b.call_span_compute_s = v[i++];
    b.call_span_optimizer_s = v[i++];
    b.gemm_kernel_s = v[i++];
    b.attention_kernel_s = v[i++];
    b.other_kernel_s = v[i++];
    b.optimizer_kernel_s = v[i++];
  }
  for (auto& p : o.gpu_peak) p = v[i++];
  for (auto& a : o.gpu_at_peak) {
    for (auto& x : a) x = v[i++];
  }
  for (auto& p : o.host_peak) p = v[i++];
  for (auto& p : o.storage_peak) p = v[i++];
  return o;
}

double latest_end(const ReplayResult& replay, const std::vector<OpId>& ops) {
  double t = 0;
  for (OpId id : ops) {
    if (id != GraphBuilder::NONE) t = std::max(t, replay.timing[id].end);
  }
  return t;
}

// The GEMM whose size the interference table is read at (engine.cpp): a layer's MLP
// up-projection per micro-batch and tensor-parallel rank, tokens x ffn/tp x hidden, the shape the
// calibration measured beside collectives (calibrate/cuda/interference_bench.cpp).
double interference_gemm_flops(const wl::ModelSpec& m, const wl::Strategy& s) {
  const double ffn = static_cast<double>(m.ffn_hidden > 0 ? m.ffn_hidden : 4 * m.hidden);
  const double tokens = static_cast<double>(s.micro_batch) * static_cast<double>(m.seq_len);
  return 2.0 * tokens * ffn / static_cast<double>(std::max<std::int64_t>(1, s.tp)) * static_cast<double>(m.hidden);
}

class Replays {
 public:
  Replays(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile, const wl::MemoryEstimate& memory,
          const SimOptions& options)
      : m_(m), s_(s), profile_(profile), memory_(memory), costs_(profile, m.numerics, s.stack),
        placement_(s.tp, s.dp, s.pp, profile.gpus_per_node()), fold_(plan_fold(placement_, options.fold_ranks && !data_parallel_ranks_differ(m, s))),
        drop_implied_links_(options.drop_implied_links) {}

  const FoldPlan& fold() const { return fold_; }
  const CostModel& costs() const { return costs_; }
  const std::vector<std::string>& notes() const { return notes_; }
  const std::vector<SimulatedGpu>& gpus() const { return gpus_; }

  // Replays the step with `micro_batches` per step (0: the strategy's) and measures it.
  Outcome run(int micro_batches, std::string* trace) {
    const ProgramSet programs = build(micro_batches);
    LoweredPrograms lowered = interpret(programs, placement_, fold_, costs_, profile_);
    lowered.caps.gemm_flops = interference_gemm_flops(m_, s_);
    gpus_ = lowered.gpus;
    if (!platform_) {
      platform_ = std::make_unique<Platform>(profile_, lowered.platform, drop_implied_links_);
      spec_ = lowered.platform;
    } else if (!(lowered.platform.gpus.size() == spec_.gpus.size() && lowered.platform.rings == spec_.rings &&
                 lowered.platform.transfers == spec_.transfers)) {
      throw std::logic_error("simulator: replays of one configuration need different platforms");
    }
    const ReplayResult replay = sim::replay(*lowered.graph, *platform_, lowered.caps);
    const int gpus = static_cast<int>(lowered.gpus.size());
    // The step: the whole replay, or over several steps the steady state between the ends of the
    // first and the last measured step (asynchronous schedules, the delayed update), before the
    // trailing step (program/program.hpp).
    double from = 0, to = replay.makespan;
    int steps = 1;
    const int first = std::max(0, lowered.measured_steps - STEADY_STATE_STEPS);
    if (lowered.measured_steps > 1) {
      from = latest_end(replay, lowered.step_ends[static_cast<std::size_t>(first)]);
      to = latest_end(replay, lowered.step_ends[static_cast<std::size_t>(lowered.measured_steps - 1)]);
      steps = lowered.measured_steps - 1 - first;
    }
    steps_ = lowered.steps;
    Outcome o;
    o.step_time_s = (to - from) / steps;
    o.ops = static_cast<double>(boost::num_vertices(*lowered.graph));
    o.activities = static_cast<double>(replay.activities);
    ops_replayed_ += o.ops;
    activities_replayed_ += o.activities;
    const MemoryTimeline timeline = build_memory_timeline(*lowered.graph, replay, gpus, lowered.simulated_nodes);
    o.busy = gpu_busy(*lowered.graph, replay, gpus, from, to, lowered.measured_steps > 1 ? first + 1 : 0, lowered.measured_steps - 1);
    for (auto& b : o.busy) {
      b.compute_s /= steps;
      b.exposed_communication_s /= steps;
      b.exposed_offload_io_s /= steps;
      b.optimizer_s /= steps;
      b.idle_s /= steps;
      b.hardware_flops /= steps;
      b.call_span_compute_s /= steps;
      b.call_span_optimizer_s /= steps;
      b.gemm_kernel_s /= steps;
      b.attention_kernel_s /= steps;
      b.other_kernel_s /= steps;
      b.optimizer_kernel_s /= steps;
    }
    for (const auto& g : timeline.gpus) {
      o.gpu_peak.push_back(g.peak_bytes);
      o.gpu_reserved_peak.push_back(g.reserved_peak_bytes);
      o.gpu_at_peak.push_back(g.at_peak);
    }
    for (const auto& h : timeline.hosts) o.host_peak.push_back(h.peak_bytes);
    for (const auto& st : timeline.storages) o.storage_peak.push_back(st.peak_bytes);
    if (trace != nullptr) {
      const std::string title = fmt::format("trainsim: {} on {} x {} ({} micro-batches replayed)", m_.name, s_.nodes,
                                            profile_.name, micro_batches > 0 ? micro_batches : s_.micro_batches());
      *trace = chrome_trace(*lowered.graph, replay, timeline, lowered, title);
    }
    return o;
  }

  int steps() const { return steps_; }
  // Every op and SimGrid activity of every replay so far.
  double ops_replayed() const { return ops_replayed_; }
  double activities_replayed() const { return activities_replayed_; }

 private:
  ProgramSet build(int micro_batches) {
    ProgramSet p = build_programs(micro_batches);
    assign_host_dispatch(p, s_, profile_, static_cast<int>(m_.layers), micro_batches > 0 ? micro_batches : static_cast<int>(s_.micro_batches()),
                         notes_);
    return p;
  }

  ProgramSet build_programs(int micro_batches) {
    notes_.clear();
    if (s_.pp > 1) {
      PipelineBuild b = build_pipeline_programs(m_, s_, costs_, memory_, micro_batches);
      notes_ = b.programs.notes;
      return std::move(b.programs);
    }
    if (s_.schedule == wl::Schedule::HYDRA) {
      ProgramSet p = build_hydra_program(m_, s_, costs_, memory_, micro_batches);
      notes_ = p.notes;
      return p;
    }
    ProgramSet p = build_data_parallel_program(m_, s_, costs_, memory_, profile_.gpus_per_node(), micro_batches);
    notes_ = p.notes;
    return p;
  }

  const wl::ModelSpec& m_;
  const wl::Strategy& s_;
  const hw::ClusterProfile& profile_;
  const wl::MemoryEstimate& memory_;
  CostModel costs_;
  Placement placement_;
  FoldPlan fold_;
  std::unique_ptr<Platform> platform_;
  PlatformSpec spec_;
  bool drop_implied_links_ = true;
  std::vector<SimulatedGpu> gpus_;
  std::vector<std::string> notes_;
  int steps_ = 1;
  double ops_replayed_ = 0, activities_replayed_ = 0;
};

// Identical gradient-accumulation micro-batches are folded (micro_batch_fold.hpp): every measured
// quantity must grow evenly over the three replays for the step to be extrapolated; otherwise
// everything is replayed. Tests compare folded and full replays on small cases
// (tests/sim/fold_test.cpp).
class MicroBatchFold {
 public:
  // `largest`: the most micro-batches one replay may hold (trainsim's op limit).
  MicroBatchFold(Replays& r, const wl::Strategy& s, std::vector<int> stage_kinds, int largest)
      : r_(r), s_(s), m_(s.micro_batches()), stage_kinds_(std::move(stage_kinds)), largest_(largest) {}

  Outcome run(bool fold, std::string* trace, std::string* how) {
    int given_up = -1;  // the start whose longer periods would replay too much
    for (const FoldTry& t : fold ? fold_tries(s_, m_, stage_kinds_) : std::vector<FoldTry>{}) {
      const int b = t.b, k = t.k;
      if (t.start == given_up) continue;
      // Give up this start once the replays so far and these would hold as many micro-batches as
      // the step (its longer periods only replay more); a later start may still fold.
      int extra = 0;
      for (int n : {b, b + k, b + 2 * k}) extra += replayed_.count(n) ? 0 : n;
      if (replayed_micro_batches_ + extra >= m_) {
        given_up = t.start;
        continue;
      }
      attempted_ = true;
      if (off_line(t) > 0) continue;
      *how = fmt::format("{} micro-batches folded: replayed {}, {} and {}, each further {} adding the same work "
                         "(to 1e-9), the step extrapolated to {}",
                         m_ - (b + 2 * k), b, b + k, b + 2 * k, k == 1 ? "micro-batch" : fmt::format("{} micro-batches", k), m_);
      return extended(t, trace);
    }
    // One replay of the whole step would pass the op limit: extrapolated from three counts within
    // it, exact where they grow evenly, otherwise from the widest with how far they were off a line.
    const std::vector<FoldTry> tries = fold ? extrapolation_tries(s_, m_, largest_) : std::vector<FoldTry>{};
    for (const FoldTry& t : tries) {
      const double off = off_line(t);
      if (off > 0 && &t != &tries.back()) continue;
      *how = fmt::format("extrapolated, not replayed whole: one replay of all {} micro-batches would pass trainsim's op limit; "
                         "replayed {}, {} and {}, the step extended along their line{}",
                         m_, t.b, t.b + t.k, t.b + 2 * t.k,
                         off > 0 ? fmt::format(" (their step times {:.2g}% off a line: no periodic regime that early)", 100 * off)
                                 : " (they grow evenly, to 1e-9)");
      return extended(t, trace);
    }
    *how = fold && attempted_ ? fmt::format("all {} micro-batches replayed (no periodic regime found early enough)", m_)
                              : fmt::format("all {} micro-batch{} replayed", m_, m_ == 1 ? "" : "es");
    return r_.run(0, trace);
  }

 private:
  // 0 where every measured quantity grows evenly over the try's three counts; otherwise how far
  // the step time's second increment is from its first, relative to the step time at b + 2k
  // (at least 1e-12, so that any unevenness counts).
  double off_line(const FoldTry& t) {
    const std::vector<double> a = flatten(at(t.b)), c = flatten(at(t.b + t.k)), e = flatten(at(t.b + 2 * t.k));
    bool linear = true;
    for (std::size_t i = 0; i < a.size() && linear; ++i) linear = grows_evenly(a[i], c[i], e[i]);
    if (linear) return 0;
    return std::max(1e-12, std::fabs((e[0] - c[0]) - (c[0] - a[0])) / std::max(std::fabs(e[0]), 1e-300));
  }

  // The step at m along the try's line.
  Outcome extended(const FoldTry& t, std::string* trace) {
    const std::vector<double> c = flatten(at(t.b + t.k)), e = flatten(at(t.b + 2 * t.k));
    std::vector<double> v(e.size());
    for (std::size_t i = 0; i < e.size(); ++i) v[i] = extend(c[i], e[i], m_, t);
    if (trace != nullptr) r_.run(t.b + 2 * t.k, trace);
    // What the caching allocator reserves beyond the allocated peak does not grow evenly with the
    // micro-batches (whole segments, which blocks get split): the folded step keeps the largest
    // replay's excess over its own allocated peak on top of the extrapolated peak.
    const Outcome& widest = at(t.b + 2 * t.k);
    Outcome o = unflatten(v, widest);
    for (std::size_t g = 0; g < o.gpu_peak.size(); ++g) {
      o.gpu_reserved_peak[g] = o.gpu_peak[g] + (widest.gpu_reserved_peak[g] - widest.gpu_peak[g]);
    }
    return o;
  }

  const Outcome& at(int micro_batches) {
    auto it = replayed_.find(micro_batches);
    if (it == replayed_.end()) {
      it = replayed_.emplace(micro_batches, r_.run(micro_batches, nullptr)).first;
      replayed_micro_batches_ += micro_batches;
    }
    return it->second;
  }

  Replays& r_;
  const wl::Strategy& s_;
  std::int64_t m_;
  std::vector<int> stage_kinds_;  // stage_kind_counts of a pipeline's partition
  int largest_;
  std::map<int, Outcome> replayed_;
  std::int64_t replayed_micro_batches_ = 0;
  bool attempted_ = false;
};

// Runs inside the isolated child: everything that touches SimGrid.
SimResult run_replay(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                     const wl::MemoryEstimate& memory, const SimOptions& options) {
  SimResult r;
  Replays replays(m, s, profile, memory, options);
  std::string how;
  const std::vector<int> stage_kinds = s.pp > 1 ? stage_kind_counts(wl::partition_stages(m, s)) : std::vector<int>{};
  const double per_micro_batch = replay_ops_per_micro_batch(m, s, profile, options);
  const int largest = static_cast<int>(std::min(MAX_REPLAY_OPS / per_micro_batch, 1e9));
  const Outcome o = MicroBatchFold(replays, s, stage_kinds, largest)
                        .run(options.fold_micro_batches, options.trace ? &r.trace : nullptr, &how);
  const auto& gpus = replays.gpus();
  r.simulated = true;
  r.steps_simulated = replays.steps();
  r.step_time_s = o.step_time_s;
  r.simulated_gpus = static_cast<int>(gpus.size());
  r.simulated_nodes = static_cast<int>(replays.fold().nodes.size());
  r.ops = static_cast<std::size_t>(std::llround(replays.ops_replayed()));
  r.activities = static_cast<std::size_t>(std::llround(replays.activities_replayed()));
  double idle = 0, hardware = 0, weight = 0;
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const GpuBusy& b = o.busy[g];
    GpuResult gr;
    gr.stage = gpus[g].rank.coord.pp;
    gr.copies = gpus[g].rank.copies;
    gr.peak_memory_bytes = o.gpu_peak[g];
    gr.peak_reserved_bytes = o.gpu_reserved_peak[g];
    double resident = 0;
    for (int c = 0; c < MEM_CLASSES; ++c) {
      const double bytes = o.gpu_at_peak[g][static_cast<std::size_t>(c)];
      const auto cls = static_cast<MemClass>(c);
      if (cls == MemClass::PARAMS || cls == MemClass::GRADS || cls == MemClass::OPTIMIZER || cls == MemClass::BUCKETS) {
        resident += bytes;
      } else if (std::fabs(bytes) > 0.5) {
        gr.at_peak.emplace_back(std::string(to_string(cls)), bytes);
      }
    }
    gr.baseline_bytes = resident;
    gr.compute_s = b.compute_s;
    gr.exposed_communication_s = b.exposed_communication_s;
    gr.exposed_offload_io_s = b.exposed_offload_io_s;
    gr.optimizer_s = b.optimizer_s;
    gr.idle_s = b.idle_s;
    gr.hardware_flops = b.hardware_flops;
    gr.call_span_compute_s = b.call_span_compute_s;
    gr.call_span_optimizer_s = b.call_span_optimizer_s;
    gr.gemm_kernel_s = b.gemm_kernel_s;
    gr.attention_kernel_s = b.attention_kernel_s;
    gr.other_kernel_s = b.other_kernel_s;
    gr.optimizer_kernel_s = b.optimizer_kernel_s;
    r.peak_memory_bytes = std::max(r.peak_memory_bytes, gr.peak_memory_bytes);
    r.peak_reserved_bytes = std::max(r.peak_reserved_bytes, gr.peak_reserved_bytes);
    // Averages over all ranks: each simulated GPU counts for the ranks it stands for.
    idle += gr.idle_s * gr.copies;
    hardware += gr.hardware_flops * gr.copies;
    weight += gr.copies;
    r.per_gpu.push_back(gr);
  }
  for (double h : o.host_peak) r.host_peak_bytes = std::max(r.host_peak_bytes, h);
  for (double st : o.storage_peak) r.storage_peak_bytes = std::max(r.storage_peak_bytes, st);
  r.bubble_fraction = r.step_time_s > 0 ? idle / weight / r.step_time_s : 0;
  r.model_flops_per_step = wl::model_flops_per_step(m, s);
  r.tflops_per_gpu = r.model_flops_per_step / r.step_time_s / s.gpus / 1e12;
  r.hardware_tflops_per_gpu = hardware / weight / r.step_time_s / 1e12;
  r.tokens_per_s = static_cast<double>(s.global_batch) * static_cast<double>(s.seq) / r.step_time_s;
  r.samples_per_s = static_cast<double>(s.global_batch) / r.step_time_s;
  r.assumptions = replays.costs().assumptions();
  r.folding.push_back(replays.fold().description);
  r.folding.push_back(how);
  r.notes = replays.notes();
  return r;
}

}  // namespace

double replay_ops_per_micro_batch(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                                  const SimOptions& options) {
  // Per simulated GPU, replayed micro-batch and unit (a layer, or a ZeRO-3 gather unit; plus the
  // embedding and the head): forward, recompute and backward with their tensor-parallel
  // collectives, fetches, gathers, copies and sends: at most 16 ops.
  const Placement placement(s.tp, s.dp, s.pp, profile.gpus_per_node());
  const double gpus = static_cast<double>(plan_fold(placement, options.fold_ranks).ranks.size());
  const double units = (s.zero_stage == 3 && s.pp == 1 ? 4.0 : 1.0) * static_cast<double>(m.layers) / s.pp + 2;
  const double steps = program_steps(wl::asynchronous(s), TrailingStep::SIMULATE, static_cast<int>(s.micro_batches()), s.pp);
  return 16.0 * gpus * units * steps;
}

double estimated_replay_ops(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                            const SimOptions& options) {
  // The largest single replay: the widest count of the fold's first try (MicroBatchFold), or of
  // the first extrapolation where one replay of the step would pass the limit, or every micro-batch.
  const double per_micro_batch = replay_ops_per_micro_batch(m, s, profile, options);
  const std::int64_t micro_batches = s.micro_batches();
  const std::vector<int> kinds = s.pp > 1 ? stage_kind_counts(wl::partition_stages(m, s)) : std::vector<int>{};
  const std::vector<FoldTry> tries = options.fold_micro_batches ? fold_tries(s, micro_batches, kinds) : std::vector<FoldTry>{};
  if (!tries.empty()) return per_micro_batch * (tries.front().b + 2 * tries.front().k);
  const int largest = static_cast<int>(std::min(MAX_REPLAY_OPS / per_micro_batch, 1e9));
  const std::vector<FoldTry> wide =
      options.fold_micro_batches ? extrapolation_tries(s, micro_batches, largest) : std::vector<FoldTry>{};
  if (!wide.empty()) return per_micro_batch * (wide.front().b + 2 * wide.front().k);
  return per_micro_batch * micro_batches;
}

SimResult simulate(const wl::ModelSpec& m, const wl::Strategy& s, const hw::ClusterProfile& profile,
                   const wl::MemoryEstimate& memory, const SimOptions& options) {
  // The child sends the result's JSON, then the trace (empty when none was asked for).
  std::vector<std::string> parts = run_isolated_parts([&] {
    SimResult r = run_replay(m, s, profile, memory, options);
    return std::vector<std::string>{to_json(r).dump(), std::move(r.trace)};
  });
  if (parts.size() != 2) throw std::runtime_error("simulation: the simulator process returned an unexpected answer");
  SimResult r = sim_result_from_json(nlohmann::json::parse(parts[0]));
  r.trace = std::move(parts[1]);
  return r;
}

}  // namespace trainsim::sim
