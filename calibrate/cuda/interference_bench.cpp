// Interference between compute and communication on the same GPUs, over a grid: bf16 GEMMs of
// the MLP shapes of transformer layers (T x 4h x h, hidden 1024..6144, the validation models'
// layers) x NCCL collectives (all-reduce fp32 as DDP's buckets, all-gather bf16 as FSDP2's
// parameters, reduce-scatter fp32 as FSDP2's gradients) x sizes (1 MiB .. 2 GiB, nccl-tests'
// size: the whole buffer). Each GPU runs its GEMMs on a compute stream and the collective on a
// second stream, as a framework overlaps them. Per cell, both directions:
//   - collective_beside_gemm: seconds per collective, back to back, while back-to-back GEMMs run
//     (its alone time in the params);
//   - gemm_beside_collective: a GEMM's time while back-to-back collectives run, over its alone
//     time.
// NCCL's kernels need SMs (one block per channel) that a running GEMM holds until its blocks
// retire, and both share HBM, so the two directions differ in form; the profile keeps both as
// measured (calibrate/profile_writer.cpp) and the replay reads them (sim/engine/engine.cpp).
//
// Coverage: each sample's work is queued behind a spinning kernel (so the host's launches, slower
// than a 1 MiB collective, do not pace it); the background work is enqueued first and is checked
// with events to outlast the timed work on every GPU; a sample whose background ended first is taken again with more
// background (up to 3 times), and the run fails if a cell keeps no sample.
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
#include "host_dispatch_kernels.hpp"
#include "nccl_check.hpp"

