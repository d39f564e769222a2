#include <nccl.h>

#include <cstdio>

#include "../gpu_benchmarks.hpp"
#include "cuda_check.hpp"
#include "device_memory.hpp"
#include "nvml_probe.hpp"

namespace trainsim::calibrate {
namespace {

std::string version_text(long v) {  // major*10000 + minor*100 + patch (cuBLAS, NCCL >= 2.9)
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%ld.%ld.%ld", v / 10000, (v / 100) % 100, v % 100);
  return buf;
}

}  // namespace

GpuInfo probe_gpus(int max_gpus) {
  GpuInfo info;
  info.built_with_cuda = true;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    info.why_not = e != cudaSuccess ? std::string("CUDA reports ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")"
                                    : "CUDA sees no device";
    if (e == cudaErrorInsufficientDriver) info.why_not += "; no NVIDIA driver for a GPU was found on this machine";
    cudaGetLastError();  // clear the sticky-free error so later calls report their own
    return info;
  }
  info.visible = count;
  const int used = max_gpus > 0 ? std::min(max_gpus, count) : count;
  for (int d = 0; d < used; ++d) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
    char bus[32] = {};
    CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof(bus), d));
    info.devices.push_back({d, prop.name, bus, static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0),
                            prop.multiProcessorCount, prop.major, prop.minor});
  }
  CUDA_CHECK(cudaDriverGetVersion(&info.cuda_driver_api));
  CUDA_CHECK(cudaRuntimeGetVersion(&info.cuda_runtime));
  info.cublas_version = version_text(static_cast<long>(cublasLtGetVersion()));
  int nccl = 0;
  NCCL_CHECK(ncclGetVersion(&nccl));
  info.nccl_version = version_text(nccl);
  const NvmlFacts nvml = probe_nvml(info.devices.front().pci_bus_id);
  info.driver_version = nvml.driver_version;
  info.nvlinks_per_gpu = nvml.active_nvlinks;
  info.nvlink_remote = nvml.remote;
  info.p2p_all_pairs = true;
  for (int a = 0; a < used; ++a) {
    for (int b = 0; b < used; ++b) {
      if (a == b) continue;
      int can = 0;
      CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
      if (!can) info.p2p_all_pairs = false;
    }
  }
  {
    DeviceGuard g(0);
    CUDA_CHECK(cudaFree(nullptr));  // creates the context
    std::size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    info.context_GiB = static_cast<double>(total_b - free_b) / (1024.0 * 1024.0 * 1024.0);
  }
  info.available = true;
  return info;
}

nlohmann::ordered_json to_json(const GpuInfo& info) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const auto& d : info.devices) {
    devices.push_back({{"index", d.index}, {"name", d.name}, {"pci_bus_id", d.pci_bus_id}, {"memory_GiB", d.memory_GiB},
                       {"sm_count", d.sm_count}, {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)}});
  }
  return {{"available", info.available},
          {"why_not", info.why_not},
          {"built_with_cuda", info.built_with_cuda},
          {"visible", info.visible},
          {"devices", devices},
          {"driver_version", info.driver_version},
          {"cuda_driver_api", info.cuda_driver_api},
          {"cuda_runtime", info.cuda_runtime},
          {"cublas_version", info.cublas_version},
          {"nccl_version", info.nccl_version},
          {"nvlinks_per_gpu", info.nvlinks_per_gpu},
          {"nvlink_remote", info.nvlink_remote},
          {"p2p_all_pairs", info.p2p_all_pairs},
          {"context_GiB", info.context_GiB}};
}

}  // namespace trainsim::calibrate
