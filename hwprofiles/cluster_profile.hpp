#pragma once
// A cluster profile: what one node holds, how many nodes there are and how they connect, plus
// optional calibrated tables. Loaded strictly from hwprofiles/*.json (schema: hwprofiles/README.md).
// Quantities carry their unit in the member name, as in the JSON keys.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim::hw {

inline constexpr int PROFILE_SCHEMA_VERSION = 1;

enum class ComputePrecision { FP64, FP32, TF32, FP16, BF16, FP8 };
enum class IntraNodeFabric { NVSWITCH, NVLINK_MESH, PCIE_ONLY };
enum class InterNodeTopology { SINGLE_NODE, FAT_TREE, RAIL_OPTIMIZED };
enum class StorageKind { NVME, SATA_SSD, VIRTIO, HDD, NONE };
enum class NcclCpuVendor { INTEL, AMD, OTHER };

std::string_view to_string(ComputePrecision p);
std::string_view to_string(IntraNodeFabric f);
std::string_view to_string(InterNodeTopology t);
std::string_view to_string(StorageKind k);
std::string_view to_string(NcclCpuVendor v);
std::string_view gpu_arch_name(int sm);  // 80 -> "sm80"


struct GpuSpec {
  std::string model;
  int count_per_node = 0;
  double memory_GiB = 0;
  // CUDA context, cuBLAS/NCCL workspaces and allocator fragmentation: memory tensors cannot use.
  double reserved_GiB = 0;
  std::map<ComputePrecision, double> peak_TFLOPs;  // dense peak per precision
  double hbm_GBps = 0;
  std::string source;
};

struct IntraNodeSpec {
  IntraNodeFabric fabric = IntraNodeFabric::PCIE_ONLY;
  double link_GBps = 0;  // per GPU, per direction, to the fabric (all its NVLinks together)
  double latency_us = 0;
  std::string source;
};

struct PcieSpec {
  double link_GBps = 0;        // per GPU, per direction, achievable host<->device (pinned)
  double latency_us = 0;
  int gpus_per_switch = 1;     // GPUs that share one PCIe switch and its uplink
  double switch_uplink_GBps = 0;  // per switch, per direction, to the CPU root complex
  double host_aggregate_GBps = 0; // all GPUs of a node reading host memory at once, per direction
  std::string source;
};

struct HostSpec {
  std::string cpu;
  int sockets = 1;
  int cores = 0;  // physical cores per node
  double memory_GiB = 0;
  double memory_GBps = 0;
  std::string source;
};

struct StorageSpec {
  StorageKind kind = StorageKind::NONE;
  int count = 0;               // devices per node
  double capacity_TB = 0;      // per device, decimal terabytes as vendors print them
  double read_GBps = 0;        // per device, sequential
  double write_GBps = 0;       // per device, sequential
  // Per device, reads and writes in flight together (trainsim-calibrate's storage_mixed bench:
  // the reference step's 48 MiB chunks, one read and one written at once): what each direction
  // moved under that load. 0 when not measured; then reads and writes each keep their own rate
  // however they overlap. When measured, overlapping reads and writes together move at most
  // mixed_read_GBps + mixed_write_GBps (sim/README.md, "Storage").
  double mixed_read_GBps = 0;
  double mixed_write_GBps = 0;
  std::string source;
};

struct NicSpec {
  int count = 0;  // per node
  double link_Gbps = 0;  // per NIC
  double latency_us = 0;
  std::string source;
};

struct InterNodeSpec {
  InterNodeTopology topology = InterNodeTopology::SINGLE_NODE;
  double oversubscription = 1.0;  // spine oversubscription ratio (1 = full bisection)
  double latency_us = 0;          // switch traversal, added to the NIC latency
  std::string source;
};

// The NCCL the cluster's runs used and what NCCL detects of the machine: the replay costs every
// collective with that release's own tuning model (sim/engine/nccl_tuning.hpp). Optional: a
// profile without it keeps the per-hop latencies of intra_node, nic and inter_node.
struct NcclSpec {
  std::string version;  // "2.12.10": a release whose tuning tables trainsim carries (2.12.x)
  int gpu_sm = 80;      // the GPUs' compute capability x 10 ("sm80" in the file)
  NcclCpuVendor cpu_vendor = NcclCpuVendor::INTEL;
  std::string source;
};

struct CostSpec {
  double price_per_gpu_hour_usd = 0;
  double power_per_node_kW = 0;
  std::string source;
};

// A measured point of an efficiency or bandwidth curve.
struct CurvePoint {
  double bytes = 0;
  double value = 0;  // GB/s (bandwidth curves) or a fraction of peak (efficiency curves)
};

