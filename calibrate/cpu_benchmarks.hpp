#pragma once
// The CPU-only benchmarks: CPU-Adam throughput by threads and size, and host memory bandwidth.

#include <string>

#include "cpu_adam.hpp"
#include "options.hpp"
#include "results.hpp"

namespace trainsim::calibrate {

// Runs the vectorized kernel `isa` and the scalar reference on the same random state (both
// decay modes, fp16 and bf16 copies, a length that leaves a scalar tail) and throws
// CalibrationError unless the fp32 results agree within `max_rel` and every half copy equals the
// rounding of the kernel's own fp32 result. Returns a one-line description of what was compared.
std::string check_cpu_adam(Isa isa, ThreadPool& pool, std::size_t count = 1000037, double max_rel = 1e-6);

// `max_threads` 0 means all logical CPUs.
void run_cpu_adam_bench(Mode mode, int max_threads, Results& results);
void run_host_memory_bench(Mode mode, Results& results);

}  // namespace trainsim::calibrate
