#pragma once
// One rank of the reference step: its GPU, streams, arena, parameter store and model, run for a
// number of steps; and the launcher that runs N ranks on N GPUs (one thread each, one NCCL
// communicator each from ncclCommInitAll) and returns their outcomes.

#include <cstdint>
#include <string>
#include <vector>

#include "../reference/gpt_layout.hpp"
#include "../reference/reference_options.hpp"
#include "../reference/reference_result.hpp"

namespace trainsim::calibrate::ref {

struct RankJob {
  GptConfig model;
  bool recompute = false;
  bool offload = false;  // ZeRO-Infinity's CPU tier
  bool host_checkpoints = false;  // with recompute: layer inputs in host memory (ref_checkpoints.hpp)
  int pipeline = 0;      // 0 none, 1 GPipe, 2 1F1B (ref_pipeline.hpp)
  int cpu_threads = 1;
  std::string storage_dir;  // with offload: the optimizer states on storage
  int storage_probe_chunks = 0;  // with storage_dir: probe this many chunks before each timed step
  int grad_accum = 1;
  int warmup = 0, steps = 1;
  double lr = 1e-4;
  bool capture_grads = false;  // copy the gradient shard after the first step
  // Batches per rank and micro-batch: batches[rank][mb % size].
  std::vector<std::vector<Batch>> batches;
};

struct RankOutcome {
  RankMeasurement measurement;
  std::vector<double> losses;      // every step, this rank's mean over its micro-batches
  std::vector<float> grad_shard;   // with capture_grads: the shard after step 1 (full flat with one rank)
};

std::vector<RankOutcome> run_ranks(const RankJob& job, int world);

}  // namespace trainsim::calibrate::ref