struct GemmEfficiency {
  ComputePrecision precision = ComputePrecision::BF16;
  double m = 0, n = 0, k = 0;
  double efficiency = 0;  // achieved / peak
};

struct BandwidthCurve {
  std::string what;  // "all_reduce", "h2d_pinned", "layernorm", ...
  int group_size = 1;  // GPUs taking part (collectives); 1 otherwise
  std::vector<CurvePoint> points;  // bytes ascending
};

// Compute and communication that overlap on one GPU slow each other, measured by
// trainsim-calibrate's interference part (calibrate/cuda/interference_bench.cpp) over a grid of
// GEMM shapes x collectives x sizes. One point per cell, as measured (times in microseconds per
// op, the slowest GPU's median):
struct InterferencePoint {
  std::string collective;  // "all_reduce", "all_gather", "reduce_scatter"
  double bytes = 0;        // nccl-tests' size: the whole buffer (all-gather's output, reduce-scatter's input)
  double gemm_m = 0, gemm_n = 0, gemm_k = 0;  // the bf16 GEMM beside it: C[m x n] = A[m x k] B[k x n]
  double gemm_alone_us = 0;
  double collective_alone_us = 0;
  double collective_beside_us = 0;  // back to back while back-to-back GEMMs run (>= alone)
  double compute_slowdown = 1;      // the GEMM's time while back-to-back collectives run / alone
  double gemm_flops() const { return 2.0 * gemm_m * gemm_n * gemm_k; }
};

struct Interference {
  std::vector<InterferencePoint> points;  // sorted by (collective, GEMM FLOPs, bytes)
  std::string source;
};

// What the replay applies to one collective beside compute (sim/engine/engine.cpp): it starts
// `extra_s` later than it would alone (waiting for the SMs a running GEMM holds), and while it
// runs, compute on its GPUs runs `compute_slowdown` times longer.
struct InterferenceEffect {
  double extra_s = 0;
  double compute_slowdown = 1;
};
// The table's collective names, in the order of sim's CollectiveKind where they exist.
inline constexpr const char* INTERFERENCE_COLLECTIVES[] = {"all_reduce", "all_gather", "reduce_scatter"};

// The effect for `collective` of `bytes` beside GEMMs of `gemm_flops`: linear in log(bytes)
// between the measured sizes of each measured GEMM, then linear in log(GEMM FLOPs) between the
// two GEMMs that bracket `gemm_flops`; clamped at the table's ends in both. extra_s is the
// measured (beside - alone), at least 0. No points for the collective: no effect.
InterferenceEffect interference_effect(const Interference& table, std::string_view collective, double bytes,
                                       double gemm_flops);

// Host time a training stack spends per unit of work (its eager dispatch: operators, autograd,
// module hooks, kernel launches), measured per stack on a model whose kernels are shorter than
// their launches (calibrate/scripts/torch_stack_dispatch.py).
struct StackDispatch {
  std::string stack;  // "pytorch", "pytorch-ddp", "pytorch-fsdp:zero3", "pytorch-pipelining:1f1b", ...
  // The ranks of the calibration run (its world size), where a stack is calibrated at several:
  // a collective's host side waits for the slowest rank, so FSDP's host time per layer grows with
  // the ranks (5.55 ms at 4 ranks against 4.35 at 2 on one host; workloads/stacks/training_stacks.md).
  // Unset: one calibration for every size.
  std::optional<int> ranks;
  double layer_forward_us = 0;         // per transformer layer and micro-batch
  double layer_backward_us = 0;
  double micro_batch_forward_us = 0;   // per micro-batch besides the layers (embedding, head, loss; a
  double micro_batch_backward_us = 0;  // pipeline's schedule, sends and receives)
  double sync_layer_us = 0;            // extra per layer in a micro-batch that reduces gradients (DDP)
  double optimizer_step_us = 0;        // per step (optimizer step and zero_grad), besides the layers
  double optimizer_layer_us = 0;       // per transformer layer in the optimizer step
};

struct HostDispatch {
  std::optional<double> kernel_launch_us;  // one cudaLaunchKernel, host side (trainsim-calibrate)
  std::optional<double> gpu_kernel_us;     // the shortest GPU time of a kernel queued back to back
  std::optional<double> op_us;             // one eager PyTorch operator with autograd, host side
  std::optional<double> hook_us;           // one module hook call, host side
  std::vector<StackDispatch> stacks;
  std::string source;
};

