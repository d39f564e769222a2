#include "reference_result.hpp"

#include <algorithm>
#include <stdexcept>

#include "storage_states.hpp"

namespace trainsim::calibrate::ref {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Each timed step's time on its slowest rank (the ranks start every step together).
std::vector<double> slowest_steps(const ReferenceRun& run) {
  const std::size_t steps = run.ranks[0].step_times_s.size();
  std::vector<double> slowest(steps, 0.0);
  for (const RankMeasurement& r : run.ranks) {
    for (std::size_t i = 0; i < steps && i < r.step_times_s.size(); ++i) slowest[i] = std::max(slowest[i], r.step_times_s[i]);
  }
  return slowest;
}

}  // namespace

double step_flops(const ReferenceOptions& o) {
  const GptConfig& c = o.model;
  const double h = c.hidden, s = c.seq, L = c.layers, V = c.vocab;
  const double sequences = static_cast<double>(c.micro_batch) * o.grad_accum * (is_pipeline(o.mode) ? 1 : o.gpus);
  // Per sequence, forward: 2 s (12 L h^2 + V h) for the weight GEMMs, 4 L s^2 h for QK^T and PV.
  const double forward = 2 * s * (12 * L * h * h + V * h) + 4 * L * s * s * h;
  return 3 * forward * sequences;  // model FLOPs: a recomputed forward is not counted
}

nlohmann::ordered_json model_json(const ReferenceOptions& o) {
  const GptConfig& c = o.model;
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["name"] = "reference-gpt-L" + std::to_string(c.layers) + "-h" + std::to_string(c.hidden);
  j["description"] =
      "trainsim-calibrate reference GPT (calibrate/reference/gpt_layout.hpp): pre-LN, fused QKV with bias, causal "
      "attention as batched GEMMs and a masked softmax (the s x s scores materialized), tanh-GELU MLP, tied LM head, "
      "learned positions, no dropout; the same module as reports/validation/scripts/model.py.";
  j["architecture"] = {{"layers", c.layers}, {"hidden", c.hidden}, {"heads", c.heads}, {"ffn_hidden", 4 * c.hidden},
                       {"vocab", c.vocab}, {"seq_len", c.seq}, {"tied_embeddings", true}, {"biases", true},
                       {"dropout", false}, {"norm", "layernorm"}, {"mlp", "gelu"}, {"position", "learned"}};
  j["numerics"] = {{"precision", "bf16-mixed"}, {"attention", "materialized"}, {"fp32_residual", true}};
  j["published"] = {{"params", static_cast<double>(gpt_param_count(c))},
                    {"significant_digits", 6},
                    {"source", "counted from calibrate/reference/gpt_layout.cpp (exact)"}};
  return j;
}

