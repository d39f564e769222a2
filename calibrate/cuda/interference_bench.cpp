// Interference between compute and communication on the same GPUs: a bf16 GEMM timed alone and
// while an NCCL all-reduce runs on every GPU (each GPU's GEMM on its compute stream, the
// collective on a second stream, as a framework overlaps a gradient all-reduce with backward
// GEMMs), and the all-reduce timed alone and while GEMMs run beside it. NCCL's kernels occupy SMs
// (one block per channel) and both compete for HBM, so each slows the other; the replay applies
// the measured ratios to compute and communication that overlap (sim/engine.cpp).
//
// Coverage: the background work is enqueued first and is long enough to outlast the timed work
// (checked with events on both streams; a sample whose background ended first is discarded and
// the run fails if none is left).
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>

#include "../gpu_benchmarks.hpp"
#include "cuda_check.hpp"
#include "device_memory.hpp"
#include "device_util.hpp"
#include "nccl_check.hpp"

namespace trainsim::calibrate {
namespace {

// A transformer MLP product at 8192 tokens and hidden 4096 (T x 4h x h): large enough to fill an
// H100/H200, the shape whose backward GEMMs a gradient all-reduce overlaps.
constexpr int GEMM_M = 8192, GEMM_N = 16384, GEMM_K = 4096;
// 64 MiB of fp32 gradients: a few DDP buckets (25 MB each), or one layer's gradients at h = 2048.
constexpr std::size_t AR_COUNT = std::size_t{16} << 20;
constexpr int TIMED = 16;     // timed GEMMs or all-reduces per sample
constexpr int SAMPLES = 5;

struct Gpu {
  int device;
  Stream compute, comm;
  DeviceBuffer a, b, c, send, recv;
  cublasHandle_t handle = nullptr;
  Gpu(int dev)
      : device(dev), compute(dev), comm(dev), a(dev, std::size_t{2} * GEMM_M * GEMM_K),
        b(dev, std::size_t{2} * GEMM_K * GEMM_N), c(dev, std::size_t{2} * GEMM_M * GEMM_N), send(dev, AR_COUNT * 4),
        recv(dev, AR_COUNT * 4) {
    DeviceGuard g(dev);
    CUBLAS_CHECK(cublasCreate(&handle));
    CUBLAS_CHECK(cublasSetStream(handle, compute.get()));
    fill_uniform(a.get(), std::size_t{GEMM_M} * GEMM_K, DType::BF16, 11u + static_cast<unsigned>(dev), -1.0f, 1.0f, compute.get());
    fill_uniform(b.get(), std::size_t{GEMM_K} * GEMM_N, DType::BF16, 23u + static_cast<unsigned>(dev), -1.0f, 1.0f, compute.get());
    nccl_fill_input(send.as<float>(), AR_COUNT, 0, comm.get());
  }
  ~Gpu() {
    if (handle != nullptr) {
      cudaSetDevice(device);
      cublasDestroy(handle);
    }
  }
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  void gemm() {
    const float alpha = 1.0f, beta = 0.0f;
    // Column-major C^T[n x m] = B^T A^T: our row-major C[m x n] = A[m x k] B[k x n].
    CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, GEMM_N, GEMM_M, GEMM_K, &alpha, b.get(), CUDA_R_16BF,
                              GEMM_N, a.get(), CUDA_R_16BF, GEMM_K, &beta, c.get(), CUDA_R_16BF, GEMM_N,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
};

class Bench {
 public:
  explicit Bench(const std::vector<int>& devices) : comms_(devices.size()) {
    NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()));
    for (int d : devices) gpus_.push_back(std::make_unique<Gpu>(d));
  }
  ~Bench() {
    for (auto c : comms_) ncclCommDestroy(c);
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  void all_reduce() {
    NCCL_CHECK(ncclGroupStart());
    for (std::size_t r = 0; r < gpus_.size(); ++r) {
      Gpu& g = *gpus_[r];
      NCCL_CHECK(ncclAllReduce(g.send.get(), g.recv.get(), AR_COUNT, ncclFloat, ncclSum, comms_[r], g.comm.get()));
    }
    NCCL_CHECK(ncclGroupEnd());
  }
  void gemms(int n) {
    for (auto& g : gpus_) {
      DeviceGuard guard(g->device);
      for (int i = 0; i < n; ++i) g->gemm();
    }
  }
  void sync() {
    for (auto& g : gpus_) {
      g->compute.sync();
      g->comm.sync();
    }
  }

  // Seconds per timed op (the slowest GPU's), with `background` ops enqueued first on the other
  // stream (0: alone). `timed_is_gemm` picks which kind is timed. Returns a negative value when
  // the background ended before the timed work on some GPU.
  double sample(bool timed_is_gemm, int background) {
    std::vector<std::unique_ptr<Event>> start, stop, bg_started, bg_end;
    for (auto& g : gpus_) {
      start.push_back(std::make_unique<Event>(g->device));
      stop.push_back(std::make_unique<Event>(g->device));
      bg_started.push_back(std::make_unique<Event>(g->device));
      bg_end.push_back(std::make_unique<Event>(g->device));
    }
    auto timed_stream = [&](Gpu& g) { return timed_is_gemm ? g.compute.get() : g.comm.get(); };
    auto bg_stream = [&](Gpu& g) { return timed_is_gemm ? g.comm.get() : g.compute.get(); };
    if (background > 0) {
      // Two background ops first, so the timed work starts while the background is in full swing.
      for (int i = 0; i < 2; ++i) timed_is_gemm ? all_reduce() : gemms(1);
      for (std::size_t r = 0; r < gpus_.size(); ++r) {
        DeviceGuard guard(gpus_[r]->device);
        bg_started[r]->record(bg_stream(*gpus_[r]));
        CUDA_CHECK(cudaStreamWaitEvent(timed_stream(*gpus_[r]), bg_started[r]->get(), 0));
      }
      for (int i = 2; i < background; ++i) timed_is_gemm ? all_reduce() : gemms(1);
      for (std::size_t r = 0; r < gpus_.size(); ++r) {
        DeviceGuard guard(gpus_[r]->device);
        bg_end[r]->record(bg_stream(*gpus_[r]));
      }
    }
    for (std::size_t r = 0; r < gpus_.size(); ++r) {
      DeviceGuard guard(gpus_[r]->device);
      start[r]->record(timed_stream(*gpus_[r]));
    }
    for (int i = 0; i < TIMED; ++i) timed_is_gemm ? gemms(1) : all_reduce();
    for (std::size_t r = 0; r < gpus_.size(); ++r) {
      DeviceGuard guard(gpus_[r]->device);
      stop[r]->record(timed_stream(*gpus_[r]));
    }
    sync();
    double worst = 0;
    for (std::size_t r = 0; r < gpus_.size(); ++r) {
      worst = std::max(worst, elapsed_seconds(*start[r], *stop[r]) / TIMED);
      if (background > 0 && elapsed_seconds(*stop[r], *bg_end[r]) <= 0) return -1;
    }
    return worst;
  }

 private:
  std::vector<ncclComm_t> comms_;
  std::vector<std::unique_ptr<Gpu>> gpus_;
};

Measurement ratio_measurement(const char* what, const std::vector<double>& alone, const std::vector<double>& together,
                              int gpus, const std::string& check) {
  Measurement m;
  m.bench = "interference";
  m.what = what;
  const double base = summarize(alone).median;
  std::vector<double> ratios;
  for (double t : together) ratios.push_back(t / base);
  m.params = {{"gpus", gpus}, {"gemm_m", GEMM_M}, {"gemm_n", GEMM_N}, {"gemm_k", GEMM_K}, {"gemm_dtype", "bf16"},
              {"all_reduce_bytes", AR_COUNT * 4}, {"all_reduce_dtype", "float32"}, {"alone_s_median", base},
              {"together_s_median", summarize(together).median}};
  m.unit = "slowdown";
  m.stats = summarize(ratios);
  m.check = check;
  return m;
}

}  // namespace

void run_interference_bench(Mode mode, const GpuInfo& info, Results& results) {
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  const int n = static_cast<int>(info.devices.size());
  if (n < 2) {
    results.note("interference: skipped, one GPU only (an all-reduce needs a group of at least 2)");
    return;
  }
  std::vector<int> devices;
  for (const auto& d : info.devices) devices.push_back(d.index);
  Bench bench(devices);
  bench.sync();
  // Warm-up: clocks settle, NCCL connects, cuBLAS picks its kernel.
  for (int i = 0; i < 3; ++i) {
    bench.gemms(8);
    bench.all_reduce();
  }
  bench.sync();
  const int samples = mode == Mode::QUICK ? SAMPLES : 2 * SAMPLES;
  std::vector<double> gemm_alone, ar_alone, gemm_under, ar_beside;
  for (int s = 0; s < samples; ++s) {
    gemm_alone.push_back(bench.sample(true, 0));
    ar_alone.push_back(bench.sample(false, 0));
  }
  const double g = summarize(gemm_alone).median, a = summarize(ar_alone).median;
  // Enough background for the timed work slowed threefold; where that was not enough (a GEMM
  // holding every SM starves NCCL's blocks far more than that), the background triples and the
  // sample is taken again, up to 4 times.
  int ar_background = static_cast<int>(std::ceil(3.0 * TIMED * g / a)) + 4;
  int gemm_background = static_cast<int>(std::ceil(3.0 * TIMED * a / g)) + 4;
  int discarded = 0;
  auto covered = [&](bool gemm_timed, int& background) {
    for (int attempt = 0; attempt < 4; ++attempt) {
      const double t = bench.sample(gemm_timed, background);
      if (t > 0) return t;
      ++discarded;
      background *= 3;
    }
    return -1.0;
  };
  for (int s = 0; s < samples; ++s) {
    const double t1 = covered(true, ar_background);
    if (t1 > 0) gemm_under.push_back(t1);
    const double t2 = covered(false, gemm_background);
    if (t2 > 0) ar_beside.push_back(t2);
  }
  if (gemm_under.empty() || ar_beside.empty()) {
    throw CalibrationError("interference: the background work ended before the timed work in every sample");
  }
  const std::string check = "background enqueued first and checked (events) to outlast the timed work on every GPU; " +
                            std::to_string(discarded) + " samples discarded; " + std::to_string(ar_background) +
                            " background all-reduces, " + std::to_string(gemm_background) + " background GEMMs";
  results.add(ratio_measurement("gemm_under_all_reduce", gemm_alone, gemm_under, n, check));
  results.add(ratio_measurement("all_reduce_beside_gemm", ar_alone, ar_beside, n, check));
}

}  // namespace trainsim::calibrate
