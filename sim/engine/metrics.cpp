#include "metrics.hpp"

#include <algorithm>
#include <array>

#include <boost/range/iterator_range.hpp>

namespace trainsim::sim {
namespace {

using Interval = std::pair<double, double>;

// Sorted, disjoint union of intervals clipped to [from, to).
std::vector<Interval> normalize(std::vector<Interval> v, double from, double to) {
  for (auto& [a, b] : v) {
    a = std::max(a, from);
    b = std::min(b, to);
  }
  std::erase_if(v, [](const Interval& i) { return i.second <= i.first; });
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (!out.empty() && i.first <= out.back().second) out.back().second = std::max(out.back().second, i.second);
    else out.push_back(i);
  }
  return out;
}

double length(const std::vector<Interval>& v) {
  double total = 0;
  for (const auto& [a, b] : v) total += b - a;
  return total;
}

// a minus b, both normalized.
std::vector<Interval> subtract(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::size_t j = 0;
  for (auto [start, end] : a) {
    while (j < b.size() && b[j].second <= start) ++j;
    std::size_t k = j;
    double cursor = start;
    while (k < b.size() && b[k].first < end) {
      if (b[k].first > cursor) out.push_back({cursor, b[k].first});
      cursor = std::max(cursor, b[k].second);
      ++k;
    }
    if (cursor < end) out.push_back({cursor, end});
  }
  return out;
}

std::vector<Interval> merge(const std::vector<Interval>& a, const std::vector<Interval>& b, double from, double to) {
  std::vector<Interval> all = a;
  all.insert(all.end(), b.begin(), b.end());
  return normalize(std::move(all), from, to);
}

}  // namespace

std::vector<GpuBusy> gpu_busy(const TaskGraph& graph, const ReplayResult& replay, int gpus, double from, double to,
                              int first_step, int last_step) {
  constexpr std::size_t CATEGORIES = 4;
  std::vector<std::array<std::vector<Interval>, CATEGORIES>> raw(static_cast<std::size_t>(gpus));
  std::vector<GpuBusy> out(static_cast<std::size_t>(gpus));
  for (std::size_t v = 0; v < boost::num_vertices(graph); ++v) {
    const Op& op = graph[v];
    // The host's dispatch of kernels (lowering/interpreter.cpp, issue_on_host) is CPU time: a
    // GPU waiting for it is idle, not computing.
    if (op.stream == Stream::HOST && op.category == Category::COMPUTE) continue;
    const Interval span{replay.timing[v].start, replay.timing[v].end};
    const auto cat = static_cast<std::size_t>(op.category);
    auto credit = [&](int g) {
      raw[static_cast<std::size_t>(g)][cat].push_back(span);
      if (op.kind == OpKind::COMPUTE && op.step >= first_step && op.step <= last_step) {
        GpuBusy& b = out[static_cast<std::size_t>(g)];
        b.hardware_flops += op.flops;
        const double took = span.second - span.first;
        if (op.category == Category::OPTIMIZER) {
          b.optimizer_kernel_s += took;
        } else if (op.category == Category::COMPUTE) {
          const double scale = op.seconds > 0 ? took / op.seconds : 0;
          b.gemm_kernel_s += op.gemm_seconds * scale;
          b.attention_kernel_s += op.attention_seconds * scale;
          b.other_kernel_s += took - (op.gemm_seconds + op.attention_seconds + op.gap_seconds) * scale;
        } else if (op.category == Category::COMMUNICATION) {
          // A kernel on the collective stream (the trainsim reference's shard casts and copies,
          // data_parallel_lowering.cpp): a trace names it an elementwise kernel, not NCCL's.
          b.other_kernel_s += took;
        }
      }
    };
    if (!op.participants.empty()) {
      for (int g : op.participants) credit(g);
    } else if (op.gpu >= 0) {
      credit(op.gpu);
    }
  }
  // Call spans (GpuBusy::call_span_*): per call, when its host starts issuing it, its first GPU
  // op, when its last GPU op ends.
  struct Call {
    double host_start = -1;
    OpId first = GraphBuilder::NONE;
    double end = 0;
    int gpu = -1;
    bool optimizer = false;
  };
  std::vector<Call> calls;
  for (std::size_t v = 0; v < boost::num_vertices(graph); ++v) {
    const Op& op = graph[v];
    if (op.action < 0 || op.gpu < 0) continue;
    if (calls.size() <= static_cast<std::size_t>(op.action)) calls.resize(static_cast<std::size_t>(op.action) + 1);
    Call& c = calls[static_cast<std::size_t>(op.action)];
    const auto& t = replay.timing[v];
    if (op.stream == Stream::HOST) {
      c.host_start = c.host_start < 0 ? t.start : std::min(c.host_start, t.start);
      continue;
    }
    if (c.first == GraphBuilder::NONE) c.first = v;  // ops are added in stream order
    c.end = std::max(c.end, t.end);
    c.gpu = op.gpu;
    c.optimizer = c.optimizer || op.category == Category::OPTIMIZER;
  }
  std::vector<std::array<std::vector<Interval>, 2>> spans(static_cast<std::size_t>(gpus));
  for (const Call& c : calls) {
    if (c.first == GraphBuilder::NONE || c.gpu < 0 || c.gpu >= gpus) continue;
    double start = replay.timing[c.first].start;
    if (c.host_start >= 0) {
      // The call's start event is queued when the host begins the call and passes on the stream
      // once the stream's earlier work and the waits queued before it are done.
      double ready = 0;
      for (const auto& e : boost::make_iterator_range(boost::in_edges(c.first, graph))) {
        const OpId src = boost::source(e, graph);
        if (graph[src].stream != Stream::HOST) ready = std::max(ready, replay.timing[src].end);
      }
      start = std::max(c.host_start, ready);
    }
    spans[static_cast<std::size_t>(c.gpu)][c.optimizer ? 1 : 0].push_back({start, c.end});
  }
  for (int g = 0; g < gpus; ++g) {
    auto& s = spans[static_cast<std::size_t>(g)];
    const auto compute = normalize(s[0], from, to);
    out[static_cast<std::size_t>(g)].call_span_compute_s = length(compute);
    out[static_cast<std::size_t>(g)].call_span_optimizer_s = length(subtract(normalize(s[1], from, to), compute));
  }
  for (int g = 0; g < gpus; ++g) {
    auto& r = raw[static_cast<std::size_t>(g)];
    auto& busy = out[static_cast<std::size_t>(g)];
    const auto compute = normalize(r[static_cast<std::size_t>(Category::COMPUTE)], from, to);
    const auto comm = subtract(normalize(r[static_cast<std::size_t>(Category::COMMUNICATION)], from, to), compute);
    const auto covered = merge(compute, comm, from, to);
    const auto io = subtract(normalize(r[static_cast<std::size_t>(Category::OFFLOAD_IO)], from, to), covered);
    const auto covered2 = merge(covered, io, from, to);
    const auto opt = subtract(normalize(r[static_cast<std::size_t>(Category::OPTIMIZER)], from, to), covered2);
    busy.compute_s = length(compute);
    busy.exposed_communication_s = length(comm);
    busy.exposed_offload_io_s = length(io);
    busy.optimizer_s = length(opt);
    // Idle is measured, not the remainder: the step minus every interval any op of this GPU runs
    // (so a test that the categories add up to the step can fail).
    std::vector<Interval> all;
    for (const auto& cat : r) all.insert(all.end(), cat.begin(), cat.end());
    busy.idle_s = length(subtract({{from, to}}, normalize(std::move(all), from, to)));
  }
  return out;
}

}  // namespace trainsim::sim
