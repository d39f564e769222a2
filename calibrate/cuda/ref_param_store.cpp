#include "ref_param_store.hpp"

#include <algorithm>
#include <chrono>

#include "../cpu_adam.hpp"
#include "../errors.hpp"
#include "../reference/init_hash.hpp"
#include "../reference/storage_states.hpp"
#include "../thread_pool.hpp"
#include "cuda_check.hpp"

namespace trainsim::calibrate::ref {

namespace {
template <class T>
T* pinned(std::size_t count) {
  void* p = nullptr;
  CUDA_CHECK(cudaHostAlloc(&p, count * sizeof(T), cudaHostAllocPortable));
  return static_cast<T*>(p);
}
}  // namespace

struct ParamStore::Host {
  std::size_t n;
  bool on_storage;
  float *master, *m, *v, *grad;  // master, m, v: null when the states are on storage
  std::uint16_t* param;          // bf16 bits
  ThreadPool pool;
  std::unique_ptr<StorageStates> states;
  std::vector<float> init_master;  // storage tier: the initial master, until written to the file
  Host(std::size_t count, int threads, bool storage)
      : n(count), on_storage(storage), master(storage ? nullptr : pinned<float>(count)),
        m(storage ? nullptr : pinned<float>(count)), v(storage ? nullptr : pinned<float>(count)),
        grad(pinned<float>(count)), param(pinned<std::uint16_t>(count)), pool(threads) {
    if (storage) init_master.assign(count, 0.0f);
  }
  ~Host() {
    for (void* p : {static_cast<void*>(master), static_cast<void*>(m), static_cast<void*>(v), static_cast<void*>(grad),
                    static_cast<void*>(param)}) {
      if (p != nullptr) cudaFreeHost(p);
    }
  }
  // fn(begin, end) over [0, n) split across the pool.
  template <class F>
  void parallel(std::size_t count, F fn) {
    const std::size_t threads = static_cast<std::size_t>(pool.size());
    pool.run([&](int i) {
      const std::size_t a = count * i / threads, b = count * (i + 1) / threads;
      fn(a, b);
    });
  }
};

cudaEvent_t IntervalLog::next() {
  if (used_ == pool_.size()) {
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreate(&e));
    pool_.push_back(e);
  }
  return pool_[used_++];
}
void IntervalLog::begin(cudaStream_t s) {
  events_.push_back(next());
  CUDA_CHECK(cudaEventRecord(events_.back(), s));
}
void IntervalLog::end(cudaStream_t s) { begin(s); }
double IntervalLog::seconds() const {
  double total = 0;
  for (std::size_t i = 0; i + 1 < events_.size(); i += 2) {
    float ms = 0;
    CUDA_CHECK(cudaEventSynchronize(events_[i + 1]));
    CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]));
    total += ms * 1e-3;
  }
  return total;
}
void IntervalLog::clear() {
  events_.clear();
  used_ = 0;
}
IntervalLog::~IntervalLog() {
  for (cudaEvent_t e : pool_) cudaEventDestroy(e);
}

ParamStore::ParamStore(const ParamLayout& layout, int rank, int world, ncclComm_t comm, cudaStream_t compute,
                       cudaStream_t collective, bool offload, int cpu_threads, std::string storage_dir,
                       std::vector<int> held_units)
    : layout_(layout), rank_(rank), world_(world), comm_(comm), compute_(compute), collective_(collective),
      offload_(offload), cpu_threads_(std::max(1, cpu_threads)), storage_dir_(std::move(storage_dir)) {
  shard_total_ = layout.total / static_cast<std::size_t>(world);
  local_.assign(layout.units.size(), -1);
  if (held_units.empty() || sharded()) {
    for (std::size_t u = 0; u < layout.units.size(); ++u) local_[u] = static_cast<long>(layout.units[u].offset / world);
  } else {
    shard_total_ = 0;
    for (int u : held_units) {
      local_.at(static_cast<std::size_t>(u)) = static_cast<long>(shard_total_);
      shard_total_ += layout.units[static_cast<std::size_t>(u)].size;
    }
  }
  for (std::size_t u = 1; u + 1 < layout.units.size(); ++u) max_layer_unit_ = std::max(max_layer_unit_, layout.units[u].size);
  for (cudaEvent_t* e : {&gathered_[0], &gathered_[1], &slot_free_[0], &slot_free_[1], &grad_free_[0], &grad_free_[1],
                         &ends_gathered_, &rs_done_, &grad_ready_}) {
    CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  }
}

