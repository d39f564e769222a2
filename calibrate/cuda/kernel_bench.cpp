// Achieved device-memory bandwidth by size: the device copy (cudaMemcpyAsync, device to device)
// and our layer-norm, GELU and softmax kernels. Small sizes rotate through a 256 MiB arena so
// repeated launches do not run from the 50 MB L2 cache.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "../cpu_adam.hpp"  // bf16 bit conversions on the host
#include "../gpu_benchmarks.hpp"
#include "cuda_check.hpp"
#include "device_memory.hpp"
#include "device_timing.hpp"
#include "device_util.hpp"
#include "memory_kernels.hpp"

namespace trainsim::calibrate {
namespace {

constexpr std::size_t MiB = 1u << 20;
constexpr std::size_t ROTATION_BYTES = 256 * MiB;
constexpr double TOLERANCE = 1e-2;  // bf16 outputs: rounding alone is up to 2^-9 per element

std::vector<float> fetch_bf16(const void* device_ptr, std::size_t count, cudaStream_t s) {
  std::vector<std::uint16_t> bits(count);
  CUDA_CHECK(cudaMemcpyAsync(bits.data(), device_ptr, count * 2, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = bf16_bits_to_float(bits[i]);
  return out;
}

struct ErrorSum {
  double num = 0, den = 0;
  void add(double got, double ref) {
    num += (got - ref) * (got - ref);
    den += ref * ref;
  }
  double rel() const { return den > 0 ? std::sqrt(num / den) : INFINITY; }
};

// The sampled host check of one kernel's output at slot 0: returns ||y - ref|| / ||ref||.
double check_kernel(const std::string& what, const char* in, const char* out, std::size_t bytes,
                    const std::vector<float>& gamma, const std::vector<float>& beta, std::mt19937_64& rng, cudaStream_t s) {
  ErrorSum e;
  if (what == "gelu") {
    const std::size_t count = bytes / 2, chunk = std::min<std::size_t>(count, 65536);
    const std::size_t start = (rng() % (count - chunk + 1)) / 8 * 8;
    const auto x = fetch_bf16(in + start * 2, chunk, s), y = fetch_bf16(out + start * 2, chunk, s);
    for (std::size_t i = 0; i < chunk; ++i) e.add(y[i], gelu_reference(x[i]));
    return e.rel();
  }
  const std::size_t cols = what == "layernorm" ? LN_HIDDEN : SOFTMAX_COLS;
  const std::size_t rows = bytes / (2 * cols);
  for (int r = 0; r < 16; ++r) {
    const std::size_t row = rng() % rows;
    const auto x = fetch_bf16(in + row * cols * 2, cols, s), y = fetch_bf16(out + row * cols * 2, cols, s);
    if (what == "layernorm") {
      double mean = 0, var = 0;
      for (float v : x) mean += v;
      mean /= static_cast<double>(cols);
      for (float v : x) var += (v - mean) * (v - mean);
      var /= static_cast<double>(cols);
      const double rstd = 1.0 / std::sqrt(var + LN_EPS);
      for (std::size_t i = 0; i < cols; ++i) e.add(y[i], (x[i] - mean) * rstd * gamma[i] + beta[i]);
    } else {
      const double mx = *std::max_element(x.begin(), x.end());
      double sum = 0;
      for (float v : x) sum += std::exp(v - mx);
      for (std::size_t i = 0; i < cols; ++i) e.add(y[i], std::exp(x[i] - mx) / sum);
    }
  }
  return e.rel();
}

}  // namespace

void run_kernel_bench(Mode mode, const GpuInfo& info, Results& results) {
  const int dev = info.devices.front().index;
  DeviceGuard guard(dev);
  Stream stream(dev);
  const cudaStream_t st = stream.get();
  std::vector<std::size_t> sizes;
  if (mode == Mode::QUICK) {
    sizes = {1 * MiB, 16 * MiB, 256 * MiB, 1024 * MiB};
  } else {
    for (std::size_t s = MiB; s <= 4096 * MiB; s *= 4) sizes.push_back(s);
  }
  const std::size_t arena = std::max(sizes.back(), ROTATION_BYTES);
  DeviceBuffer in(dev, arena), out(dev, arena), gamma_d(dev, LN_HIDDEN * 2), beta_d(dev, LN_HIDDEN * 2);
  std::mt19937_64 rng(std::random_device{}());
  const TimingPlan plan{3, mode == Mode::QUICK ? 7 : 9, 2e-3, 5000};

  auto record = [&](const std::string& what, std::size_t bytes, double moved, int slots, const Timing& t,
                    const std::string& check) {
    Measurement m;
    m.bench = "kernels";
    m.what = what;
    m.params = {{"bytes", bytes}, {"moved_bytes", moved}, {"slots", slots}, {"gpu", dev}, {"reps", t.reps}};
    m.unit = "GBps";
    m.stats = summarize(rates(moved / 1e9, t.seconds));
    m.check = check;
    results.add(std::move(m));
  };

  // Device copy: a word pattern in, poison out, every word compared.
  for (std::size_t bytes : sizes) {
    const std::uint64_t seed = rng();
    fill_pattern(in.as<std::uint64_t>(), bytes / 8, seed, st);
    poison(out.get(), bytes, st);
    CUDA_CHECK(cudaMemcpyAsync(out.get(), in.get(), bytes, cudaMemcpyDeviceToDevice, st));
    const std::size_t bad = count_pattern_mismatches(out.as<std::uint64_t>(), bytes / 8, seed, st);
    if (bad != 0) throw CalibrationError("device copy check failed: " + std::to_string(bad) + " words wrong");
    const int slots = static_cast<int>(std::clamp<std::size_t>(arena / bytes, 1, 256));
    int next = 0;
    const Timing t = time_on_stream(stream, [&] {
      const std::size_t off = static_cast<std::size_t>(next++ % slots) * bytes;
      CUDA_CHECK(cudaMemcpyAsync(out.as<char>() + off, in.as<char>() + off, bytes, cudaMemcpyDeviceToDevice, st));
    }, plan);
    record("copy", bytes, 2.0 * static_cast<double>(bytes), slots, t,
           "destination poisoned; all " + std::to_string(bytes / 8) + " 64-bit words compared with the source pattern: 0 wrong");
  }

  // The kernels read random bf16 inputs in [-4, 4) from every slot.
  fill_uniform(in.get(), arena / 2, DType::BF16, rng(), -4.0f, 4.0f, st);
  fill_uniform(gamma_d.get(), LN_HIDDEN, DType::BF16, rng(), 0.5f, 1.5f, st);
  fill_uniform(beta_d.get(), LN_HIDDEN, DType::BF16, rng(), -0.5f, 0.5f, st);
  const auto gamma = fetch_bf16(gamma_d.get(), LN_HIDDEN, st), beta = fetch_bf16(beta_d.get(), LN_HIDDEN, st);
  for (const std::string what : {"layernorm", "gelu", "softmax"}) {
    for (std::size_t bytes : sizes) {
      const int slots = static_cast<int>(std::clamp<std::size_t>(arena / bytes, 1, 256));
      auto launch_at = [&](int slot) {
        const char* x = in.as<char>() + static_cast<std::size_t>(slot) * bytes;
        char* y = out.as<char>() + static_cast<std::size_t>(slot) * bytes;
        if (what == "layernorm") {
          launch_layernorm(x, gamma_d.get(), beta_d.get(), y, static_cast<std::int64_t>(bytes / (2 * LN_HIDDEN)), st);
        } else if (what == "gelu") {
          launch_gelu(x, y, bytes / 2, st);
        } else {
          launch_softmax(x, y, static_cast<std::int64_t>(bytes / (2 * SOFTMAX_COLS)), st);
        }
      };
      poison(out.get(), bytes, st);
      launch_at(0);
      const std::size_t unwritten = count_nonfinite(out.get(), bytes / 2, DType::BF16, st);
      const double err = check_kernel(what, in.as<char>(), out.as<char>(), bytes, gamma, beta, rng, st);
      char check[200];
      std::snprintf(check, sizeof(check),
                    "rel err %.3g (limit %.0e) vs fp64 host reference on sampled rows; %zu of %zu poisoned outputs "
                    "left unwritten",
                    err, TOLERANCE, unwritten, bytes / 2);
      if (unwritten != 0 || !(err <= TOLERANCE)) throw CalibrationError(what + " kernel check failed: " + check);
      int next = 0;
      const Timing t = time_on_stream(stream, [&] { launch_at(next++ % slots); }, plan);
      const double moved = 2.0 * static_cast<double>(bytes) + (what == "layernorm" ? 4.0 * LN_HIDDEN : 0.0);
      record(what, bytes, moved, slots, t, check);
    }
  }
}

}  // namespace trainsim::calibrate
