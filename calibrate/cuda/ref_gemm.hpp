#pragma once
// Row-major GEMMs through cuBLASLt for the reference step: C[M, N] = alpha op(A) op(B) + beta C,
// A and B bf16, C fp32, fp32 accumulate (CUBLAS_COMPUTE_32F), optionally strided-batched. cuBLAS
// is column-major, so the row-major product is computed as C^T = op(B)^T op(A)^T: the operands
// swap and keep their transpose flags. Plans (descriptors, layouts, the heuristic's algorithm)
// are cached per shape.

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace trainsim::calibrate::ref {

struct GemmArgs {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0;
  const __nv_bfloat16* a = nullptr;
  int lda = 0;
  const __nv_bfloat16* b = nullptr;
  int ldb = 0;
  float* c = nullptr;
  int ldc = 0;
  float alpha = 1, beta = 0;
  int batch = 1;
  long long stride_a = 0, stride_b = 0, stride_c = 0;
};

class GemmRunner {
 public:
  GemmRunner(void* workspace, std::size_t workspace_bytes);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;
  void run(const GemmArgs& g, cudaStream_t stream);
  double flops() const { return flops_; }  // 2 m n k batch, summed over every run
  void reset_flops() { flops_ = 0; }

 private:
  struct Plan;
  using Key = std::tuple<bool, bool, int, int, int, int, int, int, int, long long, long long, long long>;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_;
  std::size_t workspace_bytes_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
  double flops_ = 0;
};

}  // namespace trainsim::calibrate::ref