ParamStore::~ParamStore() {
  for (cudaEvent_t e : {gathered_[0], gathered_[1], slot_free_[0], slot_free_[1], grad_free_[0], grad_free_[1],
                        ends_gathered_, rs_done_, grad_ready_}) {
    cudaEventDestroy(e);
  }
}

void ParamStore::allocate(Arena& a) {
  if (!offload_) {  // offloaded, they live in pinned host memory (init_host)
    master_ = a.alloc<float>(shard_total_);
    m_ = a.alloc<float>(shard_total_);
    v_ = a.alloc<float>(shard_total_);
  }
  grad_shard_ = a.alloc<float>(shard_total_);
  if (!sharded()) {
    param_shard_ = a.alloc<bf16>(shard_total_);
    return;
  }
  // Sharded, the bf16 copy is not kept: each unit's shard is cast from the fp32 master into
  // cast_tmp_ right before its all-gather (as FSDP2 does), saving 2 bytes per owned parameter.
  const std::size_t embed = layout_.units.front().size, fin = layout_.units.back().size;
  embed_full_ = a.alloc<bf16>(embed);
  final_full_ = a.alloc<bf16>(fin);
  embed_grad_ = a.alloc<float>(embed);
  final_grad_ = a.alloc<float>(fin);
  for (int s = 0; s < 2; ++s) {
    layer_full_[s] = a.alloc<bf16>(max_layer_unit_);
    layer_grad_[s] = a.alloc<float>(max_layer_unit_);
  }
  rs_tmp_ = a.alloc<float>(std::max({embed, fin, max_layer_unit_}) / static_cast<std::size_t>(world_));
  cast_tmp_ = a.alloc<bf16>(std::max({embed, fin, max_layer_unit_}) / static_cast<std::size_t>(world_));
}

void ParamStore::init_host() {
  const bool storage = !storage_dir_.empty();
  host_ = std::make_unique<Host>(shard_total_, cpu_threads_, storage);
  Host& h = *host_;
  if (storage) h.master = h.init_master.data();
  h.parallel(shard_total_, [&](std::size_t a, std::size_t b) {
    std::fill(h.master + a, h.master + b, 0.0f);
    if (!storage) {
      std::fill(h.m + a, h.m + b, 0.0f);
      std::fill(h.v + a, h.v + b, 0.0f);
    }
    std::fill(h.grad + a, h.grad + b, 0.0f);
  });
  std::uint64_t tensor_id = 0;
  for (const Unit& u : layout_.units) {
    const std::size_t n = u.size / world_, lo = u.offset + rank_ * n, hi = lo + n;
    float* shard = h.master + u.offset / world_;
    for (const TensorSlot& t : u.tensors) {
      ++tensor_id;
      const std::size_t a = std::max(lo, t.offset), b = std::min(hi, t.offset + t.size());
      if (b <= a) continue;
      const int kind = init_kind(t);
      h.parallel(b - a, [&](std::size_t i0, std::size_t i1) {
        for (std::size_t i = i0; i < i1; ++i) shard[a - lo + i] = initial_value(tensor_id, a - t.offset + i, kind);
      });
    }
  }
  h.parallel(shard_total_, [&](std::size_t a, std::size_t b) {
    for (std::size_t i = a; i < b; ++i) h.param[i] = float_to_bf16_bits(h.master[i]);
  });
  if (storage) {
    // One file per rank: every rank's ScratchDir numbers its names from 0, so the rank goes in the stem.
    h.states = std::make_unique<StorageStates>(storage_dir_, shard_total_, STATE_CHUNK_PARAMS, 16,
                                               "optimizer-states-rank" + std::to_string(rank_));
    h.states->initialize([&](std::size_t first, std::size_t n, float* out) { std::copy_n(h.master + first, n, out); });
    h.master = nullptr;
    std::vector<float>().swap(h.init_master);
  }
}

