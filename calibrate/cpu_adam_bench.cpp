#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "cpu_benchmarks.hpp"
#include "errors.hpp"
#include "huge_array.hpp"

namespace trainsim::calibrate {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Optimizer state of `count` parameters, filled by the pool's threads so each thread's pages
// are first touched where it runs (NUMA placement as in a real offloaded step).
struct AdamBuffers {
  HugeArray<float> params, grads, exp_avg, exp_avg_sq;
  HugeArray<std::uint16_t> half;
  AdamBuffers(std::size_t count, ThreadPool& pool, std::uint64_t seed)
      : params(count), grads(count), exp_avg(count), exp_avg_sq(count), half(count) {
    pool.run([&](int worker) {
      const auto [begin, end] = chunk_of(count, pool.size(), worker, 64);
      std::uint64_t state = seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(worker) + 1;
      auto uniform = [&state] {  // xorshift64*: fresh, reproducible data without a shared engine
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        return static_cast<float>((state * 0x2545f4914f6cdd1dULL) >> 40) / 16777216.0f;  // [0, 1)
      };
      for (std::size_t i = begin; i < end; ++i) {
        params[i] = 2.0f * uniform() - 1.0f;
        grads[i] = 1e-2f * (2.0f * uniform() - 1.0f);
        exp_avg[i] = 1e-3f * (2.0f * uniform() - 1.0f);
        exp_avg_sq[i] = 1e-5f * uniform();
        half[i] = 0xffff;  // poison: every element must be written by the step
      }
    });
  }
  AdamTensors tensors() {
    return {params.data(), grads.data(), exp_avg.data(), exp_avg_sq.data(), half.data(), params.size()};
  }
};

double rel_diff(float a, float b) {
  const double d = std::fabs(static_cast<double>(a) - static_cast<double>(b));
  const double scale = std::max(std::fabs(static_cast<double>(b)), 1e-30);
  return d / scale;
}

}  // namespace

std::string check_cpu_adam(Isa isa, ThreadPool& pool, std::size_t count, double max_rel) {
  double worst = 0;
  std::size_t bitwise_equal = 0, compared = 0;
  for (bool adamw : {true, false}) {
    for (HalfType half : {HalfType::BF16, HalfType::FP16}) {
      AdamHyper h;
      h.weight_decay = 0.01f;
      h.adamw = adamw;
      h.step = 7;
      AdamBuffers vec(count, pool, 42), ref(count, pool, 42);
      adam_step(h, vec.tensors(), half, isa, pool);
      adam_update_scalar(adam_constants(h), ref.tensors(), half);
      for (std::size_t i = 0; i < count; ++i) {
        const double d = std::max({rel_diff(vec.params[i], ref.params[i]), rel_diff(vec.exp_avg[i], ref.exp_avg[i]),
                                   rel_diff(vec.exp_avg_sq[i], ref.exp_avg_sq[i])});
        worst = std::max(worst, d);
        if (vec.params[i] == ref.params[i]) ++bitwise_equal;
        ++compared;
        const std::uint16_t expect =
            half == HalfType::FP16 ? float_to_fp16_bits(vec.params[i]) : float_to_bf16_bits(vec.params[i]);
        if (vec.half[i] != expect) {
          throw CalibrationError("CPU-Adam check failed: " + std::string(to_string(isa)) + " " +
                                 std::string(to_string(half)) + " copy of parameter " + std::to_string(i) +
                                 " is not the rounding of its fp32 value (unwritten or wrongly rounded)");
        }
      }
      if (!(worst <= max_rel)) {
        throw CalibrationError("CPU-Adam check failed: " + std::string(to_string(isa)) +
                               " differs from the scalar reference by a relative " + std::to_string(worst));
      }
    }
  }
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "%s kernel vs scalar reference on %zu params (AdamW and L2 decay, bf16 and fp16 copies): max rel "
                "diff %.3g, %.4f%% bitwise equal; every half copy equals the rounding of its fp32 value",
                std::string(to_string(isa)).c_str(), count, worst,
                100.0 * static_cast<double>(bitwise_equal) / static_cast<double>(compared));
  return buf;
}

void run_cpu_adam_bench(Mode mode, int max_threads, Results& results) {
  const int all = max_threads > 0 ? max_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const Isa isa = best_isa();
  std::vector<int> thread_counts;
  std::vector<std::size_t> sizes;
  if (mode == Mode::QUICK) {
    thread_counts = {1, all};
    sizes = {1u << 20, 64u << 20};
  } else {
    for (int t = 1; t < all; t *= 2) thread_counts.push_back(t);
    thread_counts.push_back(all);
    sizes = {1u << 20, 16u << 20, 64u << 20};
  }
  thread_counts.erase(std::unique(thread_counts.begin(), thread_counts.end()), thread_counts.end());
  const int samples = mode == Mode::QUICK ? 5 : 7;
  // The headline configuration (largest size, all threads) gets more and longer samples: memory
  // bandwidth on a shared host drifts, and a longer median averages more of it.
  const int headline_samples = 9;
  std::string check;
  {
    ThreadPool pool(all);
    check = check_cpu_adam(isa, pool);
  }
  results.note("cpu_adam: " + check);
  for (std::size_t count : sizes) {
    for (int threads : thread_counts) {
      for (HalfType half : {HalfType::BF16, HalfType::FP16}) {
        // fp16 only where it is compared with bf16: the largest size on all threads.
        if (half == HalfType::FP16 && (threads != all || count != sizes.back())) continue;
        ThreadPool pool(threads);
        AdamBuffers b(count, pool, 7 + static_cast<std::uint64_t>(threads));
        AdamHyper h;
        h.weight_decay = 0.01f;
        adam_step(h, b.tensors(), half, isa, pool);  // warm-up (and every half copy written once)
        for (std::size_t i = 0; i < count; i += 4099) {
          if (b.half[i] == 0xffff) throw CalibrationError("CPU-Adam left a half copy unwritten");
        }
        const double t0 = now_s();
        h.step = 2;
        adam_step(h, b.tensors(), half, isa, pool);
        const double one = now_s() - t0;
        const bool headline = threads == all && count == sizes.back();
        const double sample_s = headline ? 0.25 : 0.05;
        const int steps = std::max(1, static_cast<int>(std::ceil(sample_s / std::max(one, 1e-9))));
        std::vector<double> seconds;
        for (int s = 0; s < (headline ? headline_samples : samples); ++s) {
          const double start = now_s();
          for (int k = 0; k < steps; ++k) {
            h.step += 1;
            adam_step(h, b.tensors(), half, isa, pool);
          }
          seconds.push_back((now_s() - start) / steps);
        }
        Measurement m;
        m.bench = "cpu_adam";
        m.what = std::string(to_string(half));
        m.params = {{"params", count}, {"threads", threads}, {"isa", std::string(to_string(isa))},
                    {"steps_per_sample", steps},
                    {"bytes_per_param", 30}};  // read p, g, m, v (16 B); write p, m, v (12 B) and the copy (2 B)
        m.unit = "params_per_s";
        m.stats = summarize(rates(static_cast<double>(count), seconds));
        m.check = check;
        results.add(std::move(m));
      }
    }
  }
}

}  // namespace trainsim::calibrate
