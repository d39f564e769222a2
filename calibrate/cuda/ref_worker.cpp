#include "ref_worker.hpp"

#include <barrier>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include "cuda_check.hpp"
#include "ref_gemm.hpp"
#include "ref_model.hpp"
#include "ref_param_store.hpp"
#include "ref_threads.hpp"

namespace trainsim::calibrate::ref {
namespace {

constexpr std::size_t GEMM_WORKSPACE = 32u << 20;

struct Streams {
  cudaStream_t compute = nullptr, collective = nullptr;
  explicit Streams(int) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&collective, cudaStreamNonBlocking));
  }
  ~Streams() {
    cudaStreamDestroy(compute);
    cudaStreamDestroy(collective);
  }
};

struct DeviceMem {
  void* p = nullptr;
  explicit DeviceMem(std::size_t bytes) { CUDA_CHECK(cudaMalloc(&p, bytes)); }
  ~DeviceMem() { cudaFree(p); }
};

RankOutcome run_rank(const RankJob& job, int rank, int world, ncclComm_t comm, std::barrier<>& sync) {
  CUDA_CHECK(cudaSetDevice(rank));
  const ParamLayout layout = make_layout(job.model, world);
  Streams st(rank);
  DeviceMem workspace(GEMM_WORKSPACE);
  GemmRunner gemm(workspace.p, GEMM_WORKSPACE);
  ParamStore store(layout, rank, world, comm, st.compute, st.collective, job.offload, job.cpu_threads,
                   job.storage_dir);
  GptGpu model(job.model, layout, job.recompute, {}, job.host_checkpoints);
  const std::size_t T = static_cast<std::size_t>(job.model.tokens());
  const std::vector<Batch>& batches = job.batches.at(rank);
  // Sizing pass, then the real one.
  auto place = [&](Arena& a, std::vector<std::int32_t*>& tok, std::vector<std::int32_t*>& tgt, float*& loss) {
    store.allocate(a);
    model.allocate(a);
    tok.clear();
    tgt.clear();
    for (std::size_t i = 0; i < batches.size(); ++i) {
      tok.push_back(a.alloc<std::int32_t>(T));
      tgt.push_back(a.alloc<std::int32_t>(T));
    }
    loss = a.alloc<float>(1);
  };
  std::vector<std::int32_t*> tok, tgt;
  float* loss = nullptr;
  Arena sizing;
  place(sizing, tok, tgt, loss);
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (sizing.used() > free_bytes) {
    throw CalibrationError("the reference step needs " + std::to_string(sizing.used() >> 20) + " MiB on GPU " +
                           std::to_string(rank) + ", " + std::to_string(free_bytes >> 20) +
                           " MiB are free: try --recompute layer, a smaller --micro-batch or more --gpus");
  }
  DeviceMem arena_mem(sizing.used());
  Arena arena(static_cast<char*>(arena_mem.p), sizing.used());
  place(arena, tok, tgt, loss);
  store.load_initial();
  for (std::size_t i = 0; i < batches.size(); ++i) {
    CUDA_CHECK(cudaMemcpy(tok[i], batches[i].tokens.data(), T * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(tgt[i], batches[i].targets.data(), T * 4, cudaMemcpyHostToDevice));
  }
  RankOutcome out;
  RankMeasurement& m = out.measurement;
  m.peak_allocated_bytes = static_cast<double>(arena.used());
  m.peak_reserved_bytes = static_cast<double>(arena.used() + GEMM_WORKSPACE);
  m.params = store.owned_params();
  const float grad_scale = 1.0f / (static_cast<float>(T) * job.grad_accum * world);
  const float loss_scale = 1.0f / (static_cast<float>(T) * job.grad_accum);
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaDeviceSynchronize());
  for (int step = 0; step < job.warmup + job.steps; ++step) {
    store.collective_log.clear();
    store.exposed_log.clear();
    store.optimizer_log.clear();
    store.host_log.clear();
    store.collective_bytes = store.bytes_h2d = store.bytes_d2h = 0;
    if (model.host_checkpoints() != nullptr) model.host_checkpoints()->clear_step();
    StorageProbe probe;
    const bool probing = job.storage_probe_chunks > 0 && step >= job.warmup;
    if (probing) {
      // Every rank at once, as in the step every rank streams its states at once after the last
      // reduce-scatter; the barrier below keeps the probe out of the step's timing.
      sync.arrive_and_wait();
      probe = store.probe_storage(static_cast<std::size_t>(job.storage_probe_chunks));
    }
    sync.arrive_and_wait();
    const auto t0 = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaEventRecord(start, st.compute));
    CUDA_CHECK(cudaMemsetAsync(loss, 0, sizeof(float), st.compute));
    store.zero_grads();
    for (int mb = 0; mb < job.grad_accum; ++mb) {
      const std::size_t b = static_cast<std::size_t>(mb) % batches.size();
      store.set_last_micro_batch(mb + 1 == job.grad_accum);
      model.forward_backward(tok[b], tgt[b], loss, grad_scale, loss_scale, store, gemm, st.compute);
    }
    store.finish_backward();
    store.adam(static_cast<float>(job.lr), step + 1);
    CUDA_CHECK(cudaEventRecord(stop, st.compute));
    CUDA_CHECK(cudaStreamSynchronize(st.compute));
    CUDA_CHECK(cudaStreamSynchronize(st.collective));
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    float span_ms = 0, host_loss = 0;
    CUDA_CHECK(cudaEventElapsedTime(&span_ms, start, stop));
    CUDA_CHECK(cudaMemcpy(&host_loss, loss, sizeof(float), cudaMemcpyDeviceToHost));
    out.losses.push_back(host_loss);
    if (step == 0 && job.capture_grads) out.grad_shard = store.gradient_shard();
    if (step < job.warmup) {
      m.warmup_step_times_s.push_back(wall);
      continue;
    }
    m.step_times_s.push_back(wall);
    StreamBusy b;
    b.exposed_collective_s = store.exposed_log.seconds();
    b.collective_s = store.collective_log.seconds();
    b.optimizer_s = store.optimizer_log.seconds();
    b.host_transfer_s = store.host_log.seconds();
    b.cpu_optimizer_s = store.cpu_optimizer_s;
    b.storage_s = store.storage_wait_s;
    if (const HostCheckpoints* hc = model.host_checkpoints()) {
      b.checkpoint_out_s = hc->out_log.seconds();
      b.checkpoint_in_s = hc->in_log.seconds();
      m.checkpoint_bytes_to_host = hc->bytes_out;
      m.checkpoint_bytes_from_host = hc->bytes_in;
    }
    // The compute stream's span from first to last event, less the time it sat waiting for a
    // collective and, offloaded, for CPU-Adam: what it spent running kernels or between launches.
    b.compute_s = span_ms * 1e-3 - b.exposed_collective_s - b.cpu_optimizer_s;
    m.busy.push_back(b);
    if (probing) m.storage_probes.push_back(probe);
    m.collective_bytes = store.collective_bytes;
    m.bytes_h2d = store.bytes_h2d;
    m.bytes_d2h = store.bytes_d2h;
    m.bytes_storage_read = store.bytes_storage_read;
    m.bytes_storage_written = store.bytes_storage_written;
  }
  if (rank == 0 && std::getenv("TRAINSIM_REF_OP_PROFILE") != nullptr) {
    // One more step, its operations timed one by one (ref_op_profile.hpp); not a measured step.
    OpProfile prof;
    model.set_profile(&prof);
    const auto t0 = std::chrono::steady_clock::now();
    prof.mark("start", st.compute);
    store.zero_grads();
    for (int mb = 0; mb < job.grad_accum; ++mb) {
      const std::size_t b = static_cast<std::size_t>(mb) % batches.size();
      store.set_last_micro_batch(mb + 1 == job.grad_accum);
      model.forward_backward(tok[b], tgt[b], loss, grad_scale, loss_scale, store, gemm, st.compute);
    }
    store.finish_backward();
    prof.mark("finish_backward", st.compute);
    store.adam(static_cast<float>(job.lr), job.warmup + job.steps + 1);
    prof.mark("adam", st.compute);
    CUDA_CHECK(cudaStreamSynchronize(st.compute));
    CUDA_CHECK(cudaStreamSynchronize(st.collective));
    prof.print(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    model.set_profile(nullptr);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return out;
}

}  // namespace

std::vector<RankOutcome> run_ranks(const RankJob& job, int world) {
  int visible = 0;
  CUDA_CHECK(cudaGetDeviceCount(&visible));
  if (visible < world) {
    throw UsageError("--gpus", "at most the " + std::to_string(visible) + " GPUs CUDA can see", std::to_string(world));
  }
  std::vector<ncclComm_t> comms(world, nullptr);
  if (world > 1) {
    std::vector<int> devs(world);
    for (int i = 0; i < world; ++i) devs[i] = i;
    NCCL_CHECK(ncclCommInitAll(comms.data(), world, devs.data()));
  }
  return run_on_threads(world, comms, [&](int r, std::barrier<>& sync) { return run_rank(job, r, world, comms[r], sync); });
}

}  // namespace trainsim::calibrate::ref