void ParamStore::load_initial() {
  if (offload_) {
    init_host();
    CUDA_CHECK(cudaMemsetAsync(grad_shard_, 0, shard_total_ * sizeof(float), compute_));
    CUDA_CHECK(cudaStreamSynchronize(compute_));
    return;
  }
  CUDA_CHECK(cudaMemsetAsync(master_, 0, shard_total_ * sizeof(float), compute_));
  std::uint64_t tensor_id = 0;
  for (std::size_t ui = 0; ui < layout_.units.size(); ++ui) {
    const Unit& u = layout_.units[ui];
    const std::size_t n = u.size / world_, lo = u.offset + rank_ * n, hi = lo + n;
    float* shard = master_ + local_[ui];  // element lo of the flat layout
    for (const TensorSlot& t : u.tensors) {
      ++tensor_id;
      if (local_[ui] < 0) continue;
      const std::size_t a = std::max(lo, t.offset), b = std::min(hi, t.offset + t.size());
      if (b > a) init_params(shard + (a - lo), static_cast<long>(b - a), a - t.offset, tensor_id, init_kind(t), compute_);
    }
  }
  CUDA_CHECK(cudaMemsetAsync(m_, 0, shard_total_ * sizeof(float), compute_));
  CUDA_CHECK(cudaMemsetAsync(v_, 0, shard_total_ * sizeof(float), compute_));
  CUDA_CHECK(cudaMemsetAsync(grad_shard_, 0, shard_total_ * sizeof(float), compute_));
  if (!sharded()) to_bf16(master_, param_shard_, static_cast<long>(shard_total_), compute_);
  CUDA_CHECK(cudaStreamSynchronize(compute_));
}

int ParamStore::slot_of(int unit) const { return unit % 2; }

void ParamStore::gather_into(int unit, bf16* full) {
  const Unit& u = layout_.units[unit];
  const std::size_t n = u.size / world_;
  if (offload_) {
    // Each rank fetches its own shard from host memory, then all ranks all-gather.
    host_log.begin(collective_);
    CUDA_CHECK(cudaMemcpyAsync(world_ > 1 ? cast_tmp_ : full, host_->param + u.offset / world_, n * sizeof(bf16),
                               cudaMemcpyHostToDevice, collective_));
    host_log.end(collective_);
    bytes_h2d += static_cast<double>(n) * sizeof(bf16);
  } else {
    to_bf16(master_ + u.offset / world_, cast_tmp_, static_cast<long>(n), collective_);
  }
  if (world_ > 1) NCCL_CHECK(ncclAllGather(cast_tmp_, full, n, ncclBfloat16, comm_, collective_));
}

void ParamStore::gather(int unit) {
  const int slot = slot_of(unit);
  const Unit& u = layout_.units[unit];
  const std::size_t n = u.size / world_;
  CUDA_CHECK(cudaStreamWaitEvent(collective_, slot_free_[slot], 0));
  collective_log.begin(collective_);
  gather_into(unit, layer_full_[slot]);
  collective_log.end(collective_);
  CUDA_CHECK(cudaEventRecord(gathered_[slot], collective_));
  slot_unit_[slot] = unit;
  collective_bytes += static_cast<double>(n) * 2 * (world_ - 1);
}

