#pragma once
// The GPU half of `trainsim-calibrate reference`, behind an interface free of CUDA types.
// calibrate/cuda/ref_run.cpp implements it; without CUDA, reference/reference_stub.cpp throws
// NoGpuError (exit 3).

#include <nlohmann/json.hpp>

#include "reference_result.hpp"

namespace trainsim::calibrate::ref {

// A measured run of the configuration in `o` (single GPU or ZeRO-3 over o.gpus GPUs).
ReferenceRun run_reference_gpu(const ReferenceOptions& o);
// The correctness suite at a small size; "passed" says whether every check held.
nlohmann::ordered_json run_reference_check_gpu(const ReferenceOptions& o);

}  // namespace trainsim::calibrate::ref
