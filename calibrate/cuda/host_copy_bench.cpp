// Host <-> device copies (pinned and pageable, each direction and both at once, on 1..N GPUs
// at once so a shared PCIe switch or root complex shows), their latency, and GPU <-> GPU copies
// over NVLink or PCIe peer-to-peer. Bandwidth is aggregate: all GPUs and, for "bidir", both
// directions together; GB = 1e9 bytes.
#include <algorithm>
#include <cstring>
#include <memory>
#include <random>

#include "../gpu_benchmarks.hpp"
#include "concurrent_timing.hpp"
#include "cuda_check.hpp"
#include "device_memory.hpp"
#include "device_util.hpp"

namespace trainsim::calibrate {
namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * KiB;

// Host memory that is either pinned (cudaHostAlloc) or ordinary pageable memory (faulted in).
class HostMemory {
 public:
  HostMemory(bool pinned, std::size_t bytes) : bytes_(bytes) {
    if (pinned) {
      pinned_ = std::make_unique<PinnedBuffer>(bytes);
      ptr_ = pinned_->get();
    } else {
      pageable_.reset(new char[bytes]);
      std::memset(pageable_.get(), 0, bytes);
      ptr_ = pageable_.get();
    }
  }
  std::uint64_t* words() const { return static_cast<std::uint64_t*>(ptr_); }
  char* bytes_ptr() const { return static_cast<char*>(ptr_); }

 private:
  std::size_t bytes_;
  std::unique_ptr<PinnedBuffer> pinned_;
  std::unique_ptr<char[]> pageable_;
  void* ptr_ = nullptr;
};

struct GpuSide {
  int device;
  DeviceBuffer src, dst;  // src: read by d2h; dst: written by h2d
  Stream up, down;        // h2d and d2h streams, so "bidir" overlaps them
  GpuSide(int dev, std::size_t bytes) : device(dev), src(dev, bytes), dst(dev, bytes), up(dev), down(dev) {}
};

struct HostSide {
  HostMemory src, dst;  // src: read by h2d; dst: written by d2h
  HostSide(bool pinned, std::size_t bytes) : src(pinned, bytes), dst(pinned, bytes) {}
};

std::size_t host_mismatches(const std::uint64_t* words, std::size_t n, std::uint64_t seed) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad += words[i] != pattern_word(i, seed);
  return bad;
}

// One copy of `bytes` in each asked direction on one GPU, checked word by word.
void check_copy(GpuSide& g, HostSide& h, bool up, bool down, std::size_t bytes, std::uint64_t host_seed,
                std::uint64_t dev_seed) {
  DeviceGuard guard(g.device);
  if (up) {
    poison(g.dst.get(), bytes, g.up.get());
    CUDA_CHECK(cudaMemcpyAsync(g.dst.get(), h.src.bytes_ptr(), bytes, cudaMemcpyHostToDevice, g.up.get()));
    const std::size_t bad = count_pattern_mismatches(g.dst.as<std::uint64_t>(), bytes / 8, host_seed, g.up.get());
    if (bad) throw CalibrationError("host-to-device copy check failed: " + std::to_string(bad) + " words wrong");
  }
  if (down) {
    std::memset(h.dst.bytes_ptr(), 0xff, bytes);
    CUDA_CHECK(cudaMemcpyAsync(h.dst.bytes_ptr(), g.src.get(), bytes, cudaMemcpyDeviceToHost, g.down.get()));
    g.down.sync();
    const std::size_t bad = host_mismatches(h.dst.words(), bytes / 8, dev_seed);
    if (bad) throw CalibrationError("device-to-host copy check failed: " + std::to_string(bad) + " words wrong");
  }
}

void latency(const char* bench, const char* what, int samples, const std::function<void()>& one_copy, Results& results,
             nlohmann::ordered_json params) {
  for (int i = 0; i < 20; ++i) one_copy();
  std::vector<double> us;
  for (int i = 0; i < samples; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    one_copy();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  Measurement m{bench, what, std::move(params), "us", summarize(us),
                "8-byte copy followed by a stream synchronize; time seen by the host"};
  results.add(std::move(m));
}

}  // namespace

