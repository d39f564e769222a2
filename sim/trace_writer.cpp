#include "trace_writer.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace trainsim::sim {
namespace {

constexpr int HOST_PID = 100000, STORAGE_PID = 200000, FABRIC_PID = 300000;
constexpr int SEND_TID = 5, RECV_TID = 6;

// Microseconds with nanosecond resolution, printed the same way every time.
double us(double seconds) { return std::round(seconds * 1e9) / 1e3; }

int stream_tid(Stream s) {
  switch (s) {
    case Stream::COMPUTE: return 0;
    case Stream::COMM: return 1;
    case Stream::H2D: return 2;
    case Stream::D2H: return 3;
    case Stream::NODE: return 4;
    case Stream::HOST: return 7;
  }
  return 4;
}

std::string label(const Op& op) {
  std::string s = op.name;
  if (op.layer >= 0) s += fmt::format(" L{}", op.layer);
  if (op.micro_batch >= 0) s += fmt::format(" mb{}", op.micro_batch);
  if (op.step > 0) s += fmt::format(" step{}", op.step);
  return s;
}

}  // namespace

std::string chrome_trace(const TaskGraph& graph, const ReplayResult& replay, const MemoryTimeline& memory,
                         const LoweredPrograms& lowered, const std::string& title) {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  auto meta = [&](const char* what, int pid, int tid, const std::string& name) {
    nlohmann::ordered_json e{{"name", what}, {"ph", "M"}, {"pid", pid}};
    if (tid >= 0) e["tid"] = tid;
    e["args"] = {{"name", name}};
    events.push_back(e);
  };
  const int gpus = static_cast<int>(lowered.gpus.size());
  for (int g = 0; g < gpus; ++g) {
    const SimulatedGpu& sg = lowered.gpus[static_cast<std::size_t>(g)];
    const ExplicitRank& e = sg.rank;
    meta("process_name", g, -1,
         fmt::format("stage {} (node {}, GPU {}){}", e.coord.pp, e.location.node, e.location.gpu,
                     e.copies > 1 ? fmt::format(", for {} ranks", e.copies) : std::string()));
    meta("process_sort_index", g, -1, std::to_string(g));
    meta("thread_name", g, 0, "compute");
    meta("thread_name", g, 1, "communication (NCCL)");
    meta("thread_name", g, 2, "copy host->device");
    meta("thread_name", g, 3, "copy device->host");
    meta("thread_name", g, 4, "host and storage work");
    meta("thread_name", g, SEND_TID, "pipeline sends");
    meta("thread_name", g, RECV_TID, "pipeline receives");
  }
  for (int n = 0; n < lowered.simulated_nodes; ++n) {
    meta("process_name", HOST_PID + n, -1, fmt::format("node {} host", n));
    meta("process_name", STORAGE_PID + n, -1, fmt::format("node {} storage", n));
  }
  meta("process_name", FABRIC_PID, -1, "fabric (rings)");
  auto span = [&](const std::string& name, const Op& op, std::size_t v, int pid, int tid) {
    nlohmann::ordered_json e{{"name", name}, {"cat", std::string(to_string(op.category))}, {"ph", "X"},
                             {"ts", us(replay.timing[v].start)}, {"dur", us(replay.timing[v].end - replay.timing[v].start)},
                             {"pid", pid}, {"tid", tid}};
    nlohmann::ordered_json args;
    if (op.bytes > 0) args["bytes"] = op.bytes;
    if (op.params > 0) args["params"] = op.params;
    if (op.flops > 0) args["flops"] = op.flops;
    if (op.kind == OpKind::COLLECTIVE) {
      args["collective"] = std::string(to_string(op.collective));
      args["ranks"] = op.group_size;
    }
    if (!args.empty()) e["args"] = args;
    events.push_back(e);
  };
  auto node_of = [&](int g) { return lowered.gpus[static_cast<std::size_t>(g)].node_index; };
  int flow = 0;
  for (std::size_t v = 0; v < boost::num_vertices(graph); ++v) {
    const Op& op = graph[v];
    const std::string name = label(op);
    switch (op.kind) {
      case OpKind::COMPUTE: span(name, op, v, op.gpu, 0); break;
      case OpKind::COLLECTIVE:
        for (int g : op.participants) span(name, op, v, g, stream_tid(op.stream) == 0 ? 0 : 1);
        span(name, op, v, FABRIC_PID, op.ring);
        break;
      case OpKind::TRANSFER: {
        span(name, op, v, op.gpu, SEND_TID);
        span(name, op, v, op.peer, RECV_TID);
        // A flow arrow from the send to the receive.
        const double start = us(replay.timing[v].start), end = us(replay.timing[v].end);
        events.push_back({{"name", name}, {"cat", "pipeline"}, {"ph", "s"}, {"id", flow}, {"ts", start},
                          {"pid", op.gpu}, {"tid", SEND_TID}});
        events.push_back({{"name", name}, {"cat", "pipeline"}, {"ph", "f"}, {"bp", "e"}, {"id", flow}, {"ts", end},
                          {"pid", op.peer}, {"tid", RECV_TID}});
        ++flow;
        break;
      }
      case OpKind::COPY_H2D:
      case OpKind::COPY_D2H: span(name, op, v, op.gpu, stream_tid(op.stream)); break;
      case OpKind::STORAGE_READ:
      case OpKind::STORAGE_WRITE: span(name, op, v, STORAGE_PID + node_of(op.gpu), op.gpu); break;
      case OpKind::CPU: span(name, op, v, HOST_PID + node_of(op.gpu), op.gpu); break;
      case OpKind::DELAY: break;
    }
  }
  auto counter = [&](int pid, const DeviceMemory& d) {
    for (const auto& s : d.samples) {
      events.push_back({{"name", "memory GiB"}, {"ph", "C"}, {"ts", us(s.time)}, {"pid", pid},
                        {"args", {{"GiB", std::round(s.bytes / 1073741824.0 * 1e6) / 1e6}}}});
    }
  };
  for (int g = 0; g < gpus; ++g) counter(g, memory.gpus[static_cast<std::size_t>(g)]);
  for (int n = 0; n < lowered.simulated_nodes; ++n) {
    counter(HOST_PID + n, memory.hosts[static_cast<std::size_t>(n)]);
    counter(STORAGE_PID + n, memory.storages[static_cast<std::size_t>(n)]);
  }
  nlohmann::ordered_json doc;
  doc["traceEvents"] = events;
  doc["displayTimeUnit"] = "ms";
  doc["otherData"] = {{"title", title}, {"generator", "trainsim"}};
  return doc.dump() + "\n";
}

}  // namespace trainsim::sim
