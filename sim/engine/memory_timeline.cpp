#include "memory_timeline.hpp"

#include <algorithm>

#include "reserved_memory.hpp"

namespace trainsim::sim {
namespace {

struct Event {
  double time;
  double bytes;
  MemClass cls;
};

void fold(DeviceMemory& d, std::vector<Event>& events) {
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return applies_before(a.time, a.bytes, b.time, b.bytes); });
  double level = 0;
  std::array<double, MEM_CLASSES> by_class{};
  d.peak_bytes = level;
  d.samples.push_back({0.0, level});
  for (const Event& e : events) {
    level += e.bytes;
    by_class[static_cast<std::size_t>(e.cls)] += e.bytes;
    if (!d.samples.empty() && d.samples.back().time == e.time) d.samples.back().bytes = level;
    else d.samples.push_back({e.time, level});
    if (level > d.peak_bytes) {
      d.peak_bytes = level;
      d.peak_time = e.time;
      d.at_peak = by_class;
    }
  }
}

}  // namespace

double DeviceMemory::resident_at_peak() const {
  return at_peak[static_cast<std::size_t>(MemClass::PARAMS)] + at_peak[static_cast<std::size_t>(MemClass::GRADS)] +
         at_peak[static_cast<std::size_t>(MemClass::OPTIMIZER)] + at_peak[static_cast<std::size_t>(MemClass::BUCKETS)];
}

MemoryTimeline build_memory_timeline(const TaskGraph& graph, const ReplayResult& replay, int gpus, int nodes) {
  std::vector<std::vector<Event>> gpu_events(static_cast<std::size_t>(gpus));
  std::vector<std::vector<AllocatorEvent>> gpu_requests(static_cast<std::size_t>(gpus));
  std::vector<std::vector<Event>> host_events(static_cast<std::size_t>(nodes)), storage_events(static_cast<std::size_t>(nodes));
  for (std::size_t v = 0; v < boost::num_vertices(graph); ++v) {
    const Op& op = graph[v];
    for (const MemEvent& e : op.memory) {
      const double t = e.at_end ? replay.timing[v].end : replay.timing[v].start;
      const Event ev{t, e.bytes, e.cls};
      const auto i = static_cast<std::size_t>(e.device.index);
      switch (e.device.kind) {
        case Device::Kind::GPU:
          gpu_events[i].push_back(ev);
          gpu_requests[i].push_back({t, e.bytes, e.cls, op.stream});
          break;
        case Device::Kind::HOST: host_events[i].push_back(ev); break;
        case Device::Kind::STORAGE: storage_events[i].push_back(ev); break;
      }
    }
  }
  MemoryTimeline out;
  out.gpus.resize(static_cast<std::size_t>(gpus));
  out.hosts.resize(static_cast<std::size_t>(nodes));
  out.storages.resize(static_cast<std::size_t>(nodes));
  for (int g = 0; g < gpus; ++g) {
    const auto i = static_cast<std::size_t>(g);
    fold(out.gpus[i], gpu_events[i]);
    out.gpus[i].reserved_peak_bytes = caching_allocator_reserved_peak(std::move(gpu_requests[i]));
  }
  for (int n = 0; n < nodes; ++n) {
    fold(out.hosts[static_cast<std::size_t>(n)], host_events[static_cast<std::size_t>(n)]);
    fold(out.storages[static_cast<std::size_t>(n)], storage_events[static_cast<std::size_t>(n)]);
  }
  return out;
}

}  // namespace trainsim::sim
