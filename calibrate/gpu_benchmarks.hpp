#pragma once
// The GPU half of trainsim-calibrate, behind an interface free of CUDA types so the rest of the
// program builds without the CUDA toolkit. With CUDA, calibrate/cuda/ implements it; without,
// gpu_stub.cpp answers "no GPU" and the GPU benchmarks cannot be asked for.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "options.hpp"
#include "results.hpp"
#include "scratch_dir.hpp"

namespace trainsim::calibrate {

struct GpuDevice {
  int index = 0;
  std::string name;
  std::string pci_bus_id;
  double memory_GiB = 0;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
};

struct GpuInfo {
  bool available = false;
  std::string why_not;               // when !available: what is missing, in words
  bool built_with_cuda = false;
  int visible = 0;                   // GPUs CUDA can see
  std::vector<GpuDevice> devices;    // the ones used (the first --gpus of them)
  std::string driver_version;        // e.g. "580.159.04" (from NVML), or "unknown"
  int cuda_driver_api = 0;           // cudaDriverGetVersion, e.g. 13000
  int cuda_runtime = 0;              // cudaRuntimeGetVersion
  std::string cublas_version;
  std::string nccl_version;
  int nvlinks_per_gpu = -1;          // active NVLinks of the first GPU, -1 when unknown
  std::string nvlink_remote = "unknown";  // what those links reach: "switch", "gpu", "none", "unknown"
  bool p2p_all_pairs = false;        // every pair of used GPUs can access each other's memory
  double context_GiB = 0;            // device memory in use right after creating a context
};

// Never throws for a missing GPU; fills why_not instead. `max_gpus` 0 means all.
GpuInfo probe_gpus(int max_gpus);
nlohmann::ordered_json to_json(const GpuInfo& info);

// Each runs one family on the GPUs of `info` and adds its measurements. They throw
// CalibrationError when a CUDA/cuBLAS/NCCL call fails or an output fails its check.
void run_gemm_bench(Mode mode, const GpuInfo& info, Results& results);
void run_kernel_bench(Mode mode, const GpuInfo& info, Results& results);
void run_host_copy_bench(Mode mode, const GpuInfo& info, Results& results);
void run_nccl_bench(Mode mode, const GpuInfo& info, Results& results);
void run_storage_gpu_bench(Mode mode, const GpuInfo& info, ScratchDir& dir, Results& results);
// A GEMM alone and under an all-reduce, the all-reduce alone and beside GEMMs (all GPUs).
void run_interference_bench(Mode mode, const GpuInfo& info, Results& results);
// Host time of one kernel launch and the GPU time of an empty kernel (first GPU).
void run_host_dispatch_bench(Mode mode, const GpuInfo& info, Results& results);
// The reference step's own kernels by class (calibrate/cuda/ref_kernel_bench.cpp).
void run_reference_kernel_bench(Mode mode, const GpuInfo& info, Results& results);

}  // namespace trainsim::calibrate
