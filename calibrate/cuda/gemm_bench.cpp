// GEMM throughput through cuBLASLt, as frameworks reach it: up to ALGORITHMS of the heuristic's
// candidates are timed per shape and the fastest kept (PyTorch's cuBLAS path and cuBLASLt's own
// auto-tuning pick among the same candidates; the first candidate alone measured about 12% below
// PyTorch's 8192^3 bf16 product on the lent H200), with a 32 MiB workspace, fp32 accumulation for
// bf16/fp16, and tf32 or true fp32 for fp32 data. The first candidate's rate is recorded beside
// the fastest one's.
// Row-major products map onto column-major cuBLAS as C^T = op(B)^T op(A)^T, so cuBLAS sees
// (n, m, k) with our B as its first operand.
#include <algorithm>
#include <cstdio>
#include <random>

#include "../gemm_shapes.hpp"
#include "../gpu_benchmarks.hpp"
#include "cuda_check.hpp"
#include "device_memory.hpp"
#include "device_timing.hpp"
#include "device_util.hpp"
#include "gemm_check.hpp"

namespace trainsim::calibrate {
namespace {

constexpr std::size_t WORKSPACE_BYTES = 32u << 20;
constexpr int CHECK_SAMPLES = 256;
constexpr int ALGORITHMS = 8;  // heuristic candidates timed per shape

struct Precision {
  const char* name;
  cudaDataType_t type;
  cublasComputeType_t compute;
  DType dtype;
  // Allowed ||c - ref|| / ||ref|| for inputs uniform in [-1, 1): output rounding dominates for
  // bf16 (2^-9 per element) and fp16 (2^-11); tf32 rounds its inputs to 10-bit mantissas.
  double tolerance;
};

constexpr Precision BF16{"bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, DType::BF16, 1e-2};
constexpr Precision FP16{"fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F, DType::F16, 5e-3};
constexpr Precision TF32{"tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, DType::F32, 5e-3};
constexpr Precision FP32{"fp32", CUDA_R_32F, CUBLAS_COMPUTE_32F, DType::F32, 1e-4};

struct Plan {
  const Precision* precision;
  std::vector<GemmShape> shapes;
};

std::size_t align_up(std::size_t x) { return (x + 255) / 256 * 256; }

class LtLayout {
 public:
  LtLayout(cudaDataType_t type, std::int64_t rows, std::int64_t cols, std::int64_t batch) {
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_, type, static_cast<std::uint64_t>(rows),
                                            static_cast<std::uint64_t>(cols), rows));
    if (batch > 1) {
      const int count = static_cast<int>(batch);
      const std::int64_t stride = rows * cols;
      CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout_, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
      CUBLAS_CHECK(
          cublasLtMatrixLayoutSetAttribute(layout_, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    }
  }
  ~LtLayout() { cublasLtMatrixLayoutDestroy(layout_); }
  LtLayout(const LtLayout&) = delete;
  LtLayout& operator=(const LtLayout&) = delete;
  cublasLtMatrixLayout_t get() const { return layout_; }

 private:
  cublasLtMatrixLayout_t layout_ = nullptr;
};

// One configured product: descriptors, layouts and the chosen algorithm.
class LtMatmul {
 public:
  LtMatmul(cublasLtHandle_t handle, const Precision& p, const GemmShape& s)
      : handle_(handle),
        a_(p.type, s.trans_b ? s.k : s.n, s.trans_b ? s.n : s.k, s.batch),  // cuBLAS A = our B
        b_(p.type, s.trans_a ? s.m : s.k, s.trans_a ? s.k : s.m, s.batch),  // cuBLAS B = our A
        c_(p.type, s.n, s.m, s.batch) {
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, p.compute, CUDA_R_32F));
    const cublasOperation_t ta = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    cublasLtMatmulPreference_t pref = nullptr;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const std::uint64_t ws = WORKSPACE_BYTES;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    int returned = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle, desc_, a_.get(), b_.get(), c_.get(), c_.get(), pref,
                                                             ALGORITHMS, heuristic_, &returned);
    cublasLtMatmulPreferenceDestroy(pref);
    CUBLAS_CHECK(st);
    if (returned == 0) throw CalibrationError("cuBLASLt has no algorithm for this GEMM");
    algorithms_ = returned;
  }
  ~LtMatmul() { cublasLtMatmulDescDestroy(desc_); }
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  int algorithms() const { return algorithms_; }
  void choose(int algorithm) { chosen_ = algorithm; }
  int chosen() const { return chosen_; }

  void run(const void* a, const void* b, void* c, void* workspace, cudaStream_t s) const {
    const float alpha = 1.0f, beta = 0.0f;
    CUBLAS_CHECK(cublasLtMatmul(handle_, desc_, &alpha, b, a_.get(), a, b_.get(), &beta, c, c_.get(), c, c_.get(),
                                &heuristic_[chosen_].algo, workspace, WORKSPACE_BYTES, s));
  }

 private:
  cublasLtHandle_t handle_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  LtLayout a_, b_, c_;
  cublasLtMatmulHeuristicResult_t heuristic_[ALGORITHMS]{};
  int algorithms_ = 0;
  int chosen_ = 0;
};

// Everything one GPU needs to run GEMMs: handle, stream, workspace and an arena for A, B, C.
struct GemmContext {
  int device;
  Stream stream;
  DeviceBuffer workspace;
  DeviceBuffer arena;
  cublasLtHandle_t handle = nullptr;
  GemmContext(int dev, std::size_t arena_bytes)
      : device(dev), stream(dev), workspace(dev, WORKSPACE_BYTES), arena(dev, arena_bytes) {
    DeviceGuard g(dev);
    CUBLAS_CHECK(cublasLtCreate(&handle));
  }
  ~GemmContext() { cublasLtDestroy(handle); }
};

void measure(GemmContext& ctx, const Precision& p, const GemmShape& s, const TimingPlan& plan, std::uint64_t seed,
             Results& results) {
  DeviceGuard g(ctx.device);
  const int eb = dtype_bytes(p.dtype);
  const std::size_t na = static_cast<std::size_t>(s.batch * s.m * s.k);
  const std::size_t nb = static_cast<std::size_t>(s.batch * s.k * s.n);
  const std::size_t nc = static_cast<std::size_t>(s.batch * s.m * s.n);
  auto* base = ctx.arena.as<char>();
  void* a = base;
  void* b = base + align_up(na * eb);
  void* c = base + align_up(na * eb) + align_up(nb * eb);
  const cudaStream_t st = ctx.stream.get();
  fill_uniform(a, na, p.dtype, seed, -1.0f, 1.0f, st);
  fill_uniform(b, nb, p.dtype, seed ^ 0x5bd1e995u, -1.0f, 1.0f, st);
  poison(c, nc * eb, st);
  LtMatmul mm(ctx.handle, p, s);
  // Each candidate briefly; the fastest is checked and then timed with the full plan. A product of
  // over 2 ms is probed with one launch per candidate after its warm-up: three samples of each of
  // eight candidates made the large products most of the sweep's time (a full sweep's products ran
  // about 49 times each), and at that length one launch already varies by about 1% (the spread of
  // the sweep's samples).
  const TimingPlan probe{1, 3, 1e-3, 200};
  const TimingPlan long_probe{1, 1, 0, 1};
  constexpr double LONG_PRODUCT_S = 2e-3;
  double first_s = 0, best_s = 0;
  int best = 0;
  for (int algo = 0; algo < mm.algorithms(); ++algo) {
    mm.choose(algo);
    const TimingPlan& candidate_plan = algo > 0 && first_s > LONG_PRODUCT_S ? long_probe : probe;
    const Timing t =
        time_on_stream(ctx.stream, [&] { mm.run(a, b, c, ctx.workspace.get(), st); }, candidate_plan);
    const double med = summarize(t.seconds).median;
    if (algo == 0) first_s = med;
    if (algo == 0 || med < best_s) {
      best_s = med;
      best = algo;
    }
  }
  mm.choose(best);
  poison(c, nc * eb, st);
  mm.run(a, b, c, ctx.workspace.get(), st);
  const std::size_t unwritten = count_nonfinite(c, nc, p.dtype, st);
  const double err = gemm_sampled_rel_error({a, b, c, p.dtype, s.m, s.n, s.k, s.batch, s.trans_a, s.trans_b},
                                            CHECK_SAMPLES, seed * 31 + 7, st);
  char check[256];
  std::snprintf(check, sizeof(check),
                "rel err %.3g (limit %.0e) on %d sampled outputs vs fp64 reference; %zu of %zu poisoned outputs "
                "left unwritten",
                err, p.tolerance, CHECK_SAMPLES, unwritten, nc);
  if (unwritten != 0 || !(err <= p.tolerance)) {
    throw CalibrationError(std::string("GEMM check failed (") + p.name + " " + s.layer + " " + s.pass + " m=" +
                           std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) + "): " + check);
  }
  const Timing t = time_on_stream(ctx.stream, [&] { mm.run(a, b, c, ctx.workspace.get(), st); }, plan);
  Measurement m;
  m.bench = "gemm";
  m.what = p.name;
  m.params = {{"layer", s.layer}, {"pass", s.pass}, {"m", s.m},         {"n", s.n},
              {"k", s.k},         {"batch", s.batch}, {"layout", s.layout()}, {"tokens", s.tokens},
              {"hidden", s.hidden}, {"gpu", ctx.device}, {"reps", t.reps},
              {"algorithms_timed", mm.algorithms()}, {"algorithm_chosen", mm.chosen()},
              {"first_algorithm_TFLOPs", s.flops() / 1e12 / first_s}};
  m.unit = "TFLOPs";
  m.stats = summarize(rates(s.flops() / 1e12, t.seconds));
  m.check = check;
  results.add(std::move(m));
}

constexpr std::int64_t GPT2_VOCAB = 50257;  // unpadded, as Hugging Face's GPT-2 and nanoGPT-style scripts keep it

std::vector<Plan> plans(Mode mode) {
  std::vector<Plan> out;
  auto squares = [](std::vector<std::int64_t> sizes) {
    std::vector<GemmShape> v;
    for (auto n : sizes) v.push_back(square_shape(n));
    return v;
  };
  auto concat = [](std::vector<GemmShape> a, const std::vector<GemmShape>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const std::int64_t attn_elements = std::int64_t{1} << 30;
  const std::vector<std::int64_t> tokens_quick{2048, 4096, 8192};
  // SDPA's math path upcasts bf16 inputs and runs its two batched products in fp32
  // (aten/src/ATen/native/transformers/attention.cpp, _scaled_dot_product_attention_math), as models
  // without a fused kernel for their attention do: head dimensions 64 and 128 at 2048 tokens.
  const auto fp32_attention = [&] {
    auto v = attention_shapes({2048}, 64, attn_elements);
    const auto d128 = attention_shapes({2048}, 128, attn_elements);
    v.insert(v.end(), d128.begin(), d128.end());
    return v;
  }();
  if (mode == Mode::QUICK) {
    // The hidden sizes of common models up to 12288 at micro-batch token counts of 2048 to 8192,
    // and their output layers over GPT-2's padded vocabulary (50304) and its own (50257: an odd
    // leading dimension, which cuBLAS serves with slower kernels; the cost model looks such products
    // up among these, sim/costs/cost_model.hpp aligned_gemm); attention's batched products at head
    // dimensions 128 and 64 (a model that materializes its scores runs them as GEMMs).
    const std::vector<std::int64_t> hiddens{1024, 2560, 4096, 5120, 6144, 12288};
    out.push_back({&BF16, concat(concat(concat(dense_layer_shapes(tokens_quick, hiddens),
                                               logits_shapes(tokens_quick, {1024, 2560, 4096, 5120, 6144}, 50304)),
                                        logits_shapes(tokens_quick, {768, 1280, 1600, 2560}, GPT2_VOCAB)),
                                 concat(attention_shapes({2048}, 128, attn_elements), attention_shapes({2048}, 64, attn_elements)))});
    out.push_back({&FP16, squares({8192})});
    out.push_back({&TF32, squares({8192})});
    out.push_back({&FP32, concat(squares({4096}), fp32_attention)});
    return out;
  }
  // The full sweep: the quick one's shapes and output layers, token counts from 512 to 16384 over
  // hidden sizes from 1024 to 12288, the two largest hidden sizes (16384 and 25600, 0.5T to 1T
  // models) at 2048 and 8192 tokens, attention's batched products at three sequence lengths; the
  // other precisions at fewer shapes (their tables serve fp16, fp32 and tf32 runs and the fp32
  // products inside bf16 steps), which keeps the sweep to about two minutes on one H100 or H200.
  const std::vector<std::int64_t> hiddens{1024, 2048, 2560, 4096, 5120, 6144, 8192, 12288};
  const auto bf16_sq = squares({2048, 4096, 16384});  // 8192^3 is the headline, measured on every GPU already
  out.push_back({&BF16, concat(concat(concat(concat(concat(dense_layer_shapes({512, 2048, 4096, 8192, 16384}, hiddens),
                                                           dense_layer_shapes({2048, 8192}, {16384, 25600})),
                                                    concat(attention_shapes({512, 2048, 8192}, 128, attn_elements),
                                                           attention_shapes({1024, 2048}, 64, attn_elements))),
                                             bf16_sq),
                                      logits_shapes(tokens_quick, {1024, 2560, 4096, 5120, 6144}, 50304)),
                               logits_shapes(tokens_quick, {768, 1280, 1600, 2560}, GPT2_VOCAB))});
  const auto sq = squares({2048, 4096, 8192, 16384});
  out.push_back({&FP16, concat(concat(dense_layer_shapes({4096}, {1024, 4096, 12288}), attention_shapes({2048}, 128, attn_elements)), sq)});
  out.push_back({&TF32, concat(concat(dense_layer_shapes({2048, 8192}, {1024, 4096, 12288}), attention_shapes({2048}, 128, attn_elements)), sq)});
  out.push_back({&FP32, concat(concat(dense_layer_shapes({2048}, {1024, 4096}), fp32_attention), squares({2048, 4096, 8192}))});
  return out;
}

}  // namespace

void run_gemm_bench(Mode mode, const GpuInfo& info, Results& results) {
  std::mt19937_64 rng(std::random_device{}());
  // The headline: an 8192^3 bf16 product on every GPU after a 1 s warm-up, more samples than
  // the sweep.
  const TimingPlan headline{2, 15, 20e-3, 1000, 1.0};
  for (const auto& dev : info.devices) {
    GemmContext ctx(dev.index, static_cast<std::size_t>(square_shape(8192).bytes(2)) + 1024);
    measure(ctx, BF16, square_shape(8192), headline, rng(), results);
  }
  // The sweep runs on the first GPU; the others are assumed alike (their headlines show it).
  const auto all = plans(mode);
  std::size_t free_b = 0, total_b = 0;
  {
    DeviceGuard g(info.devices.front().index);
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  }
  // "Scaled to fit": a shape whose A, B and C exceed 80% of free memory is skipped, said so.
  const double limit = 0.8 * static_cast<double>(free_b) - WORKSPACE_BYTES;
  double largest = 0;
  for (const auto& plan : all) {
    for (const auto& s : plan.shapes) {
      const double bytes = s.bytes(dtype_bytes(plan.precision->dtype)) + 3 * 256;
      if (bytes <= limit) largest = std::max(largest, bytes);
    }
  }
  GemmContext ctx(info.devices.front().index, static_cast<std::size_t>(largest));
  const TimingPlan sweep{1, 5, 2e-3, 1000};
  for (const auto& plan : all) {
    int skipped = 0;
    for (const auto& s : plan.shapes) {
      if (s.bytes(dtype_bytes(plan.precision->dtype)) + 3 * 256 > limit) {
        ++skipped;
        continue;
      }
      measure(ctx, *plan.precision, s, sweep, rng(), results);
    }
    if (skipped > 0) {
      results.note("gemm " + std::string(plan.precision->name) + ": " + std::to_string(skipped) +
                   " shapes skipped: they do not fit in 80% of the free device memory");
    }
  }
}

}  // namespace trainsim::calibrate
