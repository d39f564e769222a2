#include "ref_pipeline.hpp"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <exception>
#include <thread>

#include "cuda_check.hpp"
#include "ref_gemm.hpp"
#include "ref_model.hpp"
#include "ref_param_store.hpp"
#include "ref_threads.hpp"

namespace trainsim::calibrate::ref {
namespace {

constexpr std::size_t GEMM_WORKSPACE = 32u << 20;

struct Ctx {
  int stage, stages;
  ncclComm_t comm;
  cudaStream_t s;
  std::size_t act;  // elements of one stage-to-stage tensor [T, h]
};

// Megatron-LM's p2p helpers: a missing peer (first or last stage) is a no-op; a send and a recv
// issued together are one NCCL group, so neighbours never wait on each other's order.
void p2p(const Ctx& c, float* send, int send_to, float* recv, int recv_from) {
  const bool do_send = send != nullptr && send_to >= 0 && send_to < c.stages;
  const bool do_recv = recv != nullptr && recv_from >= 0 && recv_from < c.stages;
  if (!do_send && !do_recv) return;
  NCCL_CHECK(ncclGroupStart());
  if (do_send) NCCL_CHECK(ncclSend(send, c.act, ncclFloat32, send_to, c.comm, c.s));
  if (do_recv) NCCL_CHECK(ncclRecv(recv, c.act, ncclFloat32, recv_from, c.comm, c.s));
  NCCL_CHECK(ncclGroupEnd());
}

RankOutcome run_stage(const RankJob& job, int stage, int stages, ncclComm_t comm, std::barrier<>& sync) {
  CUDA_CHECK(cudaSetDevice(stage));
  const GptConfig& c = job.model;
  const ParamLayout layout = make_layout(c, 1);
  const std::vector<int> per = split_layers(c.layers, stages);
  int first = 0;
  for (int i = 0; i < stage; ++i) first += per[i];
  const int end = first + per[stage];
  const bool is_first = stage == 0, is_last = stage == stages - 1;
  const int last_unit = c.layers + 1;
  std::vector<int> held;
  if (is_first || is_last) held.push_back(0);  // the last stage's copy of the tied embedding
  for (int l = first; l < end; ++l) held.push_back(1 + l);
  if (is_last) held.push_back(last_unit);
  const int M = job.grad_accum;
  const int slots = job.pipeline == 1 ? M : std::min(M, stages - stage);
  cudaStream_t s = nullptr, unused = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&unused, cudaStreamNonBlocking));
  void* ws = nullptr;
  CUDA_CHECK(cudaMalloc(&ws, GEMM_WORKSPACE));
  RankOutcome out;
  {
    GemmRunner gemm(ws, GEMM_WORKSPACE);
    ParamStore store(layout, 0, 1, nullptr, s, unused, false, 1, {}, held);
    GptGpu model(c, layout, job.recompute, StageSpec{first, end, is_first, is_last, slots});
    const std::size_t T = static_cast<std::size_t>(c.tokens());
    const std::size_t embed = layout.units.front().size;
    std::int32_t *tok = nullptr, *tgt = nullptr;
    float *loss = nullptr, *tied = nullptr;
    auto place = [&](Arena& a) {
      store.allocate(a);
      model.allocate(a);
      tok = a.alloc<std::int32_t>(T);
      tgt = a.alloc<std::int32_t>(T);
      loss = a.alloc<float>(1);
      tied = (is_first || is_last) && stages > 1 ? a.alloc<float>(embed) : nullptr;
    };
    Arena sizing;
    place(sizing);
    std::size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (sizing.used() > free_bytes) {
      throw CalibrationError("pipeline stage " + std::to_string(stage) + " needs " + std::to_string(sizing.used() >> 20) +
                             " MiB, " + std::to_string(free_bytes >> 20) + " MiB free: try --recompute layer or fewer micro-batches");
    }
    void* mem = nullptr;
    CUDA_CHECK(cudaMalloc(&mem, sizing.used()));
    Arena arena(static_cast<char*>(mem), sizing.used());
    place(arena);
    store.load_initial();
    const Batch& batch = job.batches.at(0).at(0);  // every micro-batch the same fixed tokens
    CUDA_CHECK(cudaMemcpy(tok, batch.tokens.data(), T * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(tgt, batch.targets.data(), T * 4, cudaMemcpyHostToDevice));
    RankMeasurement& m = out.measurement;
    m.peak_allocated_bytes = static_cast<double>(arena.used());
    m.peak_reserved_bytes = static_cast<double>(arena.used() + GEMM_WORKSPACE);
    m.params = store.owned_params();
    const Ctx ctx{stage, stages, comm, s, T * static_cast<std::size_t>(c.hidden)};
    const float grad_scale = 1.0f / (static_cast<float>(T) * M), loss_scale = grad_scale;
    IntervalLog busy;
    cudaEvent_t start = nullptr, sched_end = nullptr, stop = nullptr;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&sched_end));
    CUDA_CHECK(cudaEventCreate(&stop));
    auto F = [&](int i) {
      busy.begin(s);
      model.stage_forward(i % slots, tok, tgt, loss, grad_scale, loss_scale, store, gemm, s);
      busy.end(s);
    };
    auto B = [&](int i) {
      busy.begin(s);
      model.stage_backward(i % slots, tok, store, gemm, s);
      busy.end(s);
    };
    const int prev = stage - 1, next = stage + 1;
    CUDA_CHECK(cudaDeviceSynchronize());
    for (int step = 0; step < job.warmup + job.steps; ++step) {
      busy.clear();
      sync.arrive_and_wait();
      const auto t0 = std::chrono::steady_clock::now();
      CUDA_CHECK(cudaEventRecord(start, s));
      CUDA_CHECK(cudaMemsetAsync(loss, 0, sizeof(float), s));
      store.zero_grads();
      if (job.pipeline == 1) {  // GPipe: every forward, then every backward
        for (int i = 0; i < M; ++i) {
          p2p(ctx, nullptr, -1, model.input(i % slots), is_first ? -1 : prev);
          F(i);
          p2p(ctx, is_last ? nullptr : model.output(i % slots), next, nullptr, -1);
        }
        for (int i = 0; i < M; ++i) {
          p2p(ctx, nullptr, -1, is_last ? nullptr : model.grad_input(), next);
          B(i);
          p2p(ctx, is_first ? nullptr : model.grad_input(), prev, nullptr, -1);
        }
      } else {  // 1F1B (Megatron-LM's non-interleaved schedule)
        const int warm = std::min(stages - stage - 1, M), rest = M - warm;
        int f = 0, b = 0;
        for (int i = 0; i < warm; ++i, ++f) {
          p2p(ctx, nullptr, -1, model.input(f % slots), is_first ? -1 : prev);
          F(f);
          p2p(ctx, is_last ? nullptr : model.output(f % slots), next, nullptr, -1);
        }
        if (rest > 0) p2p(ctx, nullptr, -1, model.input(f % slots), is_first ? -1 : prev);
        for (int i = 0; i < rest; ++i, ++f, ++b) {
          F(f);
          // send_forward_recv_backward
          p2p(ctx, is_last ? nullptr : model.output(f % slots), next, is_last ? nullptr : model.grad_input(), next);
          B(b);
          if (i == rest - 1) {
            p2p(ctx, is_first ? nullptr : model.grad_input(), prev, nullptr, -1);
          } else {  // send_backward_recv_forward
            p2p(ctx, is_first ? nullptr : model.grad_input(), prev, model.input((f + 1) % slots), is_first ? -1 : prev);
          }
        }
        for (int i = 0; i < warm; ++i, ++b) {
          p2p(ctx, nullptr, -1, is_last ? nullptr : model.grad_input(), next);
          B(b);
          p2p(ctx, is_first ? nullptr : model.grad_input(), prev, nullptr, -1);
        }
      }
      CUDA_CHECK(cudaEventRecord(sched_end, s));
      if (tied != nullptr) {  // sum the tied embedding's gradient between the first and last stage
        float* g = store.grads(0);
        const int peer = is_first ? stages - 1 : 0;
        NCCL_CHECK(ncclGroupStart());
        NCCL_CHECK(ncclSend(g, embed, ncclFloat32, peer, comm, s));
        NCCL_CHECK(ncclRecv(tied, embed, ncclFloat32, peer, comm, s));
        NCCL_CHECK(ncclGroupEnd());
        add_inplace(g, tied, static_cast<long>(embed), s);
      }
      store.adam(static_cast<float>(job.lr), step + 1);
      CUDA_CHECK(cudaEventRecord(stop, s));
      CUDA_CHECK(cudaStreamSynchronize(s));
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      float span_ms = 0, host_loss = 0;
      CUDA_CHECK(cudaEventElapsedTime(&span_ms, start, sched_end));
      CUDA_CHECK(cudaMemcpy(&host_loss, loss, sizeof(float), cudaMemcpyDeviceToHost));
      out.losses.push_back(host_loss);
      if (step == 0 && job.capture_grads) out.grad_shard = store.gradient_shard();
      if (step < job.warmup) {
        m.warmup_step_times_s.push_back(wall);
        continue;
      }
      m.step_times_s.push_back(wall);
      StreamBusy sb;
      sb.compute_s = busy.seconds();
      sb.optimizer_s = store.optimizer_log.seconds();
      // Idle share of this stage's schedule: from its first to its last pipeline operation.
      sb.bubble_fraction = span_ms > 0 ? std::max(0.0, 1.0 - sb.compute_s / (span_ms * 1e-3)) : 0.0;
      sb.compute_s += sb.optimizer_s;
      store.optimizer_log.clear();
      m.busy.push_back(sb);
      // Sent by this stage: activations forward, gradients backward, the tied embedding's gradient.
      m.collective_bytes = static_cast<double>(M) * ctx.act * 4 * ((is_last ? 0 : 1) + (is_first ? 0 : 1)) +
                           (tied != nullptr ? static_cast<double>(embed) * 4 : 0.0);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(sched_end);
    cudaEventDestroy(stop);
    cudaFree(mem);
  }
  cudaFree(ws);
  cudaStreamDestroy(s);
  cudaStreamDestroy(unused);
  return out;
}

}  // namespace

std::vector<RankOutcome> run_pipeline(const RankJob& job, int stages) {
  int visible = 0;
  CUDA_CHECK(cudaGetDeviceCount(&visible));
  if (visible < stages) {
    throw UsageError("--gpus", "at most the " + std::to_string(visible) + " GPUs CUDA can see", std::to_string(stages));
  }
  if (job.model.layers < stages) throw UsageError("--layers", "at least one layer per stage (--gpus " + std::to_string(stages) + ")");
  std::vector<ncclComm_t> comms(stages, nullptr);
  std::vector<int> devs(stages);
  for (int i = 0; i < stages; ++i) devs[i] = i;
  NCCL_CHECK(ncclCommInitAll(comms.data(), stages, devs.data()));
  return run_on_threads(stages, comms,
                        [&](int r, std::barrier<>& sync) { return run_stage(job, r, stages, comms[r], sync); });
}

}  // namespace trainsim::calibrate::ref
