#pragma once
// Every CUDA runtime, cuBLAS and NCCL call goes through one of these checks: a failure becomes a
// CalibrationError naming the call, the file and line, and the library's own error text.

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "../errors.hpp"

namespace trainsim::calibrate {

[[noreturn]] inline void throw_gpu_error(const char* library, const char* expr, const char* file, int line,
                                         const std::string& what) {
  throw CalibrationError(std::string(library) + " call failed: " + expr + " (" + file + ":" + std::to_string(line) +
                         "): " + what);
}

inline void check_cuda(cudaError_t e, const char* expr, const char* file, int line) {
  if (e != cudaSuccess) {
    throw_gpu_error("CUDA", expr, file, line, std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e));
  }
}

inline void check_cublas(cublasStatus_t s, const char* expr, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw_gpu_error("cuBLAS", expr, file, line, std::string(cublasGetStatusName(s)) + ": " + cublasGetStatusString(s));
  }
}

inline void check_nccl(ncclResult_t r, const char* expr, const char* file, int line) {
  if (r != ncclSuccess) throw_gpu_error("NCCL", expr, file, line, ncclGetErrorString(r));
}

}  // namespace trainsim::calibrate

#define CUDA_CHECK(expr) ::trainsim::calibrate::check_cuda((expr), #expr, __FILE__, __LINE__)
// After a kernel launch: launch-configuration errors surface here, faults at the next sync.
#define CUDA_CHECK_LAUNCH() ::trainsim::calibrate::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
#define CUBLAS_CHECK(expr) ::trainsim::calibrate::check_cublas((expr), #expr, __FILE__, __LINE__)
#define NCCL_CHECK(expr) ::trainsim::calibrate::check_nccl((expr), #expr, __FILE__, __LINE__)