nlohmann::ordered_json measured_run_json(const ReferenceRun& run, const std::string& model_file) {
  const ReferenceOptions& o = run.options;
  if (run.ranks.empty()) throw std::invalid_argument("measured_run_json: no ranks");
  const int n = static_cast<int>(run.ranks.size());
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["kind"] = "trainsim.measured_run";
  j["name"] = o.name;
  j["provenance"] = {{"script", "trainsim-calibrate reference (calibrate/reference/, calibrate/cuda/ref_*)"},
                     {"command", o.command_line},
                     {"date", run.date},
                     {"host", run.host},
                     {"gpu", run.gpu_name},
                     {"gpus", n},
                     {"gpu_memory_bytes", run.gpu_memory_bytes},
                     {"cuda", run.cuda_runtime},
                     {"cublas", run.cublas},
                     {"nccl", run.nccl},
                     {"driver", run.driver}};
  j["model"] = model_file;
  nlohmann::ordered_json details;
  details["implementation"] =
      "trainsim-calibrate reference: our own CUDA kernels and cuBLASLt GEMMs; stack trainsim-reference "
      "(workloads/stacks/training_stacks.md): bf16 parameters (not kept under ZeRO-3: cast from the fp32 master per "
      "gather), fp32 gradients accumulated over micro-batches and reduce-scattered in fp32, fp32 master weights and "
      "Adam moments, one static arena per GPU";
  details["mixed_precision"] = "bf16 GEMM inputs and saved activations, fp32 accumulate and GEMM outputs, fp32 "
                               "residual stream and LayerNorm statistics";
  const bool pipe = is_pipeline(o.mode);
  const bool zero3 = o.mode == RefMode::ZERO3 || o.mode == RefMode::OFFLOAD, offload = o.mode == RefMode::OFFLOAD;
  if (pipe) {
    details["layers_per_stage"] = split_layers(o.model.layers, n);
    details["schedule"] = o.mode == RefMode::GPIPE ? "GPipe: all forwards, then all backwards"
                                                   : "1F1B (PipeDream-Flush), Megatron-LM's non-interleaved order";
    details["p2p"] = "NCCL send/recv of fp32 [micro_batch, seq, hidden] activations and gradients on the compute "
                     "stream, a send and a receive issued together grouped (Megatron-LM's p2p helpers)";
    details["stage0"] = "token + position embeddings and its layers";
    details["last_stage"] = "its layers, final LayerNorm, tied LM head (a copy of the embedding; its gradient is summed "
                            "with stage 0's after backward, as Megatron-LM does) and the loss; the head's backward runs "
                            "right after its forward";
  }
  details["zero_stage"] = zero3 ? 3 : 0;
  if (offload) {
    details["offload"] = "ZeRO-Infinity CPU tier: fp32 master weights, Adam moments, fp32 gradient shard and bf16 "
                         "parameters in pinned host memory; each rank copies its bf16 shard of a unit host->GPU then "
                         "all-gathers (on the collective stream, prefetching the next layer); gradient shards "
                         "accumulate on the GPU and go to the host after the last micro-batch's reduce-scatter; "
                         "CPU-Adam (calibrate/cpu_adam.hpp, AVX-512/AVX2) on " +
                         std::to_string(o.cpu_threads) + " threads per rank";
    if (!o.storage_dir.empty()) {
      details["offload_storage"] = "fp32 master weights and Adam moments in one O_DIRECT file per rank in " + o.storage_dir +
                                   ", streamed in chunks of 4 Mi parameters through two host buffers (read of the "
                                   "next chunk overlapping CPU-Adam on this one, then write-back; io_uring or libaio); "
                                   "the fp32 gradient shard and bf16 parameters stay in pinned host memory";
    }
  }
  if (zero3) {
    details["param_gather"] = "fp32 master shard cast to bf16, bf16 all-gather per unit (embedding, each layer, final LayerNorm) on a collective stream, "
                              "prefetching the next unit; re-gathered in backward";
    details["grad_sync"] = "fp32 reduce-scatter per unit after its backward in every micro-batch, added into the fp32 gradient shard, on the collective stream";
  }
  details["recompute"] = to_string(o.recompute);
  const bool host_ckpt = o.checkpoints == Checkpoints::HOST;
  if (host_ckpt) {
    details["checkpoints"] =
        "host (calibrate/cuda/ref_checkpoints.hpp): each layer's input x(l), the fp32 residual [micro_batch, seq, "
        "hidden], copied to pinned host memory after the layer's forward on a device-to-host stream of its own, and "
        "back on a host-to-device stream of its own one layer ahead of its recompute (issued once the backward of "
        "layer l + 2 has ended; x(L-1) once its forward has, x(L-2) after the head), CUDA events only; on the GPU a "
        "ring of three residual buffers and x(L), which the head reads";
  }
  details["optimizer"] = std::string(offload ? "CPU-Adam on the host" : "Adam on the GPU") + " (fp32 master, moments; betas 0.9, 0.95; eps 1e-8; lr " + std::to_string(o.lr) +
                         "; no weight decay), new bf16 copy written by the same kernel";
  details["grad_accum"] = o.grad_accum;
  details["attention_kernel"] = "batched cuBLASLt GEMMs QK^T and PV over the full s x s square, masked softmax kernel";
  details["allocator"] = "one arena per GPU, every buffer placed once at start (peak allocated = arena high-water mark)";
  details["data"] = "fixed synthetic tokens (hash of position)";
  details["loss_last_step"] = run.losses.empty() ? 0.0 : run.losses.back();
  details["losses"] = run.losses;
  details["params_total"] = gpt_param_count(o.model);
  // Per-stream busy time and bytes moved, per rank (medians over the timed steps).
  nlohmann::ordered_json streams = nlohmann::ordered_json::array();
  const double step_median = median(slowest_steps(run));
  for (const RankMeasurement& r : run.ranks) {
    auto med = [&](auto field) {
      std::vector<double> v;
      for (const StreamBusy& b : r.busy) v.push_back(b.*field);
      return median(v);
    };
    const double step = median(r.step_times_s);
    const double compute = med(&StreamBusy::compute_s);
    streams.push_back({{"compute_busy_s", compute},
                       {"optimizer_s", med(&StreamBusy::optimizer_s)},
                       {"collective_busy_s", med(&StreamBusy::collective_s)},
                       {"host_transfer_busy_s", med(&StreamBusy::host_transfer_s)},
                       {"storage_busy_s", med(&StreamBusy::storage_s)},
                       {"cpu_optimizer_s", med(&StreamBusy::cpu_optimizer_s)},
                       {"compute_idle_s", std::max(0.0, step - compute)},
                       {"exposed_collective_s", med(&StreamBusy::exposed_collective_s)},
                       // The bubble as GPipe's closed form and the simulator define it: the share of
                       // the whole step (the slowest rank's) this stage's compute stream is not
                       // running forward, backward or optimizer work; the stage's idle share between
                       // its own first and last pipeline operation beside it.
                       {"bubble_fraction", step_median > 0 ? std::max(0.0, 1.0 - compute / step_median) : 0.0},
                       {"schedule_bubble_fraction", med(&StreamBusy::bubble_fraction)},
                       {"bytes_to_host", r.bytes_d2h},
                       {"bytes_from_host", r.bytes_h2d},
                       {"bytes_storage_read", r.bytes_storage_read},
                       {"bytes_storage_written", r.bytes_storage_written},
                       {"collective_bytes_sent", r.collective_bytes}});
    if (host_ckpt) {
      streams.back()["checkpoint_out_busy_s"] = med(&StreamBusy::checkpoint_out_s);
      streams.back()["checkpoint_in_busy_s"] = med(&StreamBusy::checkpoint_in_s);
      streams.back()["checkpoint_bytes_to_host"] = r.checkpoint_bytes_to_host;
      streams.back()["checkpoint_bytes_from_host"] = r.checkpoint_bytes_from_host;
    }
  }
  details["streams_per_rank"] = streams;
  if (o.storage_probe_chunks > 0) {
    // Raw per rank and step; how a row's storage figure is taken from them is the reader's rule
    // (reports/validation/reference/scripts/machine_storage.py), not the tool's.
    nlohmann::ordered_json probes = nlohmann::ordered_json::array();
    for (const RankMeasurement& r : run.ranks) {
      nlohmann::ordered_json steps = nlohmann::ordered_json::array();
      for (const StorageProbe& p : r.storage_probes) {
        steps.push_back({{"bytes_read", p.bytes_read},
                         {"bytes_written", p.bytes_written},
                         {"seconds", p.seconds},
                         {"read_GBps", p.seconds > 0 ? p.bytes_read / p.seconds / 1e9 : 0.0},
                         {"write_GBps", p.seconds > 0 ? p.bytes_written / p.seconds / 1e9 : 0.0}});
      }
      probes.push_back(steps);
    }
    details["storage_probes"] = {
        {"chunks", o.storage_probe_chunks},
        {"chunk_bytes", static_cast<double>(STATE_CHUNK_PARAMS * 3 * sizeof(float))},
        {"what", "a calibration of the disk beside each timed step, not part of it: right before the step (outside "
                 "its timing), after a barrier, every rank at once streams the first `chunks` chunks of its own state "
                 "file through the step's pattern (StorageStates::probe_stream: chunk 0 read, then chunk c + 1 read in "
                 "flight while chunk c is written back, both waited for; the step's buffers, 8 MiB O_DIRECT requests "
                 "and queue) with no CPU-Adam between, writing back what it read (states unchanged); per rank, per "
                 "timed step: bytes read and written, the probe's wall seconds, and its read and write rates at once"},
        {"per_rank", probes}};
  }
  j["stack"] = {{"name", "trainsim-reference"}, {"details", details}};
  j["strategy"] = {{"schema_version", 1},
                   {"gpus", n},
                   {"dp", pipe ? 1 : n},
                   {"tp", 1},
                   {"pp", pipe ? n : 1},
                   {"zero", zero3 ? 3 : 0},
                   {"offload_params", offload ? "cpu" : "none"},
                   {"offload_optimizer", !offload ? "none" : o.storage_dir.empty() ? "cpu" : "nvme"},
                   {"offload_activations", host_ckpt ? "cpu" : "none"},
                   {"micro_batch", o.model.micro_batch},
                   {"global_batch", o.model.micro_batch * o.grad_accum * (pipe ? 1 : n)},
                   {"recompute", o.recompute == Recompute::LAYER ? "full" : "none"},
                   {"precision", "bf16-mixed"},
                   {"seq", o.model.seq}};
  if (pipe) {
    j["strategy"]["schedule"] = o.mode == RefMode::GPIPE ? "gpipe" : "1f1b";
    // The split that ran (split_layers), so the simulator replays it instead of balancing by cost.
    const std::vector<int> per = split_layers(o.model.layers, n);
    j["strategy"]["first_stage_layers"] = per.front();
    j["strategy"]["last_stage_layers"] = per.back();
  }
  nlohmann::ordered_json m;
  m["warmup_steps"] = o.warmup;
  m["warmup_step_times_s"] = run.ranks[0].warmup_step_times_s;
  const std::vector<double> slowest = slowest_steps(run);
  const double med = median(slowest);
  m["step_times_s"] = slowest;
  m["step_time_s"] = med;
  m["step_time_spread"] = med > 0 ? (*std::max_element(slowest.begin(), slowest.end()) -
                                     *std::min_element(slowest.begin(), slowest.end())) / med
                                  : 0.0;
  nlohmann::ordered_json per_rank = nlohmann::ordered_json::array(), alloc = per_rank, reserved = per_rank, params = per_rank;
  double exposed = 0;
  for (const RankMeasurement& r : run.ranks) {
    per_rank.push_back(r.step_times_s);
    alloc.push_back(r.peak_allocated_bytes);
    reserved.push_back(r.peak_reserved_bytes);
    params.push_back(r.params);
    std::vector<double> e;
    for (const StreamBusy& b : r.busy) e.push_back(b.exposed_collective_s);
    exposed = std::max(exposed, median(e));
  }
  m["step_times_s_per_rank"] = per_rank;
  m["peak_allocated_bytes"] = alloc;
  m["peak_reserved_bytes"] = reserved;
  m["params_per_rank"] = params;
  m["tokens_per_s"] = med > 0 ? static_cast<double>(o.model.tokens()) * o.grad_accum * (pipe ? 1 : n) / med : 0.0;
  if (zero3) m["busy"] = {{"exposed_communication_s", exposed}};
  // measured.busy is rank 0's (reports/validation/README.md, the measured-run schema), and
  // `trainsim validate` sets it beside the replay's stage 0: stage 0's whole-step bubble, not the
  // mean over stages (which the earlier rows wrote: the last stage idles less, so their bubble
  // read 0.04 under the simulator's stage 0 on the 2-stage rows). Every stage's is in
  // stack.details.streams_per_rank.
  if (pipe) m["busy"] = {{"bubble_fraction", streams.at(0)["bubble_fraction"].get<double>()}};
  j["measured"] = m;
  return j;
}

}  // namespace trainsim::calibrate::ref
