#pragma once
// `trainsim-calibrate reference ...`: the command line of the reference training step (issue 11).
// Strict like the rest of the tool: every problem is a UsageError naming the flag (exit 2).

#include <string>
#include <vector>

#include "gpt_layout.hpp"

namespace trainsim::calibrate::ref {

// SINGLE: one GPU; ZERO3: ZeRO-3 over the GPUs; OFFLOAD: ZeRO-Infinity with the CPU tier
// ("infinity"); GPIPE, ONE_F_ONE_B: the layers split over the GPUs as pipeline stages.
enum class RefMode { SINGLE, ZERO3, OFFLOAD, GPIPE, ONE_F_ONE_B };
inline bool is_pipeline(RefMode m) { return m == RefMode::GPIPE || m == RefMode::ONE_F_ONE_B; }
enum class Recompute { NONE, LAYER };
// Where --recompute layer keeps each layer's input: on the GPU, or in pinned host memory, copied
// out after the layer's forward and back one layer ahead of its recompute
// (calibrate/cuda/ref_checkpoints.hpp; the strategy's offload_activations "cpu").
enum class Checkpoints { GPU, HOST };

struct ReferenceOptions {
  GptConfig model{24, 1024, 16, 50304, 2048, 4};
  RefMode mode = RefMode::SINGLE;
  Recompute recompute = Recompute::NONE;
  Checkpoints checkpoints = Checkpoints::GPU;
  int gpus = 1;
  int cpu_threads = 0;      // CPU-Adam threads per rank under infinity (0: logical CPUs / gpus)
  std::string storage_dir;  // --storage-dir: infinity's optimizer states on storage (empty: host memory)
  // --storage-probe-chunks: before each timed step every rank streams this many chunks of its
  // state file through the step's read/write pattern, unchanged (StorageStates::probe_stream;
  // 0: none). A calibration of the disk beside each step, outside the step's timing.
  int storage_probe_chunks = 0;
  int grad_accum = 1;
  int steps = 5;
  int warmup = 2;
  double lr = 1e-4;
  bool check = false;       // --check: the correctness suite at a small size instead of a measured run
  std::string out_dir;      // --out
  std::string name;         // --name (default: derived from the configuration)
  std::string command_line;
};

ReferenceOptions parse_reference_options(const std::vector<std::string>& args);  // args after "reference"
std::string reference_usage();
// Chunks of STATE_CHUNK_PARAMS in one rank's state file under --storage-dir (its shard, padding included).
int state_file_chunks(const ReferenceOptions& o);
// e.g. "zero3_L24-h1024_mb4x2": the run's name when --name is not given.
std::string default_run_name(const ReferenceOptions& o);
std::string to_string(RefMode m);
std::string to_string(Recompute r);
std::string to_string(Checkpoints c);

}  // namespace trainsim::calibrate::ref
