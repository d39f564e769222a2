#include "memory_timeline.hpp"

#include <algorithm>

namespace trainsim::sim {
namespace {

struct Event {
  double time;
  double bytes;
  MemClass cls;
};

void fold(DeviceMemory& d, std::vector<Event>& events) {
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    return a.bytes < b.bytes;  // frees first
  });
  double level = d.baseline_bytes;
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

MemoryTimeline build_memory_timeline(const TaskGraph& graph, const ReplayResult& replay, int gpus,
                                     const std::vector<double>& gpu_baseline, double host_baseline,
                                     double storage_baseline) {
  std::vector<std::vector<Event>> gpu_events(static_cast<std::size_t>(gpus));
  std::vector<Event> host_events, storage_events;
  for (std::size_t v = 0; v < boost::num_vertices(graph); ++v) {
    const Op& op = graph[v];
    for (const MemEvent& e : op.memory) {
      const double t = e.at_end ? replay.timing[v].end : replay.timing[v].start;
      const Event ev{t, e.bytes, e.cls};
      switch (e.device.kind) {
        case Device::Kind::GPU: gpu_events[static_cast<std::size_t>(e.device.index)].push_back(ev); break;
        case Device::Kind::HOST: host_events.push_back(ev); break;
        case Device::Kind::STORAGE: storage_events.push_back(ev); break;
      }
    }
  }
  MemoryTimeline out;
  out.gpus.resize(static_cast<std::size_t>(gpus));
  for (int g = 0; g < gpus; ++g) {
    out.gpus[static_cast<std::size_t>(g)].baseline_bytes = gpu_baseline[static_cast<std::size_t>(g)];
    fold(out.gpus[static_cast<std::size_t>(g)], gpu_events[static_cast<std::size_t>(g)]);
  }
  out.host.baseline_bytes = host_baseline;
  fold(out.host, host_events);
  out.storage.baseline_bytes = storage_baseline;
  fold(out.storage, storage_events);
  return out;
}

}  // namespace trainsim::sim