// Flash attention measured per shape (FlashAttention-2's FLOP convention: forward 4 b a s^2 d,
// halved when causal; backward 2.5 times the forward).
struct AttentionKernel {
  double head_dim = 0;
  double seq = 0;
  double batch_heads = 0;  // batch x heads (per tensor-parallel rank)
  bool causal = true;
  double forward_TFLOPs = 0;
  double backward_TFLOPs = 0;
};

// A CPU optimizer as a framework runs it (not our CPU-Adam): per process, with `processes` of
// them stepping at once on one node.
struct CpuOptimizerRate {
  std::string what;  // "torch_adamw_fused_cpu"
  int processes = 1;
  int threads_per_process = 1;
  double params_per_s_per_process = 0;
  // PyTorch's fused CPU AdamW steps its parameter list one tensor at a time, each tensor a
  // parallel region of the process's threads, so a step over many small tensors costs more than
  // its parameter count at the big-tensor rate. Seconds per tensor by elements per tensor (sizes
  // ascending), measured over sets of equal tensors; empty where the calibration has none.
  struct TensorPoint {
    double elements = 0;
    double seconds = 0;
  };
  std::vector<TensorPoint> seconds_per_tensor;
};

// PyTorch's own CPU offload path (FSDP2's CPUOffloadPolicy) measured as it runs, with `gpus`
// ranks of one node doing the same at once (calibrate/scripts/torch_offload_bench.py):
// curves by bytes per copy (group_size = the GPUs copying at once): "d2h_pageable" (a blocking
// copy into a fresh pageable tensor), "d2h_pinned", "h2d_pinned", and "cpu_grad_add" (the CPU's
// `acc += new` over fp32 shards, GB/s of the added tensor); fused CPU AdamW per process over
// pinned fp32 shards.
struct TorchOffload {
  std::vector<BandwidthCurve> curves;
  std::vector<CpuOptimizerRate> adamw;
  std::string source;
};
inline constexpr const char* TORCH_OFFLOAD_CURVES[] = {"d2h_pageable", "d2h_pinned", "h2d_pinned", "cpu_grad_add"};

struct Calibration {
  std::vector<GemmEfficiency> gemm;  // products timed back to back (trainsim-calibrate's GEMM bench)
  // Products timed inside training steps, as steps run them (calibrate/scripts/torch_step_gemms.py):
  // back to back a GPU at its power limit lowers its clock, in a step it runs its products about
  // 10% faster (reports/calibration/step-gemms/). The replay prefers it for unbatched products.
  std::vector<GemmEfficiency> gemm_in_step;
  std::string gemm_in_step_source;
  std::vector<BandwidthCurve> collectives;  // bus bandwidth (nccl-tests definition)
  std::vector<BandwidthCurve> copies;       // host<->device, device copies, storage
  std::vector<BandwidthCurve> kernels;      // memory-bound kernels, achieved bytes/s
  std::optional<double> cpu_adam_params_per_s;  // all cores of a node
  std::optional<Interference> interference;
  std::optional<HostDispatch> host_dispatch;
  std::vector<AttentionKernel> attention;
  std::string attention_source;
  std::vector<CpuOptimizerRate> cpu_optimizers;
  std::string cpu_optimizers_source;
  std::optional<TorchOffload> torch_offload;
  // The trainsim reference step's own kernels by class (hwprofiles/reference_kernel_table.hpp): GB/s
  // by the bytes one launch moves, measured by trainsim-calibrate --only reference_kernels.
  std::vector<BandwidthCurve> reference_kernels;
  std::string reference_kernels_source;
  bool empty() const {
    return gemm.empty() && gemm_in_step.empty() && collectives.empty() && copies.empty() && kernels.empty() && !cpu_adam_params_per_s &&
           !interference && !host_dispatch && attention.empty() && cpu_optimizers.empty() && !torch_offload &&
           reference_kernels.empty();
  }
};

struct ClusterProfile {
  std::string name;
  std::string description;
  std::string origin;  // where it was loaded from: a path or "built-in"
  int node_count = 1;  // nodes this cluster has
  GpuSpec gpu;
  IntraNodeSpec intra_node;
  PcieSpec pcie;
  HostSpec host;
  StorageSpec storage;
  NicSpec nic;
  InterNodeSpec inter_node;
  CostSpec cost;
  std::optional<NcclSpec> nccl;
  Calibration calibration;
  nlohmann::json provenance;  // kept as written: who measured or compiled it, when, how

  double gpu_memory_bytes() const;          // memory_GiB in bytes
  double gpu_usable_bytes() const;          // minus reserved_GiB
  double host_memory_bytes() const;
  double storage_capacity_bytes() const;    // all devices of a node
  int gpus_per_node() const { return gpu.count_per_node; }
};

}  // namespace trainsim::hw