namespace trainsim::calibrate {
namespace {

struct GemmShape {
  int m, n, k;  // C[m x n] = A[m x k] B[k x n]: tokens x 4h x h, a layer's MLP up-projection
};
// Hidden 1024 at 8192 tokens (micro-batch 4 x 2048) and 2560, 4096, 5120, 6144 at 2048 tokens:
// the validation models' layers (reports/validation/measured), 69 to 618 GFLOP per GEMM.
constexpr GemmShape SHAPES[] = {
    {8192, 4096, 1024}, {2048, 10240, 2560}, {2048, 16384, 4096}, {2048, 20480, 5120}, {2048, 24576, 6144}};
// 1 MiB to 2 GiB: a DDP bucket (25 MB) up to FSDP2's per-layer fp32 reduce-scatter at hidden 6144
// (1.8 GB), so the replay reads the validation's collectives inside the table.
constexpr std::size_t SIZES[] = {std::size_t{1} << 20, std::size_t{8} << 20, std::size_t{64} << 20,
                                 std::size_t{512} << 20, std::size_t{2048} << 20};
constexpr std::size_t MAX_BYTES = std::size_t{2048} << 20;

enum class Kind { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER };
constexpr Kind KINDS[] = {Kind::ALL_REDUCE, Kind::ALL_GATHER, Kind::REDUCE_SCATTER};
const char* name_of(Kind k) {
  return k == Kind::ALL_REDUCE ? "all_reduce" : k == Kind::ALL_GATHER ? "all_gather" : "reduce_scatter";
}
const char* dtype_of(Kind k) { return k == Kind::ALL_GATHER ? "bf16" : "float32"; }

// Timed work per sample: enough ops for about this long, at least 3 and at most 16.
constexpr double TIMED_S = 4e-3;
int timed_ops(double seconds_each) {
  return static_cast<int>(std::clamp(std::ceil(TIMED_S / seconds_each), 3.0, 16.0));
}

std::size_t max_elems(bool a) {
  std::size_t e = 0;
  for (const auto& s : SHAPES) e = std::max(e, a ? std::size_t(s.m) * s.k : std::size_t(s.k) * s.n);
  return e;
}
std::size_t max_c() {
  std::size_t e = 0;
  for (const auto& s : SHAPES) e = std::max(e, std::size_t(s.m) * s.n);
  return e;
}

struct Gpu {
  int device;
  Stream compute, comm;
  DeviceBuffer a, b, c, send, recv;
  cublasHandle_t handle = nullptr;
  explicit Gpu(int dev)
      : device(dev), compute(dev), comm(dev), a(dev, 2 * max_elems(true)), b(dev, 2 * max_elems(false)),
        c(dev, 2 * max_c()), send(dev, MAX_BYTES), recv(dev, MAX_BYTES) {
    DeviceGuard g(dev);
    CUBLAS_CHECK(cublasCreate(&handle));
    CUBLAS_CHECK(cublasSetStream(handle, compute.get()));
    fill_uniform(a.get(), max_elems(true), DType::BF16, 11u + static_cast<unsigned>(dev), -1.0f, 1.0f, compute.get());
    fill_uniform(b.get(), max_elems(false), DType::BF16, 23u + static_cast<unsigned>(dev), -1.0f, 1.0f, compute.get());
    nccl_fill_input(send.as<float>(), MAX_BYTES / 4, 0, comm.get());
  }
  ~Gpu() {
    if (handle != nullptr) {
      cudaSetDevice(device);
      cublasDestroy(handle);
    }
  }
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  void gemm(const GemmShape& s) {
    const float alpha = 1.0f, beta = 0.0f;
    // Column-major C^T[n x m] = B^T A^T: our row-major C[m x n] = A[m x k] B[k x n].
    CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &alpha, b.get(), CUDA_R_16BF, s.n,
                              a.get(), CUDA_R_16BF, s.k, &beta, c.get(), CUDA_R_16BF, s.n, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
  }
};

// One cell's work: which GEMM and which collective of how many bytes.
struct Cell {
  GemmShape gemm;
  Kind kind;
  std::size_t bytes;
};

class Bench {
 public:
  explicit Bench(const std::vector<int>& devices) : comms_(devices.size()) {
    NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()));
    for (int d : devices) {
      gpus_.push_back(std::make_unique<Gpu>(d));
      int khz = 0;
      CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, d));
      clock_hz_ = std::max(clock_hz_, 1e3 * khz);
    }
  }
  ~Bench() {
    for (auto c : comms_) ncclCommDestroy(c);
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;
  int size() const { return static_cast<int>(gpus_.size()); }

  void collective(Kind kind, std::size_t bytes) {
    const std::size_t n = gpus_.size();
    NCCL_CHECK(ncclGroupStart());
    for (std::size_t r = 0; r < n; ++r) {
      Gpu& g = *gpus_[r];
      switch (kind) {
        case Kind::ALL_REDUCE:
          NCCL_CHECK(ncclAllReduce(g.send.get(), g.recv.get(), bytes / 4, ncclFloat, ncclSum, comms_[r], g.comm.get()));
          break;
        case Kind::ALL_GATHER:
          NCCL_CHECK(ncclAllGather(g.send.get(), g.recv.get(), bytes / 2 / n, ncclBfloat16, comms_[r], g.comm.get()));
          break;
        case Kind::REDUCE_SCATTER:
          NCCL_CHECK(ncclReduceScatter(g.send.get(), g.recv.get(), bytes / 4 / n, ncclFloat, ncclSum, comms_[r],
                                       g.comm.get()));
          break;
      }
    }
    NCCL_CHECK(ncclGroupEnd());
  }
  void gemms(const GemmShape& s, int count) {
    for (auto& g : gpus_) {
      DeviceGuard guard(g->device);
      for (int i = 0; i < count; ++i) g->gemm(s);
    }
  }
  void sync() {
    for (auto& g : gpus_) {
      g->compute.sync();
      g->comm.sync();
    }
  }

  // Seconds per timed op (the slowest GPU's): `timed` GEMMs (timed_is_gemm) or collectives, with
  // `background` ops of the other kind enqueued first on the other stream (0: alone). Negative
  // when the background ended before the timed work on some GPU.
  double sample(const Cell& c, bool timed_is_gemm, int timed, int background) {
    const std::size_t n = gpus_.size();
    std::vector<std::unique_ptr<Event>> start, stop, bg_started, bg_end;
    for (auto& g : gpus_) {
      for (auto* v : {&start, &stop, &bg_started, &bg_end}) v->push_back(std::make_unique<Event>(g->device));
    }
    auto timed_stream = [&](Gpu& g) { return timed_is_gemm ? g.compute.get() : g.comm.get(); };
    auto bg_stream = [&](Gpu& g) { return timed_is_gemm ? g.comm.get() : g.compute.get(); };
    auto bg_op = [&] { timed_is_gemm ? collective(c.kind, c.bytes) : gemms(c.gemm, 1); };
    // The gate: everything below queues behind it (on the timed stream through bg_started).
    for (auto& g : gpus_) {
      DeviceGuard guard(g->device);
      launch_spin_kernel(static_cast<long long>((background > 0 ? 20e-3 : 5e-3) * clock_hz_),
                         background > 0 ? bg_stream(*g) : timed_stream(*g));
    }
    if (background > 0) {
      // Two background ops first, so the timed work starts while the background is in full swing.
      for (int i = 0; i < 2; ++i) bg_op();
      for (std::size_t r = 0; r < n; ++r) {
        DeviceGuard guard(gpus_[r]->device);
        bg_started[r]->record(bg_stream(*gpus_[r]));
        CUDA_CHECK(cudaStreamWaitEvent(timed_stream(*gpus_[r]), bg_started[r]->get(), 0));
      }
      for (int i = 2; i < background; ++i) bg_op();
      for (std::size_t r = 0; r < n; ++r) {
        DeviceGuard guard(gpus_[r]->device);
        bg_end[r]->record(bg_stream(*gpus_[r]));
      }
    }
    for (std::size_t r = 0; r < n; ++r) {
      DeviceGuard guard(gpus_[r]->device);
      start[r]->record(timed_stream(*gpus_[r]));
    }
    for (int i = 0; i < timed; ++i) timed_is_gemm ? gemms(c.gemm, 1) : collective(c.kind, c.bytes);
    for (std::size_t r = 0; r < n; ++r) {
      DeviceGuard guard(gpus_[r]->device);
      stop[r]->record(timed_stream(*gpus_[r]));
    }
    sync();
    double worst = 0;
    for (std::size_t r = 0; r < n; ++r) {
      worst = std::max(worst, elapsed_seconds(*start[r], *stop[r]) / timed);
      if (background > 0 && elapsed_seconds(*stop[r], *bg_end[r]) <= 0) return -1;
    }
    return worst;
  }

 private:
  std::vector<ncclComm_t> comms_;
  std::vector<std::unique_ptr<Gpu>> gpus_;
  double clock_hz_ = 1e9;  // the fastest SM clock: a spin of N seconds' cycles lasts at least N seconds
};