void ParamStore::zero_grads() {
  CUDA_CHECK(cudaMemsetAsync(grad_shard_, 0, shard_total_ * sizeof(float), compute_));
  if (!sharded()) return;
  // Parameters changed in the last step's update (compute stream): gather everything afresh.
  slot_unit_[0] = slot_unit_[1] = -1;
  CUDA_CHECK(cudaEventRecord(grad_ready_, compute_));
  CUDA_CHECK(cudaStreamWaitEvent(collective_, grad_ready_, 0));
  const Unit& e = layout_.units.front();
  const Unit& f = layout_.units.back();
  collective_log.begin(collective_);
  gather_into(0, embed_full_);
  gather_into(static_cast<int>(layout_.units.size()) - 1, final_full_);
  collective_log.end(collective_);
  CUDA_CHECK(cudaEventRecord(ends_gathered_, collective_));
  collective_bytes += static_cast<double>(e.size + f.size) / world_ * 2 * (world_ - 1);
}

void ParamStore::begin_pass(bool backward) {
  backward_ = backward;
  if (!sharded() || !backward) return;
  // The previous micro-batch's reduce-scatter of the embedding must be done before its buffer is reused.
  CUDA_CHECK(cudaStreamWaitEvent(compute_, rs_done_, 0));
  CUDA_CHECK(cudaMemsetAsync(embed_grad_, 0, layout_.units.front().size * sizeof(float), compute_));
  CUDA_CHECK(cudaMemsetAsync(final_grad_, 0, layout_.units.back().size * sizeof(float), compute_));
}

const bf16* ParamStore::acquire(int unit) {
  if (!sharded()) return param_shard_ + local_.at(static_cast<std::size_t>(unit));
  const int last = static_cast<int>(layout_.units.size()) - 1;
  if (unit == 0 || unit == last) {
    exposed_log.begin(compute_);
    CUDA_CHECK(cudaStreamWaitEvent(compute_, ends_gathered_, 0));
    exposed_log.end(compute_);
    return unit == 0 ? embed_full_ : final_full_;
  }
  const int slot = slot_of(unit);
  if (slot_unit_[slot] != unit) gather(unit);
  exposed_log.begin(compute_);
  CUDA_CHECK(cudaStreamWaitEvent(compute_, gathered_[slot], 0));
  exposed_log.end(compute_);
  const int next = backward_ ? unit - 1 : unit + 1;  // prefetch the next layer of this pass
  if (next >= 1 && next < last && slot_unit_[slot_of(next)] != next) gather(next);
  return layer_full_[slot];
}

void ParamStore::release(int unit) {
  if (!sharded()) return;
  const int last = static_cast<int>(layout_.units.size()) - 1;
  if (unit == 0 || unit == last) return;
  CUDA_CHECK(cudaEventRecord(slot_free_[slot_of(unit)], compute_));
}

float* ParamStore::grads(int unit) {
  const Unit& u = layout_.units[unit];
  if (!sharded()) return grad_shard_ + local_.at(static_cast<std::size_t>(unit));
  const int last = static_cast<int>(layout_.units.size()) - 1;
  if (unit == 0) return embed_grad_;
  if (unit == last) return final_grad_;
  const int slot = slot_of(unit);
  exposed_log.begin(compute_);
  CUDA_CHECK(cudaStreamWaitEvent(compute_, grad_free_[slot], 0));
  exposed_log.end(compute_);
  CUDA_CHECK(cudaMemsetAsync(layer_grad_[slot], 0, u.size * sizeof(float), compute_));
  return layer_grad_[slot];
}

