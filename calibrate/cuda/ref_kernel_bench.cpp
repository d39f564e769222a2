// The trainsim reference step's own kernels (calibrate/cuda/ref_kernels.cu: the very launchers the
// reference runs) timed with CUDA events at the shapes of its rows and around them: LayerNorm
// forward and both backwards over fp32 rows, the head split/merge transposes, the causal softmax
// forward and backward, the bias column sums. Each rate is the bytes one launch moves as
// workloads/stacks/reference_kernels.hpp counts them (the formula the simulator prices them with) over its
// median time; the profile gets calibration.reference_kernels, one curve per class by size.
// Inputs are random and finite; the outputs are poisoned first and must all be written (a launch
// that did nothing would time as a fast one). Small shapes rotate through copies of their buffers
// so that repeated launches do not run from L2.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../../workloads/stacks/reference_kernels.hpp"
#include "../gpu_benchmarks.hpp"
#include "cuda_check.hpp"
#include "device_memory.hpp"
#include "device_timing.hpp"
#include "device_util.hpp"
#include "ref_kernels.hpp"

namespace trainsim::calibrate {
namespace {

using wl::ReferenceKernel;
constexpr std::size_t ROTATION_BYTES = 512u << 20;  // working sets below this rotate (H200's L2: 60 MiB)
constexpr int SEQ = 2048;                           // the rows' context

struct Tensor {
  DType type;
  std::size_t count;  // elements per slot
  bool output;        // poisoned and checked
  float lo = -2.0f, hi = 2.0f;
};

struct Shape {
  int batch, heads, head_dim;
  long tokens() const { return 1L * batch * SEQ; }
  int hidden() const { return heads * head_dim; }
};

// The rows' (hidden, heads): h1024 with 16 heads, h2560 20, h4096 32, h5120 40.
std::vector<Shape> shapes(Mode mode) {
  std::vector<Shape> out;
  const std::vector<std::pair<int, int>> hd = {{16, 64}, {20, 128}, {32, 128}, {40, 128}};
  const std::vector<int> batches = mode == Mode::QUICK ? std::vector<int>{1, 4} : std::vector<int>{1, 2, 4};
  for (auto [heads, d] : hd) {
    for (int b : batches) out.push_back({b, heads, d});
  }
  return out;
}

}  // namespace

void run_reference_kernel_bench(Mode mode, const GpuInfo& info, Results& results) {
  const int dev = info.devices.front().index;
  DeviceGuard guard(dev);
  Stream stream(dev);
  const cudaStream_t st = stream.get();
  std::mt19937_64 rng(std::random_device{}());
  const TimingPlan plan{3, mode == Mode::QUICK ? 5 : 7, 2e-3, 2000, 0.05};

  // One measurement: tensors per slot, a launch over slot pointers, the class and its shape.
  auto measure = [&](ReferenceKernel k, double rows, double cols, const std::vector<Tensor>& tensors,
                     const std::function<void(const std::vector<char*>&)>& launch, const std::string& shape) {
    const double moved = wl::reference_kernel_bytes(k, rows, cols);
    const int slots = static_cast<int>(std::clamp(ROTATION_BYTES / std::max(moved, 1.0), 1.0, 8.0));
    std::vector<DeviceBuffer> buffers;
    for (const Tensor& t : tensors) {
      buffers.emplace_back(dev, t.count * dtype_bytes(t.type) * slots);
      if (!t.output) fill_uniform(buffers.back().get(), t.count * slots, t.type, rng(), t.lo, t.hi, st);
    }
    auto at = [&](int slot) {
      std::vector<char*> p;
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        p.push_back(buffers[i].as<char>() + static_cast<std::size_t>(slot) * tensors[i].count * dtype_bytes(tensors[i].type));
      }
      return p;
    };
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].output) poison(buffers[i].get(), buffers[i].bytes(), st);
    }
    launch(at(0));
    std::size_t unwritten = 0, total = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      if (!tensors[i].output) continue;
      unwritten += count_nonfinite(buffers[i].get(), tensors[i].count, tensors[i].type, st);
      total += tensors[i].count;
    }
    const std::string what = wl::reference_kernel_class(k);
    // Accumulated outputs (dx, the column sums, the LayerNorm parameter sums) are filled, not
    // poisoned: they start from a value, as in the step.
    if (unwritten != 0) {
      throw CalibrationError(what + " " + shape + ": " + std::to_string(unwritten) + " of " + std::to_string(total) +
                             " poisoned outputs left unwritten or non-finite");
    }
    int next = 0;
    const Timing t = time_on_stream(stream, [&] { launch(at(next++ % slots)); }, plan);
    Measurement m;
    m.bench = "reference_kernels";
    m.what = what;
    m.params = {{"bytes", moved}, {"rows", rows}, {"cols", cols}, {"shape", shape}, {"slots", slots}, {"gpu", dev}, {"reps", t.reps}};
    m.unit = "GBps";
    m.stats = summarize(rates(moved / 1e9, t.seconds));
    m.check = "all " + std::to_string(total) + " poisoned outputs written and finite";
    std::printf("  %-22s %-28s %10.3g B %8.1f GB/s %9.2f us\n", what.c_str(), shape.c_str(), moved, m.stats.median,
                moved / (m.stats.median * 1e9) * 1e6);
    std::fflush(stdout);
    results.add(std::move(m));
  };

  using B = ref::bf16;
  for (const Shape& sh : shapes(mode)) {
    const long T = sh.tokens();
    const int h = sh.hidden(), ti = static_cast<int>(T);
    const std::size_t Th = static_cast<std::size_t>(T) * h;
    const ref::HeadShape hs{sh.batch, SEQ, sh.heads, sh.head_dim};
    const std::string name = "b" + std::to_string(sh.batch) + " s" + std::to_string(SEQ) + " h" + std::to_string(h) +
                             " a" + std::to_string(sh.heads);
    const std::size_t rows = static_cast<std::size_t>(T);
    // LayerNorm: x fp32, g and b bf16, out bf16, mean and rstd fp32 (rstd in [0.5, 2)).
    measure(ReferenceKernel::LAYERNORM_FWD, T, h,
            {{DType::F32, Th, false}, {DType::BF16, static_cast<std::size_t>(h), false}, {DType::BF16, static_cast<std::size_t>(h), false},
             {DType::BF16, Th, true}, {DType::F32, rows, true}, {DType::F32, rows, true}},
            [&](const std::vector<char*>& p) {
              ref::layernorm_forward(reinterpret_cast<float*>(p[0]), reinterpret_cast<B*>(p[1]), reinterpret_cast<B*>(p[2]),
                                     reinterpret_cast<B*>(p[3]), reinterpret_cast<float*>(p[4]), reinterpret_cast<float*>(p[5]), ti, h, st);
            }, name);
    // Backward over input (accumulating into dx, as the layers do) and parameters.
    const std::vector<Tensor> ln_in = {{DType::F32, Th, false}, {DType::F32, Th, false}, {DType::F32, rows, false, -0.5f, 0.5f},
                                       {DType::F32, rows, false, 0.5f, 2.0f}, {DType::BF16, static_cast<std::size_t>(h), false}};
    std::vector<Tensor> lnb = ln_in;
    lnb.push_back({DType::F32, Th, false});  // dx, accumulated into
    measure(ReferenceKernel::LAYERNORM_BWD_INPUT, T, h, lnb, [&](const std::vector<char*>& p) {
      ref::layernorm_backward_input(reinterpret_cast<float*>(p[0]), reinterpret_cast<float*>(p[1]), reinterpret_cast<float*>(p[2]),
                                    reinterpret_cast<float*>(p[3]), reinterpret_cast<B*>(p[4]), reinterpret_cast<float*>(p[5]), true,
                                    ti, h, st);
    }, name);
    std::vector<Tensor> lnp(ln_in.begin(), ln_in.end() - 1);
    lnp.push_back({DType::F32, static_cast<std::size_t>(h), false});
    lnp.push_back({DType::F32, static_cast<std::size_t>(h), false});
    measure(ReferenceKernel::LAYERNORM_BWD_PARAMS, T, h, lnp, [&](const std::vector<char*>& p) {
      ref::layernorm_backward_params(reinterpret_cast<float*>(p[0]), reinterpret_cast<float*>(p[1]), reinterpret_cast<float*>(p[2]),
                                     reinterpret_cast<float*>(p[3]), reinterpret_cast<float*>(p[4]), reinterpret_cast<float*>(p[5]),
                                     ti, h, st);
    }, name);
    // Head transposes.
    measure(ReferenceKernel::SPLIT_QKV, T, h,
            {{DType::F32, 3 * Th, false}, {DType::BF16, 3 * static_cast<std::size_t>(h), false}, {DType::BF16, Th, true},
             {DType::BF16, Th, true}, {DType::BF16, Th, true}},
            [&](const std::vector<char*>& p) {
              ref::split_qkv(reinterpret_cast<float*>(p[0]), reinterpret_cast<B*>(p[1]), reinterpret_cast<B*>(p[2]),
                             reinterpret_cast<B*>(p[3]), reinterpret_cast<B*>(p[4]), hs, st);
            }, name);
    measure(ReferenceKernel::MERGE_HEADS, T, h, {{DType::F32, Th, false}, {DType::BF16, Th, true}},
            [&](const std::vector<char*>& p) { ref::merge_heads(reinterpret_cast<float*>(p[0]), reinterpret_cast<B*>(p[1]), hs, st); },
            name);
    measure(ReferenceKernel::SPLIT_HEADS, T, h, {{DType::F32, Th, false}, {DType::BF16, Th, true}},
            [&](const std::vector<char*>& p) { ref::split_heads(reinterpret_cast<float*>(p[0]), reinterpret_cast<B*>(p[1]), hs, st); },
            name);
    measure(ReferenceKernel::MERGE_QKV_GRAD, T, h,
            {{DType::F32, Th, false}, {DType::F32, Th, false}, {DType::F32, Th, false}, {DType::BF16, 3 * Th, true}},
            [&](const std::vector<char*>& p) {
              ref::merge_qkv_grad(reinterpret_cast<float*>(p[0]), reinterpret_cast<float*>(p[1]), reinterpret_cast<float*>(p[2]),
                                  reinterpret_cast<B*>(p[3]), hs, st);
            }, name);
    // Bias column sums: fp32 [T, h]; bf16 [T, 3h] and [T, 4h] (into a filled fp32 accumulator).
    measure(ReferenceKernel::COLUMN_SUM_FP32, T, h, {{DType::F32, Th, false}, {DType::F32, static_cast<std::size_t>(h), false}},
            [&](const std::vector<char*>& p) {
              ref::column_sum(reinterpret_cast<float*>(p[0]), reinterpret_cast<float*>(p[1]), ti, h, st);
            }, name);
    for (int mult : {3, 4}) {
      measure(ReferenceKernel::COLUMN_SUM_BF16, T, mult * h,
              {{DType::BF16, mult * Th, false}, {DType::F32, static_cast<std::size_t>(mult) * h, false}},
              [&, mult](const std::vector<char*>& p) {
                ref::column_sum(reinterpret_cast<B*>(p[0]), reinterpret_cast<float*>(p[1]), ti, mult * h, st);
              }, name + " x" + std::to_string(mult));
    }
  }
  // The optimizer's Adam over the rank's parameters and ZeRO-3's collective-stream kernels over a
  // shard (ref_param_store.cpp): the cast before an all-gather, the add after a reduce-scatter.
  // The rows' shards and stages hold 6 M to 6.4 G parameters; the rate is flat from 64 M up.
  const std::vector<long> elems = mode == Mode::QUICK ? std::vector<long>{1L << 22, 1L << 26}
                                                      : std::vector<long>{1L << 20, 1L << 22, 1L << 24, 1L << 26, 1L << 28};
  for (long n : elems) {
    const std::size_t un = static_cast<std::size_t>(n);
    const std::string name = "n " + std::to_string(n);
    // master, m, v, grad (v non-negative) accumulate across launches as in the step; the bf16 copy
    // is poisoned and checked.
    measure(ReferenceKernel::ADAM, static_cast<double>(n), 1,
            {{DType::F32, un, false, -1.0f, 1.0f}, {DType::F32, un, false, -0.1f, 0.1f}, {DType::F32, un, false, 0.0f, 0.01f},
             {DType::F32, un, false, -0.1f, 0.1f}, {DType::BF16, un, true}},
            [&](const std::vector<char*>& p) {
              ref::adam_step(reinterpret_cast<float*>(p[0]), reinterpret_cast<float*>(p[1]), reinterpret_cast<float*>(p[2]),
                             reinterpret_cast<float*>(p[3]), reinterpret_cast<B*>(p[4]), n, 1e-4f, 0.9f, 0.95f, 1e-8f, 3, st);
            }, name);
    measure(ReferenceKernel::CAST_FP32_TO_BF16, static_cast<double>(n), 1, {{DType::F32, un, false}, {DType::BF16, un, true}},
            [&](const std::vector<char*>& p) { ref::to_bf16(reinterpret_cast<float*>(p[0]), reinterpret_cast<B*>(p[1]), n, st); },
            name);
    // a accumulates b (filled, small) as the gradient shard does.
    measure(ReferenceKernel::ADD_INPLACE_FP32, static_cast<double>(n), 1,
            {{DType::F32, un, false}, {DType::F32, un, false, -1e-3f, 1e-3f}},
            [&](const std::vector<char*>& p) { ref::add_inplace(reinterpret_cast<float*>(p[0]), reinterpret_cast<float*>(p[1]), n, st); },
            name);
  }
  // The causal softmax: batch x heads rows of SEQ x SEQ scores (the rows have 16 to 64).
  const std::vector<int> bh = mode == Mode::QUICK ? std::vector<int>{16, 64} : std::vector<int>{8, 16, 20, 32, 40, 64, 128};
  for (int n : bh) {
    const long rows = 1L * n * SEQ;
    const std::size_t sq = static_cast<std::size_t>(rows) * SEQ;
    const std::string name = "batch*heads " + std::to_string(n) + " s" + std::to_string(SEQ);
    measure(ReferenceKernel::CAUSAL_SOFTMAX_FWD, static_cast<double>(rows), SEQ, {{DType::F32, sq, false, -4.0f, 4.0f}, {DType::BF16, sq, true}},
            [&](const std::vector<char*>& p) {
              ref::causal_softmax_forward(reinterpret_cast<float*>(p[0]), reinterpret_cast<B*>(p[1]), rows, SEQ, st);
            }, name);
    measure(ReferenceKernel::CAUSAL_SOFTMAX_BWD, static_cast<double>(rows), SEQ,
            {{DType::BF16, sq, false, 0.0f, 0.01f}, {DType::F32, sq, false}, {DType::BF16, sq, true}},
            [&](const std::vector<char*>& p) {
              ref::causal_softmax_backward(reinterpret_cast<B*>(p[0]), reinterpret_cast<float*>(p[1]), reinterpret_cast<B*>(p[2]), rows,
                                           SEQ, st);
            }, name);
  }
}

}  // namespace trainsim::calibrate
