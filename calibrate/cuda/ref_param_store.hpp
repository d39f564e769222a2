#pragma once
// Where the reference step's parameters and gradients live, unit by unit (embedding, each layer,
// final LayerNorm: calibrate/reference/gpt_layout.hpp). With one rank they are the flat buffers
// themselves. With N ranks it is ZeRO-3 (Rajbhandari et al. 2020, sec. 5.3): each rank keeps
// 1/N of every unit (fp32 master, moments and gradients; the bf16 copy is cast per gather); a layer's bf16
// parameters are all-gathered into one of two buffers on the collective stream before use,
// the next layer's gather issued before this layer's compute (prefetch), and its gradients are
// reduce-scattered into the owning shards after its backward. The embedding and final LayerNorm
// units are gathered once per step and kept (the tied head uses the embedding at both ends).
// With `offload` it is ZeRO-Infinity's CPU tier (Rajbhandari et al. 2021, sec. 5): fp32 master
// weights, Adam moments, the fp32 gradient shard and the bf16 parameters live in pinned host
// memory; each rank copies its bf16 shard of a unit to the GPU on the collective stream, then
// all-gathers (bandwidth-centric partitioning, sec. 6.1); the reduce-scattered gradient shard is
// accumulated on the GPU and copied to the host after the last micro-batch; CPU-Adam
// (cpu_adam.hpp, ZeRO-Offload's) updates the host copies.

#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>
#include <string>
#include <vector>

#include "../reference/gpt_layout.hpp"
#include "../reference/storage_probe.hpp"
#include "ref_arena.hpp"
#include "ref_kernels.hpp"

namespace trainsim::calibrate::ref {

// CUDA events bracketing work on one stream; busy time is the sum of their intervals.
class IntervalLog {
 public:
  void begin(cudaStream_t s);
  void end(cudaStream_t s);
  double seconds() const;  // after the stream synchronized; sums every (begin, end) pair
  void clear();
  ~IntervalLog();

 private:
  std::vector<cudaEvent_t> events_;
  std::vector<cudaEvent_t> pool_;
  std::size_t used_ = 0;
  cudaEvent_t next();
};

class ParamStore {
 public:
  ParamStore(const ParamLayout& layout, int rank, int world, ncclComm_t comm, cudaStream_t compute,
             cudaStream_t collective, bool offload, int cpu_threads, std::string storage_dir = {},
             std::vector<int> held_units = {});
  ~ParamStore();
  ParamStore(const ParamStore&) = delete;
  ParamStore& operator=(const ParamStore&) = delete;
  void allocate(Arena& arena);
  // Master weights: the rank's slice of each unit, filled on the GPU with the values
  // initial_params() gives on the CPU; moments and gradients zero; the bf16 copy with one rank.
  void load_initial();

  // Called at the start of each micro-batch's forward and backward pass.
  void begin_pass(bool backward);
  // Makes unit u's bf16 parameters ready for the compute stream (waits there for its gather) and
  // prefetches the next unit of this pass. Returns the unit's first element.
  const bf16* acquire(int unit);
  void release(int unit);       // the compute stream is done with unit u's parameters
  float* grads(int unit);       // unit u's full fp32 gradient, accumulated by the backward
  void grads_done(int unit);    // reduce-scatter unit u's gradient into the shards
  void zero_grads();            // start of a step (compute stream)
  void set_last_micro_batch(bool last) { last_micro_batch_ = last; }
  void finish_backward();       // the compute stream waits for the last reduce-scatter
  void adam(float lr, int step);
  // Storage tier only: StorageStates::probe_stream over the first `chunks` chunks (a calibration
  // of the disk, not a step; the states are unchanged).
  StorageProbe probe_storage(std::size_t chunks);
  // The rank's gradient shard and parameter count (for checks and the record).
  std::vector<float> gradient_shard() const;
  std::size_t shard_elements() const { return shard_total_; }
  std::int64_t owned_params() const;

  IntervalLog collective_log, exposed_log, optimizer_log, host_log;
  double collective_bytes = 0, bytes_h2d = 0, bytes_d2h = 0, cpu_optimizer_s = 0;
  // Storage tier (--storage-dir): this step's wait for the storage inside CPU-Adam, bytes moved.
  double storage_wait_s = 0, bytes_storage_read = 0, bytes_storage_written = 0;

 private:
  bool sharded() const { return world_ > 1 || offload_; }  // parameters reach the GPU per unit
  void init_host();
  int slot_of(int unit) const;
  void gather(int unit);
  void gather_into(int unit, bf16* full);  // cast the master shard to bf16, all-gather the unit

  const ParamLayout& layout_;
  int rank_, world_;
  // Where each unit starts in this rank's buffers (-1: not held). Sharded: unit offset / world.
  // A pipeline stage (one rank, not sharded) holds only its own units, packed.
  std::vector<long> local_;
  ncclComm_t comm_;
  cudaStream_t compute_, collective_;
  std::size_t shard_total_ = 0, max_layer_unit_ = 0;
  float *master_ = nullptr, *m_ = nullptr, *v_ = nullptr, *grad_shard_ = nullptr;
  bf16* param_shard_ = nullptr;
  // Sharded only: gathered units and full-unit gradient buffers.
  bf16 *embed_full_ = nullptr, *final_full_ = nullptr, *layer_full_[2] = {nullptr, nullptr};
  bf16* cast_tmp_ = nullptr;
  float *embed_grad_ = nullptr, *final_grad_ = nullptr, *layer_grad_[2] = {nullptr, nullptr}, *rs_tmp_ = nullptr;
  int slot_unit_[2] = {-1, -1};
  cudaEvent_t gathered_[2] = {}, slot_free_[2] = {}, grad_free_[2] = {}, ends_gathered_ = nullptr, rs_done_ = nullptr;
  cudaEvent_t grad_ready_ = nullptr;
  bool backward_ = false;
  bool offload_ = false, last_micro_batch_ = true;
  int cpu_threads_ = 1;
  std::string storage_dir_;  // optimizer states on storage when set
  struct Host;  // pinned host buffers and the CPU-Adam thread pool
  std::unique_ptr<Host> host_;
};

}  // namespace trainsim::calibrate::ref