void run_host_copy_bench(Mode mode, const GpuInfo& info, Results& results) {
  const bool quick = mode == Mode::QUICK;
  std::vector<std::size_t> sizes;
  if (quick) {
    sizes = {64 * KiB, 1 * MiB, 16 * MiB, 256 * MiB, 1024 * MiB};
  } else {
    for (std::size_t s = 64 * KiB; s <= 1024 * MiB; s *= 4) sizes.push_back(s);
  }
  const std::size_t max_bytes = sizes.back();
  const int n = static_cast<int>(info.devices.size());
  std::mt19937_64 rng(std::random_device{}());
  const std::uint64_t host_seed = rng(), dev_seed = rng();
  std::vector<std::unique_ptr<GpuSide>> gpus;
  for (const auto& d : info.devices) {
    DeviceGuard guard(d.index);
    gpus.push_back(std::make_unique<GpuSide>(d.index, max_bytes));
    fill_pattern(gpus.back()->src.as<std::uint64_t>(), max_bytes / 8, dev_seed, gpus.back()->up.get());
    gpus.back()->up.sync();
  }
  const int samples = quick ? 5 : 7;
  for (bool pinned : {true, false}) {
    std::vector<std::unique_ptr<HostSide>> hosts;
    for (int i = 0; i < n; ++i) {
      hosts.push_back(std::make_unique<HostSide>(pinned, max_bytes));
      auto* w = hosts.back()->src.words();
      for (std::size_t k = 0; k < max_bytes / 8; ++k) w[k] = pattern_word(k, host_seed);
    }
    const char* kind = pinned ? "pinned" : "pageable";
    for (const char* dir : {"h2d", "d2h", "bidir"}) {
      const bool up = dir[0] != 'd', down = dir[0] != 'h';
      std::vector<int> counts;
      for (int g = 1; g <= n; ++g) {
        if (quick && g != 1 && g != n) continue;
        if (quick && !pinned && (g != 1 || !std::strcmp(dir, "bidir"))) continue;
        counts.push_back(g);
      }
      for (int g : counts) {
        for (std::size_t bytes : sizes) {
          for (int i = 0; i < g; ++i) check_copy(*gpus[static_cast<std::size_t>(i)], *hosts[static_cast<std::size_t>(i)], up, down, bytes, host_seed, dev_seed);
          // Enough back-to-back copies per sample that one sample moves about 64 MiB per GPU.
          const int reps = static_cast<int>(std::clamp<std::size_t>(64 * MiB / bytes, 1, 1024));
          const auto seconds = time_concurrent(g, 2, samples, [&](int slot) {
            GpuSide& gs = *gpus[static_cast<std::size_t>(slot)];
            HostSide& hs = *hosts[static_cast<std::size_t>(slot)];
            CUDA_CHECK(cudaSetDevice(gs.device));
            for (int r = 0; r < reps; ++r) {
              if (up) CUDA_CHECK(cudaMemcpyAsync(gs.dst.get(), hs.src.bytes_ptr(), bytes, cudaMemcpyHostToDevice, gs.up.get()));
              if (down) CUDA_CHECK(cudaMemcpyAsync(hs.dst.bytes_ptr(), gs.src.get(), bytes, cudaMemcpyDeviceToHost, gs.down.get()));
            }
            gs.up.sync();
            gs.down.sync();
          });
          const double moved = static_cast<double>(bytes) * reps * g * (up && down ? 2 : 1);
          Measurement m{"host_copy", std::string(dir) + "_" + kind,
                        {{"bytes", bytes}, {"gpus", g}, {"reps", reps}}, "GBps", summarize(rates(moved / 1e9, seconds)),
                        "destination poisoned, then every 64-bit word compared with the source pattern (one copy per "
                        "GPU and direction): 0 wrong"};
          results.add(std::move(m));
        }
      }
    }
    if (pinned) {
      GpuSide& g0 = *gpus.front();
      HostSide& h0 = *hosts.front();
      DeviceGuard guard(g0.device);
      latency("host_copy", "latency_h2d_pinned", 200, [&] {
        CUDA_CHECK(cudaMemcpyAsync(g0.dst.get(), h0.src.bytes_ptr(), 8, cudaMemcpyHostToDevice, g0.up.get()));
        g0.up.sync();
      }, results, {{"bytes", 8}, {"gpus", 1}});
    }
  }

  if (n < 2) return;
  // GPU 0 <-> GPU 1: the intra-node fabric as one pair of GPUs sees it.
  GpuSide& a = *gpus[0];
  GpuSide& b = *gpus[1];
  for (auto [x, y] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    DeviceGuard guard(x->device);
    const cudaError_t e = cudaDeviceEnablePeerAccess(y->device, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();
    } else if (e != cudaSuccess && info.p2p_all_pairs) {
      CUDA_CHECK(e);
    } else {
      cudaGetLastError();  // no peer access: copies are staged through the host, and measured so
    }
  }
  for (bool both : {false, true}) {
    for (std::size_t bytes : sizes) {
      for (auto [x, y] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
        if (!both && x == &b) continue;
        {
          DeviceGuard guard(y->device);
          poison(y->dst.get(), bytes, y->up.get());
          y->up.sync();
        }
        {
          DeviceGuard guard(x->device);
          CUDA_CHECK(cudaMemcpyPeerAsync(y->dst.get(), y->device, x->src.get(), x->device, bytes, x->down.get()));
          x->down.sync();
        }
        DeviceGuard guard(y->device);
        const std::size_t bad = count_pattern_mismatches(y->dst.as<std::uint64_t>(), bytes / 8, dev_seed, y->up.get());
        if (bad) throw CalibrationError("peer copy check failed: " + std::to_string(bad) + " words wrong");
      }
      const int reps = static_cast<int>(std::clamp<std::size_t>(256 * MiB / bytes, 1, 1024));
      const auto seconds = time_concurrent(both ? 2 : 1, 2, samples, [&](int slot) {
        GpuSide& from = slot == 0 ? a : b;
        GpuSide& to = slot == 0 ? b : a;
        CUDA_CHECK(cudaSetDevice(from.device));
        for (int r = 0; r < reps; ++r) {
          CUDA_CHECK(cudaMemcpyPeerAsync(to.dst.get(), to.device, from.src.get(), from.device, bytes, from.down.get()));
        }
        from.down.sync();
      });
      const double moved = static_cast<double>(bytes) * reps * (both ? 2 : 1);
      Measurement m{"p2p", both ? "bidir" : "unidir", {{"bytes", bytes}, {"gpus", 2}, {"reps", reps},
                    {"peer_access", info.p2p_all_pairs}}, "GBps", summarize(rates(moved / 1e9, seconds)),
                    "destination poisoned, then every 64-bit word compared with the source pattern: 0 wrong"};
      results.add(std::move(m));
    }
  }
  DeviceGuard guard(a.device);
  latency("p2p", "latency", 200, [&] {
    CUDA_CHECK(cudaMemcpyPeerAsync(b.dst.get(), b.device, a.src.get(), a.device, 8, a.down.get()));
    a.down.sync();
  }, results, {{"bytes", 8}, {"gpus", 2}});
}

}  // namespace trainsim::calibrate
