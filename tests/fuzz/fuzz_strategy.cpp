// Fuzzes the strategy JSON schema (workloads/strategy_sources.cpp), then resolution and the
// memory model for a fixed model.
#include "fuzz_common.hpp"
#include "model_loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  static const wl::ModelSpec model = wl::builtin_model("gpt3-175b");
  return fuzz::guarded([&] {
    const wl::StrategyInput in = wl::strategy_from_json(parse_json_text(fuzz::as_text(data, size), "strategy.json"));
    fuzz::exercise_memory(model, in);
  });
}
