// Fuzzes the Megatron-LM argument reader (workloads/megatron_args.cpp): shell splitting, values,
// the model it builds (alone, or checked against a built-in one), then the memory model.
#include <string>

#include "fuzz_common.hpp"
#include "model_loader.hpp"
#include "model_params.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  static const wl::ModelSpec gpt2 = wl::builtin_model("gpt2-1.5b");
  return fuzz::guarded([&] {
    const wl::StrategyInput in = wl::strategy_from_megatron_args(std::string(fuzz::as_text(data, size)));
    const wl::ModelSpec m = in.model.complete() ? wl::apply_model_overrides(in.model, std::nullopt, in.tp ? *in.tp : 1)
                                                : wl::apply_model_overrides(in.model, gpt2, 1);
    fuzz::expect_quantity("parameters", wl::total_params(m));
    fuzz::exercise_memory(m, in);
  });
}
