#pragma once
// calibration.torch_offload: PyTorch's CPU offload path (FSDP2's CPUOffloadPolicy) as measured by
// calibrate/scripts/torch_offload_bench.py and merged by calibrate/scripts/merge_offload_calibration.py
// (schema: hwprofiles/README.md, "torch_offload"). Read and written beside the rest of `calibration`.

#include <nlohmann/json.hpp>
#include <string_view>

#include "cluster_profile.hpp"
#include "strict_json.hpp"

namespace trainsim::hw {

// The section's object: {"curves": [{"what", "gpus", "points": [{"bytes", "GBps"}]}],
// "adamw": [{"processes", "threads_per_process", "params_per_s_per_process", optional
// "seconds_per_tensor": [{"elements", "seconds"}]}], "source"}.
// Names outside TORCH_OFFLOAD_CURVES, sizes not ascending, a repeated (what, gpus) or processes
// are ConfigErrors naming the key.
TorchOffload read_torch_offload(StrictObject o);
nlohmann::ordered_json torch_offload_to_json(const TorchOffload& t);

// The curve `what` measured with the number of GPUs closest to `gpus` (fewer on a tie); nullptr
// when the section has none of that name.
const BandwidthCurve* torch_offload_curve(const TorchOffload& t, std::string_view what, int gpus);
// The AdamW run with the process count closest to `processes` (fewer on a tie); nullptr if none.
const CpuOptimizerRate* torch_offload_adamw(const TorchOffload& t, int processes);

}  // namespace trainsim::hw
