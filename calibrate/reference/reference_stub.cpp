// Built without the CUDA toolkit: the reference step cannot run here (exit 3, "no GPU").
#include "../errors.hpp"
#include "reference_gpu.hpp"

namespace trainsim::calibrate::ref {

ReferenceRun run_reference_gpu(const ReferenceOptions&) {
  throw NoGpuError("this trainsim-calibrate was built without the CUDA toolkit; the reference step needs a GPU");
}
nlohmann::ordered_json run_reference_check_gpu(const ReferenceOptions&) {
  throw NoGpuError("this trainsim-calibrate was built without the CUDA toolkit; the reference step needs a GPU");
}

}  // namespace trainsim::calibrate::ref