// Samples of the timed work beside enough background to cover it, estimated from `guess_s`
// (the timed work's expected length) over `bg_each_s` (one background op's expected length).
struct Covered {
  std::vector<double> seconds;
  int discarded = 0;
  int background = 0;
};
Covered covered_samples(Bench& bench, const Cell& c, bool timed_is_gemm, int timed, double guess_s, double bg_each_s,
                        int samples) {
  Covered out;
  out.background = static_cast<int>(std::ceil(1.5 * guess_s / bg_each_s)) + 4;
  for (int s = 0; s < samples; ++s) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      const double t = bench.sample(c, timed_is_gemm, timed, out.background);
      if (t > 0) {
        out.seconds.push_back(t);
        break;
      }
      ++out.discarded;
      out.background *= 3;
    }
  }
  return out;
}

nlohmann::ordered_json cell_params(const Cell& c, int gpus) {
  return {{"gpus", gpus},         {"collective", name_of(c.kind)}, {"dtype", dtype_of(c.kind)},
          {"bytes", c.bytes},     {"gemm_m", c.gemm.m},            {"gemm_n", c.gemm.n},
          {"gemm_k", c.gemm.k},   {"gemm_dtype", "bf16"}};
}

// A cell without a covered sample is left out of the table (the replay interpolates over the
// cells measured) and said so.
std::string skipped(const Cell& c, const char* timed) {
  return std::string("interference: ") + name_of(c.kind) + " of " + std::to_string(c.bytes) + " bytes beside GEMM " +
         std::to_string(c.gemm.m) + "x" + std::to_string(c.gemm.n) + "x" + std::to_string(c.gemm.k) +
         " skipped: the background work ended before the timed " + timed + " in every sample";
}