void ParamStore::grads_done(int unit) {
  if (!sharded()) return;
  const Unit& u = layout_.units[unit];
  const int last = static_cast<int>(layout_.units.size()) - 1;
  float* full = unit == 0 ? embed_grad_ : unit == last ? final_grad_ : layer_grad_[slot_of(unit)];
  const std::size_t n = u.size / world_;
  CUDA_CHECK(cudaEventRecord(grad_ready_, compute_));
  CUDA_CHECK(cudaStreamWaitEvent(collective_, grad_ready_, 0));
  collective_log.begin(collective_);
  if (world_ > 1) NCCL_CHECK(ncclReduceScatter(full, rs_tmp_, n, ncclFloat32, ncclSum, comm_, collective_));
  add_inplace(grad_shard_ + u.offset / world_, world_ > 1 ? rs_tmp_ : full, static_cast<long>(n), collective_);
  collective_log.end(collective_);
  collective_bytes += static_cast<double>(n) * 4 * (world_ - 1);
  if (offload_ && last_micro_batch_) {
    host_log.begin(collective_);
    CUDA_CHECK(cudaMemcpyAsync(host_->grad + u.offset / world_, grad_shard_ + u.offset / world_, n * sizeof(float),
                               cudaMemcpyDeviceToHost, collective_));
    host_log.end(collective_);
    bytes_d2h += static_cast<double>(n) * sizeof(float);
  }
  CUDA_CHECK(cudaEventRecord(unit == 0 || unit == last ? rs_done_ : grad_free_[slot_of(unit)], collective_));
}

void ParamStore::finish_backward() {
  if (!sharded()) return;
  exposed_log.begin(compute_);
  CUDA_CHECK(cudaStreamWaitEvent(compute_, rs_done_, 0));
  exposed_log.end(compute_);
}

void ParamStore::adam(float lr, int step) {
  if (offload_) {
    // The gradient shard is on the host once the collective stream is done.
    CUDA_CHECK(cudaStreamSynchronize(collective_));
    const auto t0 = std::chrono::steady_clock::now();
    AdamHyper hyper;
    hyper.lr = lr;
    hyper.beta1 = 0.9f;
    hyper.beta2 = 0.95f;
    hyper.eps = 1e-8f;
    hyper.step = step;
    if (host_->states) {
      StorageStates& st = *host_->states;
      const double r0 = st.bytes_read, w0 = st.bytes_written, io0 = st.io_wait_s;
      st.adam_step(hyper, host_->grad, host_->param, host_->pool);
      bytes_storage_read = st.bytes_read - r0;
      bytes_storage_written = st.bytes_written - w0;
      storage_wait_s = st.io_wait_s - io0;
    } else {
      AdamTensors t{host_->master, host_->grad, host_->m, host_->v, host_->param, shard_total_};
      adam_step(hyper, t, HalfType::BF16, best_isa(), host_->pool);
    }
    cpu_optimizer_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return;
  }
  optimizer_log.begin(compute_);
  adam_step(master_, m_, v_, grad_shard_, param_shard_, static_cast<long>(shard_total_), lr, 0.9f, 0.95f, 1e-8f, step,
            compute_);
  optimizer_log.end(compute_);
}

StorageProbe ParamStore::probe_storage(std::size_t chunks) {
  if (!host_ || !host_->states) throw CalibrationError("storage probe: the optimizer states are not on storage");
  return host_->states->probe_stream(chunks);
}

std::vector<float> ParamStore::gradient_shard() const {
  std::vector<float> g(shard_total_);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(g.data(), grad_shard_, shard_total_ * sizeof(float), cudaMemcpyDeviceToHost));
  return g;
}

std::int64_t ParamStore::owned_params() const {
  std::int64_t n = 0;
  for (std::size_t ui = 0; ui < layout_.units.size(); ++ui) {
    const Unit& u = layout_.units[ui];
    if (local_[ui] < 0) continue;
    const std::size_t lo = u.offset + rank_ * (u.size / world_), hi = lo + u.size / world_;
    for (const TensorSlot& t : u.tensors) {
      const std::size_t a = std::max(lo, t.offset), b = std::min(hi, t.offset + t.size());
      if (b > a) n += static_cast<std::int64_t>(b - a);
    }
  }
  return n;
}

}  // namespace trainsim::calibrate::ref
