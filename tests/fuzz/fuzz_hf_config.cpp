// Fuzzes the Hugging Face config.json reader (workloads/huggingface_config.cpp), then the memory
// model on the accepted model.
#include "fuzz_common.hpp"
#include "model_loader.hpp"
#include "model_params.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  return fuzz::guarded([&] {
    const wl::ModelSpec m = wl::load_huggingface_config(parse_json_text(fuzz::as_text(data, size), "config.json"));
    fuzz::expect_quantity("parameters", wl::total_params(m));
    fuzz::exercise_memory(m, wl::StrategyInput{});
  });
}
