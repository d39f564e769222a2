// Host dispatch: what one kernel launch costs the launching CPU thread (cudaLaunchKernel of an
// empty kernel, back to back, the queue never full), and the shortest time a kernel occupies the
// GPU when kernels are queued back to back (empty kernels queued behind a spinning one, so the GPU
// never waits for the host). A framework's eager mode adds its own dispatch on top of the launch
// (PyTorch: dispatcher, autograd, allocator); calibrate/scripts/torch_microbench.py measures that
// per operator and per module hook, and per transformer layer for each stack.
#include <chrono>

#include "../gpu_benchmarks.hpp"
#include "cuda_check.hpp"
#include "device_memory.hpp"
#include "host_dispatch_kernels.hpp"

namespace trainsim::calibrate {
namespace {

constexpr int LAUNCHES = 2000;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void run_host_dispatch_bench(Mode mode, const GpuInfo& info, Results& results) {
  const int device = info.devices.front().index;
  DeviceGuard g(device);
  Stream stream(device);
  const int samples = mode == Mode::QUICK ? 5 : 9;
  // Warm-up: module load and the first launches.
  for (int i = 0; i < 100; ++i) launch_empty_kernel(stream.get());
  CUDA_CHECK_LAUNCH();
  stream.sync();
  std::vector<double> launch_s, gpu_s;
  int clock_khz = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  Event start(device), stop(device);
  for (int s = 0; s < samples; ++s) {
    // Host cost: the launch loop's wall time, the GPU keeping up (an empty kernel is shorter than a launch).
    const double t0 = now_s();
    for (int i = 0; i < LAUNCHES; ++i) launch_empty_kernel(stream.get());
    launch_s.push_back((now_s() - t0) / LAUNCHES);
    CUDA_CHECK_LAUNCH();
    stream.sync();
    // GPU cost: queued behind a spin of about 20 ms, longer than the launches take.
    launch_spin_kernel(static_cast<long long>(clock_khz) * 20, stream.get());
    start.record(stream.get());
    for (int i = 0; i < LAUNCHES; ++i) launch_empty_kernel(stream.get());
    stop.record(stream.get());
    CUDA_CHECK_LAUNCH();
    gpu_s.push_back(elapsed_seconds(start, stop) / LAUNCHES);
  }
  Measurement host;
  host.bench = "host_dispatch";
  host.what = "kernel_launch";
  host.params = {{"gpu", device}, {"launches", LAUNCHES}, {"kernel", "empty, 1 block of 1 thread"}};
  host.unit = "us";
  std::vector<double> us;
  for (double v : launch_s) us.push_back(v * 1e6);
  host.stats = summarize(us);
  host.check = "every launch's error code checked after the loop (cudaGetLastError)";
  results.add(std::move(host));
  Measurement gpu;
  gpu.bench = "host_dispatch";
  gpu.what = "gpu_kernel";
  gpu.params = {{"gpu", device}, {"launches", LAUNCHES}, {"kernel", "empty, queued behind a 20 ms spin"}};
  gpu.unit = "us";
  us.clear();
  for (double v : gpu_s) us.push_back(v * 1e6);
  gpu.stats = summarize(us);
  gpu.check = host.check;
  results.add(std::move(gpu));
}

}  // namespace trainsim::calibrate
