#pragma once
// Host dispatch: an eager training stack's CPU thread launches every kernel, so a GPU op cannot
// start before the host has issued it. Each compute instruction gets the host time its stack
// spends issuing it (per layer pass, per micro-batch, per optimizer step, as calibrated per
// stack in calibration.host_dispatch, calibrate/scripts/torch_stack_dispatch.py); the lowering
// replays these as a host stream that runs ahead of the GPU and feeds its compute stream
// (sim/lowering/interpreter.cpp). Steps with little GPU work per launch (small batches, many small
// operators) become bound by the host, as they are.

#include <string>
#include <vector>

#include "cluster_profile.hpp"
#include "program.hpp"
#include "strategy.hpp"

namespace trainsim::sim {

// The calibrated entry of a strategy's stack ("pytorch-fsdp:zero3", ...), or none.
const hw::StackDispatch* stack_dispatch(const wl::Strategy& s, const hw::ClusterProfile& profile);
std::string stack_dispatch_key(const wl::Strategy& s);

// Sets host_seconds on the compute instructions of `programs`; says what it applied in `notes`.
void assign_host_dispatch(ProgramSet& programs, const wl::Strategy& s, const hw::ClusterProfile& profile,
                          int transformer_layers, int micro_batches, std::vector<std::string>& notes);

}  // namespace trainsim::sim
