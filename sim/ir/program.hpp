#pragma once
// The program IR: what one rank does in a training step, as typed instructions that carry their
// whole meaning. A program is built once per distinct rank role (a pipeline stage; every rank of
// the data-parallel family shares one) by a builder that reads the strategy; the lowering
// (sim/lowering/interpreter.cpp) turns programs into task-graph ops without ever asking which
// strategy it is lowering, the way DeepSpeed's pipeline engine dispatches instruction types to
// handlers.
//
// Costs are resolved when the program is built (seconds and FLOPs of a compute, bytes of a
// transfer, parameters of an optimizer step), so the interpreter is mechanical: which resource,
// how much work, after what.

#include <cstdint>
#include <string>
#include <vector>

#include "small_vector.hpp"
#include "task_graph.hpp"

namespace trainsim::sim {

// Where bytes live and move: a GPU's memory, its node's host memory, its node's storage.
enum class Tier : std::uint8_t { GPU, HOST, STORAGE };
// The dtype a collective or transfer carries (for traces and bandwidth curves).
enum class Dtype : std::uint8_t { FP16, BF16, FP32 };
// Communication groups of a rank, defined by the placement (sim/engine/placement.hpp).
enum class GroupKind : std::uint8_t { TENSOR, DATA, PIPELINE, EMBEDDING };
enum class ComputePass : std::uint8_t { FORWARD, BACKWARD, RECOMPUTE, OPTIMIZER, OTHER };

std::string_view to_string(Tier t);
std::string_view to_string(Dtype d);
std::string_view to_string(GroupKind g);
std::string_view to_string(ComputePass p);

enum class InstrKind : std::uint8_t {
  COMPUTE,     // GPU kernels: `seconds` on the rank's compute stream, `flops` of hardware work
  HOST_COMPUTE,  // CPU work on the rank's node: `params` parameters through CPU-Adam
  COLLECTIVE,  // `collective` over the rank's `group`, `bytes` per rank (the buffer), `dtype`
  SEND,        // `bytes` to the rank of pipeline stage `peer_stage` (same tensor and data index)
  RECV,        // the matching receive: completes when the SEND with the same `tag` has arrived
  COPY,        // `bytes` from tier `from` to tier `to` (fetch, offload, checkpoint, update)
  MEMORY,      // no work: only the memory effects (allocations of model states, frees)
};
std::string_view to_string(InstrKind k);

// An allocation (+bytes) or free (-bytes) of a tensor class on a tier of the rank: its GPU, or its
// node's host memory or storage. Applied when the instruction starts, or when it ends.
struct MemEffect {
  Tier tier = Tier::GPU;
  MemClass cls = MemClass::PARAMS;
  double bytes = 0;
  bool at_end = false;
};

// An instruction's dependencies (instructions of the same program) and memory effects: one to
// three and none to two, mostly, kept inline (small_vector.hpp).
using Deps = SmallVector<int, 3>;
using MemEffects = SmallVector<MemEffect, 2>;

struct Instruction {
  // Fields widest first (doubles, then ints, then one-byte enums): a walk of the planner builds
  // tens of thousands of these per candidate.
  const char* name = "";            // for traces: "forward", "tp_allreduce", "send_activation", ...
  // Payload (the fields of this kind; others stay at their defaults).
  double seconds = 0;               // COMPUTE
  double flops = 0;                 // COMPUTE
  double gemm_seconds = 0;          // COMPUTE: of `seconds`, the GEMMs' (unit_costs.hpp, Segment)
  double attention_seconds = 0;     // COMPUTE: of `seconds`, attention's
  double gap_seconds = 0;           // COMPUTE: of `seconds`, the GPU's gaps between its kernels
  double host_seconds = 0;          // COMPUTE: host time issuing it (host_dispatch.hpp); 0: issued at once
  double params = 0;                // HOST_COMPUTE (or `seconds` of a framework's own CPU optimizer, when set)
  double bytes = 0;                 // COLLECTIVE, SEND, RECV, COPY
  double piece_bytes = 0;           // COPY: made of tensors of this size copied one by one (0: one piece)
  std::int64_t tag = -1;            // SEND/RECV pairs; COLLECTIVE instances across roles (-1: by position)
  int peer_stage = -1;              // SEND, RECV
  int copiers = 1;                  // COPY: GPUs of the node making this copy at once (1: alone)
  // COPY (bytes) or COMPUTE (seconds): an index into Program::by_dp_rank where the amount differs
  // by data-parallel rank (-1: `bytes` or `seconds` on every rank). A program with such
  // instructions is replayed without folding its data-parallel ranks.
  int by_dp_rank = -1;
  // Labels: what the work belongs to (traces, metrics, folding).
  int layer = -1;
  int micro_batch = -1;
  int chunk = 0;
  int step = 0;
  InstrKind kind = InstrKind::COMPUTE;
  Stream stream = Stream::COMPUTE;  // stream order: same-stream instructions run in program order
  Category category = Category::COMPUTE;  // what the GPU is doing, for the busy-time breakdown
  CollectiveKind collective = CollectiveKind::ALL_REDUCE;  // COLLECTIVE
  GroupKind group = GroupKind::DATA;                       // COLLECTIVE
  Dtype dtype = Dtype::FP16;        // COLLECTIVE, SEND, RECV
  Tier from = Tier::GPU, to = Tier::GPU;  // COPY
  bool pageable = false;            // COPY: the host side is pageable memory (cost_model.hpp, copy_cap)
  ComputePass pass = ComputePass::OTHER;
  MemEffects memory;
  Deps after;                       // instructions of the same program this one waits for
};

// The instructions of one rank role, and the instructions that end each simulated step.
struct Program {
  int stage = 0;
  std::vector<Instruction> instructions;
  std::vector<std::vector<int>> step_ends;  // per step: instructions whose end is the step's end
  std::vector<std::vector<double>> by_dp_rank;  // Instruction::by_dp_rank: the amount on each data-parallel rank
};

// Schedules whose step overlaps the next (the delayed update, PipeDream, 2BW) are measured in the
// steady state, between the ends of the first and the last of STEADY_STATE_STEPS steps
// (simulator.cpp). The replay runs one trailing step after them, so that the last measured end
// meets the same contention from a step after it as the first one does; without it the last end
// came early against the first, and the measured step fell below the contention-free walk's
// (sim/critical_path.hpp). The walk omits it (sim/critical_path.cpp): every stream runs the trailing
// step after all of the measured ones, and without contention nothing later moves an earlier end.
inline constexpr int STEADY_STATE_STEPS = 3;
enum class TrailingStep { SIMULATE, OMIT };
// Steps measured in the steady state: STEADY_STATE_STEPS, after as many more as a pipeline that
// never flushes (PipeDream) needs to fill: its p stages hold p - s micro-batches in flight however
// few a step has (m), which a run of fewer than p micro-batches before the measured steps never
// reaches. The measurement spans the last STEADY_STATE_STEPS of them.
inline int measured_steps(bool steady_state, int micro_batches = 1, int stages = 1) {
  if (!steady_state) return 1;
  const int m = micro_batches > 0 ? micro_batches : 1;
  return STEADY_STATE_STEPS + (stages > m ? (stages + m - 1) / m : 0);
}
// Steps a program spans: the measured ones and the trailing step where asked.
inline int program_steps(bool steady_state, TrailingStep trailing, int micro_batches = 1, int stages = 1) {
  return measured_steps(steady_state, micro_batches, stages) + (steady_state && trailing == TrailingStep::SIMULATE ? 1 : 0);
}

// Everything the interpreter needs besides placement and platform: one program per pipeline stage
// (one in all for the data-parallel family), the steps they span, and what they say about memory
// that is resident before the first instruction.
struct ProgramSet {
  std::vector<Program> stages;
  int steps = 1;           // simulated
  int measured_steps = 1;  // the first ones; the ends of the last STEADY_STATE_STEPS of them measure the step
  // Bytes resident on each tier before the step, per rank of a stage (model states kept across
  // steps). The programs allocate them explicitly at their start; this records them for reports.
  std::vector<std::string> notes;
};

}  // namespace trainsim::sim
