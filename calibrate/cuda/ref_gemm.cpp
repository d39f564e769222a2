#include "ref_gemm.hpp"

#include <string>

#include "cuda_check.hpp"

namespace trainsim::calibrate::ref {

struct GemmRunner::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

namespace {

cublasLtMatrixLayout_t layout(cudaDataType t, int rows, int cols, int ld, int batch, long long stride) {
  cublasLtMatrixLayout_t l = nullptr;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, t, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), ld));
  if (batch > 1) {
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return l;
}

}  // namespace

GemmRunner::GemmRunner(void* workspace, std::size_t workspace_bytes)
    : workspace_(workspace), workspace_bytes_(workspace_bytes) {
  CUBLAS_CHECK(cublasLtCreate(&handle_));
}

GemmRunner::~GemmRunner() {
  plans_.clear();
  if (handle_) cublasLtDestroy(handle_);
}

void GemmRunner::run(const GemmArgs& g, cudaStream_t stream) {
  const Key key{g.trans_a, g.trans_b, g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch, g.stride_a, g.stride_b, g.stride_c};
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    auto p = std::make_unique<Plan>();
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    // Column-major view: C^T [n, m] = op(B)^T [n, k] op(A)^T [k, m]; cuBLAS's "A" is our B.
    const cublasOperation_t op_first = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_second = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first)));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof(op_second)));
    // Stored shapes in column-major terms: our B (row-major [k, n], or [n, k] when transposed).
    p->a = g.trans_b ? layout(CUDA_R_16BF, g.k, g.n, g.ldb, g.batch, g.stride_b)
                     : layout(CUDA_R_16BF, g.n, g.k, g.ldb, g.batch, g.stride_b);
    p->b = g.trans_a ? layout(CUDA_R_16BF, g.m, g.k, g.lda, g.batch, g.stride_a)
                     : layout(CUDA_R_16BF, g.k, g.m, g.lda, g.batch, g.stride_a);
    p->c = layout(CUDA_R_32F, g.n, g.m, g.ldc, g.batch, g.stride_c);
    cublasLtMatmulPreference_t pref = nullptr;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                                      sizeof(workspace_bytes_)));
    // Tensors start at 128-byte multiples and attention's batch strides are s d 2 bytes: ask only
    // for algorithms that need 16-byte alignment (the default assumes 256).
    const std::uint32_t align = 16;
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align)));
    }
    cublasLtMatmulHeuristicResult_t h{};
    int returned = 0;
    const cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(handle_, p->desc, p->a, p->b, p->c, p->c, pref, 1, &h, &returned);
    cublasLtMatmulPreferenceDestroy(pref);
    CUBLAS_CHECK(st);
    if (returned == 0) {
      throw CalibrationError("cuBLASLt has no algorithm for the reference GEMM m=" + std::to_string(g.m) + " n=" +
                             std::to_string(g.n) + " k=" + std::to_string(g.k) + " batch=" + std::to_string(g.batch));
    }
    p->algo = h.algo;
    it = plans_.emplace(key, std::move(p)).first;
  }
  const Plan& p = *it->second;
  CUBLAS_CHECK(cublasLtMatmul(handle_, p.desc, &g.alpha, g.b, p.a, g.a, p.b, &g.beta, g.c, p.c, g.c, p.c, &p.algo,
                              workspace_, workspace_bytes_, stream));
  flops_ += 2.0 * g.m * g.n * static_cast<double>(g.k) * g.batch;
}

}  // namespace trainsim::calibrate::ref
