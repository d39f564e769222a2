#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "cpu_benchmarks.hpp"
#include "errors.hpp"
#include "huge_array.hpp"

namespace trainsim::calibrate {

// Host memory bandwidth as a parallel memcpy of 1 GiB on all logical CPUs, counting bytes read
// plus bytes written (the same convention as the device copy): the host.memory_GBps of the
// profile, which the simulator uses for CPU-side optimizer and staging traffic.
void run_host_memory_bench(Mode mode, Results& results) {
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::size_t bytes = std::size_t{1} << 30;
  ThreadPool pool(threads);
  HugeArray<std::uint64_t> src(bytes / 8), dst(bytes / 8);
  pool.run([&](int w) {
    const auto [b, e] = chunk_of(src.size(), pool.size(), w, 512);
    for (std::size_t i = b; i < e; ++i) {
      src[i] = i * 0x9e3779b97f4a7c15ULL;
      dst[i] = ~std::uint64_t{0};  // poison
    }
  });
  auto copy = [&] {
    pool.run([&](int w) {
      const auto [b, e] = chunk_of(src.size(), pool.size(), w, 512);
      if (b < e) std::memcpy(dst.data() + b, src.data() + b, (e - b) * 8);
    });
  };
  copy();  // warm-up
  if (std::memcmp(src.data(), dst.data(), bytes) != 0) throw CalibrationError("host memory copy check failed");
  std::vector<double> seconds;
  const int samples = mode == Mode::QUICK ? 5 : 9;
  for (int s = 0; s < samples; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    copy();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  Measurement m;
  m.bench = "host_memory";
  m.what = "copy";
  m.params = {{"bytes", bytes}, {"threads", threads}};
  m.unit = "GBps";
  m.stats = summarize(rates(2.0 * static_cast<double>(bytes) / 1e9, seconds));
  m.check = "destination poisoned, then compared in full with the source after the first copy";
  results.add(std::move(m));
}

}  // namespace trainsim::calibrate
