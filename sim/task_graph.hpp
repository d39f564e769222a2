#pragma once
// The task-graph IR the replay engine runs: typed operations with dependencies (Boost.Graph).
// A graph describes one representative node of the cluster: its GPUs, its host CPU and memory,
// its storage; work of other nodes is folded by symmetry (see platform.hpp). No SimGrid here.

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::sim {

enum class OpKind { COMPUTE, COLLECTIVE, COPY_H2D, COPY_D2H, STORAGE_READ, STORAGE_WRITE, CPU, DELAY };
// What a GPU is doing while the op runs, for the busy-time breakdown.
enum class Category { COMPUTE, COMMUNICATION, OFFLOAD_IO, OPTIMIZER };
// Streams serialize: ops on one GPU's stream run in insertion order (CUDA stream semantics).
enum class Stream { COMPUTE, COMM, H2D, D2H, NODE };
enum class CollectiveKind { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST };
// Where bytes live for the memory timeline.
enum class MemClass { PARAMS, GRADS, OPTIMIZER, ACTIVATIONS, CHECKPOINTS, GATHERED, BUCKETS, LOGITS, STAGING };
inline constexpr int MEM_CLASSES = 9;

std::string_view to_string(OpKind k);
std::string_view to_string(Category c);
std::string_view to_string(CollectiveKind k);
std::string_view to_string(MemClass c);

// A memory device of the representative node: GPU 0..G-1, then the host, then storage.
struct Device {
  enum class Kind { GPU, HOST, STORAGE } kind = Kind::GPU;
  int index = 0;
  static Device gpu(int g) { return {Kind::GPU, g}; }
  static Device host() { return {Kind::HOST, 0}; }
  static Device storage() { return {Kind::STORAGE, 0}; }
};

struct MemEvent {
  Device device;
  MemClass cls = MemClass::PARAMS;
  double bytes = 0;       // + allocate, - free
  bool at_end = false;    // applied when the op ends (default: when it starts)
};

struct Op {
  OpKind kind = OpKind::COMPUTE;
  Category category = Category::COMPUTE;
  Stream stream = Stream::COMPUTE;
  int gpu = -1;                  // local GPU; -1 for node-level ops (collectives, CPU, storage)
  std::vector<int> participants; // collectives: local GPUs taking part
  double seconds = 0;            // COMPUTE, DELAY
  double bytes = 0;              // copies, storage, collectives (the collective's buffer size)
  double params = 0;             // CPU optimizer work, in parameters
  double flops = 0;              // hardware FLOPs done (for TFLOP/s accounting)
  CollectiveKind collective = CollectiveKind::ALL_REDUCE;
  int ring = -1;                 // platform ring (group) of a collective
  int group_size = 0;            // ranks in the collective across all nodes
  const char* name = "";
  int layer = -1;
  int micro_batch = -1;
  int step = 0;
  std::vector<MemEvent> memory;
};

using TaskGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Op>;
using OpId = TaskGraph::vertex_descriptor;

// Builds a graph while keeping each GPU stream's order: adding an op makes it depend on the
// previous op of the same (GPU, stream), plus the dependencies given.
class GraphBuilder {
 public:
  explicit GraphBuilder(int gpus) : last_(static_cast<std::size_t>(gpus) * STREAMS, NONE) {}

  OpId add(Op op, std::initializer_list<OpId> deps = {});
  OpId add(Op op, const std::vector<OpId>& deps);
  TaskGraph& graph() { return graph_; }
  TaskGraph take() { return std::move(graph_); }

  static constexpr OpId NONE = static_cast<OpId>(-1);

 private:
  static constexpr std::size_t STREAMS = 4;  // COMPUTE, COMM, H2D, D2H are per GPU
  void chain(OpId id, int gpu, Stream stream);
  TaskGraph graph_;
  std::vector<OpId> last_;
};

}  // namespace trainsim::sim
