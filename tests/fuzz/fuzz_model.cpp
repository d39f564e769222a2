// Fuzzes trainsim's own model schema (workloads/model_loader.cpp), then the memory model on the
// accepted model with the default strategy.
#include "fuzz_common.hpp"
#include "model_loader.hpp"
#include "model_params.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  return fuzz::guarded([&] {
    const wl::ModelSpec m = wl::load_model(parse_json_text(fuzz::as_text(data, size), "fuzz.json"));
    fuzz::expect_quantity("parameters", wl::total_params(m));
    fuzz::exercise_memory(m, wl::StrategyInput{});
  });
}
