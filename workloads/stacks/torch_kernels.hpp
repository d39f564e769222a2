#pragma once
// PyTorch's memory-bound kernels as the PyTorch stacks launch them ("torch:<kernel>"), each with the
// calibrated curves that price it: its own (calibration.kernels "torch_<kernel>",
// calibrate/scripts/torch_microbench.py, torch_layer_kernels.py and merge_fsdp_kernels.py), then,
// for a profile calibrated without it, the closest of PyTorch's other kernels. Past them the cost
// model takes the generic copy curve (sim/costs/cost_model.cpp, CostModel::kernel_seconds).

#include <string_view>

#include "layer_costs.hpp"

namespace trainsim::wl {

// `name` is one of the kernels torch_kernels.cpp lists; any other is a programming error
// (std::invalid_argument), not a user's input.
MemoryKernel torch_kernel(std::string_view name, double bytes, bool compute_stream_launch = true);

}  // namespace trainsim::wl
