// NCCL collectives in one process, one communicator rank per GPU (ncclCommInitAll), for every
// group size from 2 to the number of GPUs. Sizes and bandwidths follow nccl-tests
// (doc/PERFORMANCE.md): `bytes` is the size nccl-tests prints (all-reduce and broadcast: the
// buffer; all-gather: the gathered output; reduce-scatter: the input; send/recv: the message),
// algbw = bytes / time, and busbw = algbw * factor with factor 2(n-1)/n for all-reduce,
// (n-1)/n for all-gather and reduce-scatter, and 1 for broadcast and send/recv, so busbw is
// comparable with the link speed whatever the group size.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>

#include "../gpu_benchmarks.hpp"
#include "cuda_check.hpp"
#include "device_memory.hpp"
#include "nccl_check.hpp"

namespace trainsim::calibrate {
namespace {

struct OpInfo {
  Collective op;
  const char* name;
};
constexpr OpInfo OPS[] = {{Collective::ALL_REDUCE, "all_reduce"},
                          {Collective::ALL_GATHER, "all_gather"},
                          {Collective::REDUCE_SCATTER, "reduce_scatter"},
                          {Collective::BROADCAST, "broadcast"},
                          {Collective::SEND_RECV, "send_recv"}};

double bus_factor(Collective op, int n) {
  switch (op) {
    case Collective::ALL_REDUCE: return 2.0 * (n - 1) / n;
    case Collective::ALL_GATHER:
    case Collective::REDUCE_SCATTER: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

struct Rank {
  int device;
  Stream stream;
  DeviceBuffer send, recv;
  Rank(int dev, std::size_t bytes) : device(dev), stream(dev), send(dev, bytes), recv(dev, bytes) {}
};

class Group {
 public:
  Group(const std::vector<int>& devices, std::size_t max_bytes) : comms_(devices.size()) {
    NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()));
    for (int d : devices) ranks_.push_back(std::make_unique<Rank>(d, max_bytes));
  }
  ~Group() {
    for (auto c : comms_) ncclCommDestroy(c);
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  int size() const { return static_cast<int>(comms_.size()); }
  Rank& rank(int r) { return *ranks_[static_cast<std::size_t>(r)]; }

  // One collective on every rank, as a group (one thread drives all GPUs, as nccl-tests -g).
  void run(Collective op, std::size_t count) {
    const int n = size();
    NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      Rank& k = rank(r);
      const cudaStream_t s = k.stream.get();
      ncclComm_t c = comms_[static_cast<std::size_t>(r)];
      switch (op) {
        case Collective::ALL_REDUCE: NCCL_CHECK(ncclAllReduce(k.send.get(), k.recv.get(), count, ncclFloat, ncclSum, c, s)); break;
        case Collective::ALL_GATHER: NCCL_CHECK(ncclAllGather(k.send.get(), k.recv.get(), count, ncclFloat, c, s)); break;
        case Collective::REDUCE_SCATTER:
          NCCL_CHECK(ncclReduceScatter(k.send.get(), k.recv.get(), count, ncclFloat, ncclSum, c, s));
          break;
        case Collective::BROADCAST: NCCL_CHECK(ncclBroadcast(k.send.get(), k.recv.get(), count, ncclFloat, 0, c, s)); break;
        case Collective::SEND_RECV:
          NCCL_CHECK(ncclSend(k.send.get(), count, ncclFloat, (r + 1) % n, c, s));
          NCCL_CHECK(ncclRecv(k.recv.get(), count, ncclFloat, (r + n - 1) % n, c, s));
          break;
      }
    }
    NCCL_CHECK(ncclGroupEnd());
  }
  void sync() {
    for (auto& r : ranks_) r->stream.sync();
  }

 private:
  std::vector<ncclComm_t> comms_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void run_nccl_bench(Mode mode, const GpuInfo& info, Results& results) {
  // NVLink SHARP (multicast) stays off unless the caller decided otherwise: on shared hosts it
  // can take the GPUs out of service for everyone.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  const int n_all = static_cast<int>(info.devices.size());
  if (n_all < 2) {
    results.note("nccl: skipped, one GPU only (collectives need a group of at least 2)");
    return;
  }
  std::vector<std::size_t> sizes;
  if (mode == Mode::QUICK) {
    for (std::size_t s = 1024; s <= (std::size_t{1} << 30); s *= 16) sizes.push_back(s);
  } else {
    for (std::size_t s = 1024; s <= (std::size_t{2} << 30); s *= 2) sizes.push_back(s);
  }
  const int samples = mode == Mode::QUICK ? 5 : 7;
  for (int g = 2; g <= n_all; ++g) {
    std::vector<int> devices;
    for (int i = 0; i < g; ++i) devices.push_back(info.devices[static_cast<std::size_t>(i)].index);
    Group group(devices, sizes.back());
    for (const auto& [op, name] : OPS) {
      for (std::size_t size : sizes) {
        // Element counts as nccl-tests derives them from the printed size.
        const bool per_rank = op == Collective::ALL_GATHER || op == Collective::REDUCE_SCATTER;
        const std::size_t count = per_rank ? size / (4 * static_cast<std::size_t>(g)) : size / 4;
        if (count == 0) continue;
        const std::size_t bytes = per_rank ? count * 4 * static_cast<std::size_t>(g) : count * 4;
        const std::size_t in_count = op == Collective::REDUCE_SCATTER ? count * g : count;
        const std::size_t out_count = op == Collective::ALL_GATHER ? count * g : count;
        for (int r = 0; r < g; ++r) {
          Rank& k = group.rank(r);
          DeviceGuard guard(k.device);
          nccl_fill_input(k.send.as<float>(), in_count, r, k.stream.get());
          CUDA_CHECK(cudaMemsetAsync(k.recv.get(), 0xff, out_count * 4, k.stream.get()));
        }
        group.sync();
        group.run(op, count);
        group.sync();
        for (int r = 0; r < g; ++r) {
          Rank& k = group.rank(r);
          DeviceGuard guard(k.device);
          const std::size_t wrong = nccl_count_wrong(op, k.recv.as<float>(), out_count, count, r, g, k.stream.get());
          if (wrong != 0) {
            throw CalibrationError(std::string("NCCL ") + name + " check failed at " + std::to_string(bytes) +
                                   " bytes: rank " + std::to_string(r) + " has " + std::to_string(wrong) + " wrong elements");
          }
        }
        // Warm-up, then enough back-to-back operations per sample for about 5 ms.
        double t0 = now_s();
        for (int i = 0; i < 5; ++i) group.run(op, count);
        group.sync();
        const double one = std::max((now_s() - t0) / 5, 1e-7);
        const int iters = static_cast<int>(std::clamp(5e-3 / one, 1.0, 200.0));
        std::vector<double> seconds;
        for (int s = 0; s < samples; ++s) {
          t0 = now_s();
          for (int i = 0; i < iters; ++i) group.run(op, count);
          group.sync();
          seconds.push_back((now_s() - t0) / iters);
        }
        const Stats alg = summarize(rates(static_cast<double>(bytes) / 1e9, seconds));
        const double factor = bus_factor(op, g);
        Measurement m;
        m.bench = "nccl";
        m.what = name;
        m.params = {{"bytes", bytes}, {"group_size", g}, {"dtype", "float32"}, {"count", count},
                    {"iters", iters}, {"bus_factor", factor}, {"algbw_GBps_median", alg.median}};
        m.unit = "GBps";
        m.stats = summarize(rates(static_cast<double>(bytes) * factor / 1e9, seconds));
        m.check = "outputs poisoned, then every element of every rank compared with its exact expected value: 0 wrong";
        results.add(std::move(m));
      }
    }
  }
}

}  // namespace trainsim::calibrate
