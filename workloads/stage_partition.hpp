#pragma once
// Which transformer layers each pipeline stage runs. Virtual stage vs = chunk * p + stage holds a
// contiguous range of layers; the embedding runs on virtual stage 0, the head and the loss on the
// last (Megatron-LM). Layers need not divide evenly: by default the partition balances the cost
// of each virtual stage, measured in FLOPs of the forward and backward (the embedding's and the
// head's counted on theirs), which keeps the memory model and the simulator on one partition
// without hardware; Megatron's --decoder-first-pipeline-num-layers / --decoder-last-pipeline-
// num-layers (the strategy's first_stage_layers, last_stage_layers) fix the first and last stage,
// the rest split evenly.

#include <string>
#include <vector>

#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::wl {

struct StagePartition {
  int stages = 1;
  int chunks = 1;
  std::vector<int> layers;  // per virtual stage
  bool balanced_by_cost = false;

  int virtual_stages() const { return stages * chunks; }
  int first_layer(int vs) const;
  int layer_count(int vs) const { return layers[static_cast<std::size_t>(vs)]; }
  // Layers of a device (all its chunks).
  int stage_layers(int stage) const;
  // "16 stages x 2 chunks: 3, 4, 4, ..., 4, 3 layers (balanced by cost)".
  std::string describe() const;
};

// Throws ConfigError naming the strategy field when the layers cannot be split as asked.
StagePartition partition_stages(const ModelSpec& m, const Strategy& s);

}  // namespace trainsim::wl
