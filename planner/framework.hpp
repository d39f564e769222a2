#pragma once
// The framework a plan is for (--stack, --deepspeed FILE, --megatron-args, --allow-async): the
// stack every candidate is replayed with, and which strategies the search may propose: only what
// that framework runs (workloads/stacks/stack_capabilities.hpp), agreeing with every setting its
// configuration fixes, and no asynchronous scheme (wl::asynchronous: the delayed update,
// PipeDream, 2BW change the optimizer's math) unless asked for.
//
//   idealized (default)  every strategy of the space, the papers' accounting
//   megatron             TP, PP, interleaving, SP, the distributed optimizer (ZeRO-1), recompute
//   deepspeed            ZeRO stages 0-3 and their offloads, its 1F1B pipeline engine, TP through
//                        Megatron-DeepSpeed's model parallelism, full-layer checkpointing
//   pytorch              DDP, FSDP2 (ZeRO-2/3, CPUOffloadPolicy), torch.distributed.pipelining; one
//                        of pytorch, pytorch-ddp, pytorch-fsdp, pytorch-pipelining per candidate
//   pytorch-ddp, -fsdp, -pipelining: that wrapper alone

#include <optional>
#include <string>
#include <vector>

#include "model.hpp"
#include "strategy.hpp"
#include "strategy_input.hpp"

namespace trainsim::planner {

struct FrameworkFlags {
  std::optional<std::string> stack;  // --stack
  std::string deepspeed_file;        // --deepspeed
  std::string megatron_args;         // --megatron-args
  bool allow_async = false;          // --allow-async
};

struct Framework {
  wl::TrainingStack stack;       // the stack each candidate carries (IDEALIZED: none named)
  // "--stack pytorch": the wrapper each candidate's shape is run by (stack_model.hpp).
  wl::StackKind (*wrapper_for)(const wl::Strategy&) = nullptr;
  wl::StrategyInput fixed;       // settings --deepspeed and --megatron-args fix, with their origins
  bool allow_async = false;
  std::string source;            // how the framework was named: "--stack megatron", "--deepspeed ds.json", ...
  std::vector<std::string> no_effect;  // keys of those sources that change nothing trainsim computes
  bool named() const { return !source.empty(); }
};

// Reads the flags (a ConfigError names the bad one). --deepspeed implies --stack deepspeed and
// --megatron-args --stack megatron unless --stack names another; model arguments in
// --megatron-args (--num-layers, ...) are applied to `model`.
Framework resolve_framework(const FrameworkFlags& f, wl::ModelSpec& model);

// Settings the framework fixes that belong to the question rather than to a strategy: the global
// batch (train_batch_size, --global-batch-size) and the sequence (--seq-length).
struct FixedQuestion {
  std::optional<std::int64_t> global_batch;
  std::string global_batch_origin;
  std::optional<std::int64_t> seq;
  std::string seq_origin;
};
FixedQuestion fixed_question(const Framework& f);

// The strategy as the framework runs it (its stack, its buffers), or nullopt where the framework
// cannot run it or a fixed setting disagrees. `m`: the model (stacks refuse some numerics).
std::optional<wl::Strategy> as_run_by(const Framework& f, const wl::Strategy& s, const wl::ModelSpec& m);

// "asynchronous schemes (delayed update, PipeDream, 2BW) not searched: they change the optimizer's
// math (--allow-async)" and the like, for the answer's notes.
std::vector<std::string> framework_notes(const Framework& f);

// What an asynchronous strategy changes, for every answer that ranks one: "changes the optimizer's
// math: weights updated one step late (ZeRO-Offload's delayed parameter update)"; empty otherwise.
std::string async_caveat(const wl::Strategy& s);

}  // namespace trainsim::planner
