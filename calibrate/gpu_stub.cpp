// Built when the CUDA toolkit (nvcc, cuBLAS, NCCL) was not found at configure time: the GPU
// benchmarks do not exist in this binary, and asking for them is answered with "no GPU".
#include "errors.hpp"
#include "gpu_benchmarks.hpp"

namespace trainsim::calibrate {
namespace {
[[noreturn]] void unavailable() {
  throw NoGpuError("this trainsim-calibrate was built without the CUDA toolkit; GPU benchmarks are not available");
}
}  // namespace

GpuInfo probe_gpus(int /*max_gpus*/) {
  GpuInfo info;
  info.why_not =
      "this trainsim-calibrate was built without the CUDA toolkit (nvcc, cuBLAS and NCCL were not found when "
      "CMake ran), so it has no GPU benchmarks";
  return info;
}

nlohmann::ordered_json to_json(const GpuInfo& info) {
  return {{"available", info.available}, {"why_not", info.why_not}, {"built_with_cuda", false}};
}

void run_gemm_bench(Mode, const GpuInfo&, Results&) { unavailable(); }
void run_kernel_bench(Mode, const GpuInfo&, Results&) { unavailable(); }
void run_host_copy_bench(Mode, const GpuInfo&, Results&) { unavailable(); }
void run_nccl_bench(Mode, const GpuInfo&, Results&) { unavailable(); }
void run_storage_gpu_bench(Mode, const GpuInfo&, ScratchDir&, Results&) { unavailable(); }
void run_interference_bench(Mode, const GpuInfo&, Results&) { unavailable(); }
void run_host_dispatch_bench(Mode, const GpuInfo&, Results&) { unavailable(); }
void run_reference_kernel_bench(Mode, const GpuInfo&, Results&) { unavailable(); }

}  // namespace trainsim::calibrate
