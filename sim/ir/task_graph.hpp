#pragma once
// The task-graph IR the replay engine runs: typed operations with dependencies (Boost.Graph),
// on the simulated GPUs and nodes (placement.hpp says which ranks those are and what they stand
// for). Built by the interpreter (lowering/interpreter.cpp) from programs. No SimGrid here.

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trainsim::sim {

enum class OpKind : std::uint8_t { COMPUTE, COLLECTIVE, TRANSFER, COPY_H2D, COPY_D2H, STORAGE_READ, STORAGE_WRITE, CPU, DELAY };
// What a GPU is doing while the op runs, for the busy-time breakdown.
enum class Category : std::uint8_t { COMPUTE, COMMUNICATION, OFFLOAD_IO, OPTIMIZER };
// Streams serialize: ops on one GPU's stream run in insertion order (CUDA stream semantics).
// HOST: the CPU thread of a GPU's rank that issues its kernels (host dispatch).
enum class Stream : std::uint8_t { COMPUTE, COMM, H2D, D2H, NODE, HOST };
enum class CollectiveKind : std::uint8_t { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST };
// Where bytes live for the memory timeline.
enum class MemClass : std::uint8_t { PARAMS, GRADS, OPTIMIZER, ACTIVATIONS, CHECKPOINTS, GATHERED, BUCKETS, LOGITS, STAGING };
inline constexpr int MEM_CLASSES = 9;

std::string_view to_string(OpKind k);
std::string_view to_string(Category c);
std::string_view to_string(CollectiveKind k);
std::string_view to_string(MemClass c);

// A memory device: a simulated GPU, or the host memory or storage of a simulated node (by the
// node's position among the simulated nodes).
struct Device {
  enum class Kind { GPU, HOST, STORAGE } kind = Kind::GPU;
  int index = 0;
  static Device gpu(int g) { return {Kind::GPU, g}; }
  static Device host(int node = 0) { return {Kind::HOST, node}; }
  static Device storage(int node = 0) { return {Kind::STORAGE, node}; }
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
  int gpu = -1;                  // simulated GPU (copies, storage, CPU work: whose route); -1 for collectives
  std::vector<int> participants; // collectives: simulated GPUs taking part
  double seconds = 0;            // COMPUTE, DELAY
  double bytes = 0;              // copies, storage, collectives (the collective's buffer size)
  double params = 0;             // CPU optimizer work, in parameters
  double flops = 0;              // hardware FLOPs done (for TFLOP/s accounting)
  // COMPUTE: of `seconds`, the GEMMs' and attention's kernels and the gaps between kernels as
  // costed (the rest: memory-bound kernels); metrics.cpp scales them to the time the op took.
  double gemm_seconds = 0, attention_seconds = 0, gap_seconds = 0;
  CollectiveKind collective = CollectiveKind::ALL_REDUCE;
  int ring = -1;                 // platform ring (group) of a collective
  int group_size = 0;            // ranks in the collective across all nodes
  int transfer = -1;             // TRANSFER: platform route from `gpu` to `peer`
  int peer = -1;                 // TRANSFER: the receiving simulated GPU
  double latency_s = 0;          // COLLECTIVE, TRANSFER: run before the bytes move
  const char* name = "";
  int layer = -1;
  int micro_batch = -1;
  int step = 0;
  // The stack call this op's work belongs to (COMPUTE instructions and their host dispatch): one
  // pass of one micro-batch and chunk (a pipeline stage's forward_one_chunk or backward_one_chunk,
  // recompute inside the backward), or one optimizer step; numbered per graph by the interpreter.
  // -1: none. metrics.cpp measures each call's span from it.
  int action = -1;
  std::vector<MemEvent> memory;
};

// Edges in one vector (the last vecS; boost's default is a list, one allocation per edge): the
// graph only ever grows, so nothing depends on a list's stable iterators.
using TaskGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Op, boost::no_property, boost::no_property,
                                        boost::vecS>;
using OpId = TaskGraph::vertex_descriptor;

// Builds a graph while keeping each GPU stream's order: adding an op makes it depend on the
// previous op of the same (GPU, stream), plus the dependencies given.
class GraphBuilder {
 public:
  explicit GraphBuilder(int gpus)
      : graph_(std::make_unique<TaskGraph>()), last_(static_cast<std::size_t>(gpus) * STREAMS, NONE) {}

  OpId add(Op op, std::initializer_list<OpId> deps = {});
  OpId add(Op op, const std::vector<OpId>& deps);
  // Puts an op made earlier next in line on `gpu`'s `stream` too (a collective joined by another
  // member).
  void chain_existing(OpId id, int gpu, Stream stream) { chain(id, gpu, stream); }
  TaskGraph& graph() { return *graph_; }
  // Boost's adjacency_list has no move constructor: the graph is handed over by pointer, never
  // copied (a copy of a million-op graph cost a tenth of the replay).
  std::unique_ptr<TaskGraph> take() { return std::move(graph_); }
  // Room for `ops` ops, so that adding them never moves the ones already added.
  void reserve(std::size_t ops) { graph_->m_vertices.reserve(ops); }

  static constexpr OpId NONE = static_cast<OpId>(-1);

 private:
  static constexpr std::size_t STREAMS = 6;  // COMPUTE, COMM, H2D, D2H and HOST are per GPU (NODE is not)
  void chain(OpId id, int gpu, Stream stream);
  OpId add_with_deps(Op&& op, const OpId* first, const OpId* last);
  std::unique_ptr<TaskGraph> graph_;
  std::vector<OpId> last_;
};

}  // namespace trainsim::sim
