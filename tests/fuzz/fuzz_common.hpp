#pragma once
// Shared by the libFuzzer targets: what a fuzzed input may do and what it must never do.
// Allowed: be refused with a ConfigError (malformed input). Never: crash, hang, leak, trip a
// sanitizer, throw anything else (that would be exit 1, an internal error), or produce a
// non-finite or negative quantity from an accepted input (a silently wrong answer). A violation
// aborts, which libFuzzer reports with the input that caused it.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "config_error.hpp"
#include "memory_model.hpp"
#include "strategy_input.hpp"

namespace trainsim::fuzz {

[[noreturn]] inline void violated(const char* what, double value) {
  std::fprintf(stderr, "fuzz invariant violated: %s = %g\n", what, value);
  std::abort();
}

inline void expect_quantity(const char* what, double value) {
  if (!std::isfinite(value) || value < 0) violated(what, value);
}

// An accepted model and strategy go through the same resolution and memory model as
// `trainsim memory`; every byte count must come out finite and non-negative.
inline void exercise_memory(const wl::ModelSpec& model, const wl::StrategyInput& input) {
  try {
    const wl::ResolvedInputs r = wl::resolve_inputs(input, model, wl::ClusterShape{16, 1 << 20, "fuzz"});
    const wl::MemoryEstimate est = wl::estimate_memory(r.model, r.strategy, 16);
    for (const auto& st : est.stages) {
      expect_quantity("stage gpu bytes", st.gpu_bytes());
      expect_quantity("stage cpu bytes", st.cpu_bytes());
      expect_quantity("stage nvme bytes", st.nvme_bytes());
      expect_quantity("model state bytes", st.model_states_bytes());
    }
    expect_quantity("node cpu bytes", est.peak_node.cpu_bytes);
  } catch (const ConfigError&) {
    // A combination the resolution refuses is a valid outcome.
  }
}

// Runs `body`; a ConfigError is the expected refusal, any other exception is a finding.
template <class Body>
int guarded(Body body) {
  try {
    body();
  } catch (const ConfigError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: unexpected exception (would be an internal error): %s\n", e.what());
    std::abort();
  }
  return 0;
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace trainsim::fuzz
