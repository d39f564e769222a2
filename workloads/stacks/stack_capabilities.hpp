#pragma once
// What each training stack runs (workloads/stacks/training_stacks.md, each framework's own code): one
// predicate that `simulate` turns into an error naming the flag (strategy_resolve.cpp) and that the
// planner uses to search only what the user's framework can run (planner/framework.hpp).

#include <optional>
#include <string>

#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::wl {

struct StackRefusal {
  std::string expected;  // "tp = 1 (no tensor parallelism in plain PyTorch) for stack pytorch-ddp"
  std::string got;       // "tp 8"
};

// Why `s.stack` cannot run `s` on `m`, or nullopt when it can. `raw`: the model is a bare parameter count.
std::optional<StackRefusal> stack_cannot_run(const Strategy& s, const ModelSpec& m);

}  // namespace trainsim::wl