std::vector<double> alone_samples(Bench& bench, const Cell& c, bool gemm, int samples) {
  const double first = bench.sample(c, gemm, 1, 0);  // warm-up and size of the timed work
  const int timed = timed_ops(first);
  std::vector<double> out;
  for (int s = 0; s < samples; ++s) out.push_back(bench.sample(c, gemm, timed, 0));
  return out;
}

}  // namespace

void run_interference_bench(Mode mode, const GpuInfo& info, Results& results) {
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  const int n = static_cast<int>(info.devices.size());
  if (n < 2) {
    results.note("interference: skipped, one GPU only (a collective needs a group of at least 2)");
    return;
  }
  std::vector<int> devices;
  for (const auto& d : info.devices) devices.push_back(d.index);
  Bench bench(devices);
  bench.sync();
  const int samples = mode == Mode::QUICK ? 3 : 5;
  // Warm-up: clocks settle, NCCL connects every kind, cuBLAS picks its kernels.
  for (const auto& s : SHAPES) bench.gemms(s, 4);
  for (Kind k : KINDS) bench.collective(k, MAX_BYTES);
  bench.sync();
  int measured = 0;
  std::vector<double> gemm_alone;  // by shape
  for (const auto& s : SHAPES) {
    gemm_alone.push_back(summarize(alone_samples(bench, {s, Kind::ALL_REDUCE, SIZES[0]}, true, samples)).median);
  }
  for (Kind k : KINDS) {
    for (std::size_t bytes : SIZES) {
      const double coll_alone = summarize(alone_samples(bench, {SHAPES[0], k, bytes}, false, samples)).median;
      for (std::size_t si = 0; si < std::size(SHAPES); ++si) {
        const Cell cell{SHAPES[si], k, bytes};
        const double g = gemm_alone[si];
        // The collective beside GEMMs: each may wait up to a GEMM for SMs, so the background
        // covers the timed collectives at (alone + one GEMM) each.
        const int tc = timed_ops(coll_alone);
        const Covered cb = covered_samples(bench, cell, false, tc, tc * (coll_alone + g), g, samples);
        if (cb.seconds.empty()) {
          results.note(skipped(cell, "collectives"));
          continue;
        }
        const double coll_beside = summarize(cb.seconds).median;
        // A GEMM beside collectives that run at their measured beside rate.
        const int tg = timed_ops(g);
        const Covered gb = covered_samples(bench, cell, true, tg, tg * g * 1.5, coll_beside, samples);
        if (gb.seconds.empty()) {
          results.note(skipped(cell, "GEMMs"));
          continue;
        }
        std::vector<double> ratios;
        for (double t : gb.seconds) ratios.push_back(t / g);

        Measurement mc;
        mc.bench = "interference";
        mc.what = "collective_beside_gemm";
        mc.params = cell_params(cell, n);
        mc.params["alone_s_median"] = coll_alone;
        mc.params["gemm_alone_s_median"] = g;
        mc.params["timed_ops"] = tc;
        mc.unit = "s";
        mc.stats = summarize(cb.seconds);
        mc.check = "background GEMMs enqueued first and checked (events) to outlast the timed collectives on every GPU; " +
                   std::to_string(cb.discarded) + " samples retaken; " + std::to_string(cb.background) + " background GEMMs";
        results.add(std::move(mc));

        Measurement mg;
        mg.bench = "interference";
        mg.what = "gemm_beside_collective";
        mg.params = cell_params(cell, n);
        mg.params["alone_s_median"] = g;
        mg.params["together_s_median"] = summarize(gb.seconds).median;
        mg.params["timed_ops"] = tg;
        mg.unit = "slowdown";
        mg.stats = summarize(ratios);
        mg.check = "background collectives enqueued first and checked (events) to outlast the timed GEMMs on every GPU; " +
                   std::to_string(gb.discarded) + " samples retaken; " + std::to_string(gb.background) +
                   " background collectives";
        results.add(std::move(mg));
        ++measured;
      }
    }
  }
  if (measured == 0) throw CalibrationError("interference: no cell had its timed work covered by the background");
}

}  // namespace trainsim::calibrate
