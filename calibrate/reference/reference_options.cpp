#include "reference_options.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "../errors.hpp"
#include "storage_states.hpp"

namespace trainsim::calibrate::ref {
namespace {

int parse_int(const std::string& flag, const std::string& text, int min, int max) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    throw UsageError(flag, "an integer from " + std::to_string(min) + " to " + std::to_string(max), "\"" + text + "\"");
  }
  return value;
}

}  // namespace

std::string to_string(RefMode m) {
  switch (m) {
    case RefMode::SINGLE: return "single";
    case RefMode::ZERO3: return "zero3";
    case RefMode::OFFLOAD: return "infinity";
    case RefMode::GPIPE: return "gpipe";
    case RefMode::ONE_F_ONE_B: return "1f1b";
  }
  return "?";
}
std::string to_string(Recompute r) { return r == Recompute::NONE ? "none" : "layer"; }
std::string to_string(Checkpoints c) { return c == Checkpoints::GPU ? "gpu" : "host"; }

std::string reference_usage() {
  return "usage: trainsim-calibrate reference --out DIR [options]\n"
         "       trainsim-calibrate reference --check --out DIR [--gpus N]\n"
         "\n"
         "A real training step of a GPT decoder (bf16 cuBLASLt GEMMs, fp32 master weights, Adam),\n"
         "timed with CUDA events; writes NAME.json (trainsim.measured_run) and NAME.model.json.\n"
         "--check instead runs the correctness suite at a small size (GPU against the CPU fp64\n"
         "reference, loss over 20 steps, recompute, host checkpoints against GPU ones, ZeRO-3 against\n"
         "one GPU) and writes check.json.\n"
         "\n"
         "  --mode single|zero3|infinity  one GPU; ZeRO-3 over --gpus GPUs through NCCL; or ZeRO-Infinity:\n"
         "                        ZeRO-3 with fp32 master, Adam moments and bf16 parameters in pinned host\n"
         "                        memory, fetched per layer, updated by CPU-Adam (default single)\n"
         "  --mode gpipe|1f1b     pipeline over --gpus stages (NCCL send/recv), --grad-accum micro-batches\n"
         "  --gpus N              GPUs for zero3, infinity and the pipelines (default 1)\n"
         "  --layers N --hidden N --heads N --vocab N --seq N   the GPT (default 24, 1024, 16, 50304, 2048)\n"
         "  --storage-dir DIR     infinity: fp32 master and Adam moments in an O_DIRECT file there, streamed\n"
         "                        through CPU-Adam each step (ZeRO-Infinity's NVMe tier; default: host memory)\n"
         "  --storage-probe-chunks N  with --storage-dir: before each timed step, all ranks together stream the\n"
         "                        first N chunks (4 Mi parameters, 48 MiB) of their state files through the\n"
         "                        step's read/write pattern, writing back what they read (states unchanged), and\n"
         "                        the JSON records each probe's bytes and seconds: the disk's rate beside each\n"
         "                        step, outside its timing (default 0: no probe)\n"
         "  --cpu-threads N       CPU-Adam threads per GPU under infinity (default: logical CPUs / GPUs)\n"
         "  --micro-batch N       sequences per micro-batch per GPU (default 4)\n"
         "  --grad-accum N        micro-batches per step (default 1)\n"
         "  --recompute none|layer  activation checkpointing per layer (default none)\n"
         "  --checkpoints gpu|host  with --recompute layer: keep each layer's input (the fp32 residual) on the\n"
         "                        GPU, or in pinned host memory: copied out after the layer's forward, back one\n"
         "                        layer ahead of its recompute, on copy streams of their own (single, zero3,\n"
         "                        infinity; default gpu)\n"
         "  --steps N --warmup N  timed and untimed steps (default 5 and 2)\n"
         "  --lr F                Adam learning rate (default 1e-4)\n"
         "  --name NAME           run name (default from the configuration)\n"
         "\nExit codes: 0 done, 1 failed (a check or a CUDA call), 2 bad command line, 3 no GPU.\n";
}

int state_file_chunks(const ReferenceOptions& o) {
  // ParamStore's shard (calibrate/cuda/ref_param_store.cpp): the padded layout over the ranks.
  const std::size_t shard = make_layout(o.model, o.gpus).total / static_cast<std::size_t>(o.gpus);
  return static_cast<int>((shard + STATE_CHUNK_PARAMS - 1) / STATE_CHUNK_PARAMS);
}

std::string default_run_name(const ReferenceOptions& o) {
  std::string n = to_string(o.mode) + (o.storage_dir.empty() ? "" : "-storage") + (o.recompute != Recompute::LAYER       ? ""
                                                   : o.checkpoints == Checkpoints::HOST ? "-ckpthost"
                                                                                        : "-ckpt") + "_L" +
                  std::to_string(o.model.layers) + "-h" + std::to_string(o.model.hidden) + "_mb" +
                  std::to_string(o.model.micro_batch) + "x" + std::to_string(o.grad_accum);
  return n;
}

ReferenceOptions parse_reference_options(const std::vector<std::string>& args) {
  ReferenceOptions o;
  o.command_line = "trainsim-calibrate reference";
  for (const auto& a : args) o.command_line += " " + a;
  bool mode_given = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size() || args[i + 1].starts_with("--")) throw UsageError(a, "a value after the flag");
      return args[++i];
    };
    if (a == "--out") o.out_dir = value();
    else if (a == "--name") o.name = value();
    else if (a == "--check") o.check = true;
    else if (a == "--mode") {
      const std::string& m = value();
      if (m == "single") o.mode = RefMode::SINGLE;
      else if (m == "zero3") o.mode = RefMode::ZERO3;
      else if (m == "infinity") o.mode = RefMode::OFFLOAD;
      else if (m == "gpipe") o.mode = RefMode::GPIPE;
      else if (m == "1f1b") o.mode = RefMode::ONE_F_ONE_B;
      else throw UsageError("--mode", "single, zero3, infinity, gpipe or 1f1b", "\"" + m + "\"");
      mode_given = true;
    } else if (a == "--recompute") {
      const std::string& r = value();
      if (r == "none") o.recompute = Recompute::NONE;
      else if (r == "layer") o.recompute = Recompute::LAYER;
      else throw UsageError("--recompute", "none or layer", "\"" + r + "\"");
    } else if (a == "--checkpoints") {
      const std::string& c = value();
      if (c == "gpu") o.checkpoints = Checkpoints::GPU;
      else if (c == "host") o.checkpoints = Checkpoints::HOST;
      else throw UsageError("--checkpoints", "gpu or host", "\"" + c + "\"");
    } else if (a == "--gpus") o.gpus = parse_int(a, value(), 1, 64);
    else if (a == "--storage-dir") o.storage_dir = value();
    else if (a == "--storage-probe-chunks") o.storage_probe_chunks = parse_int(a, value(), 0, 1 << 20);
    else if (a == "--cpu-threads") o.cpu_threads = parse_int(a, value(), 1, 4096);
    else if (a == "--layers") o.model.layers = parse_int(a, value(), 1, 4096);
    else if (a == "--hidden") o.model.hidden = parse_int(a, value(), 8, 1 << 17);
    else if (a == "--heads") o.model.heads = parse_int(a, value(), 1, 4096);
    else if (a == "--vocab") o.model.vocab = parse_int(a, value(), 8, 1 << 22);
    else if (a == "--seq") o.model.seq = parse_int(a, value(), 8, 1 << 20);
    else if (a == "--micro-batch") o.model.micro_batch = parse_int(a, value(), 1, 1 << 16);
    else if (a == "--grad-accum") o.grad_accum = parse_int(a, value(), 1, 1 << 16);
    else if (a == "--steps") o.steps = parse_int(a, value(), 1, 100000);
    else if (a == "--warmup") o.warmup = parse_int(a, value(), 0, 100000);
    else if (a == "--lr") {
      const std::string& t = value();
      char* end = nullptr;
      o.lr = std::strtod(t.c_str(), &end);
      if (end != t.c_str() + t.size() || !(o.lr > 0 && o.lr < 1)) throw UsageError("--lr", "a number in (0, 1)", "\"" + t + "\"");
    } else throw UsageError(a, "no such flag for reference (see trainsim-calibrate reference --help)");
  }
  if (o.out_dir.empty()) throw UsageError("--out", "an output directory (--out DIR)");
  if (o.mode == RefMode::SINGLE && o.gpus != 1 && mode_given) {
    throw UsageError("--gpus", "1 with --mode single (use --mode zero3 for several GPUs)", std::to_string(o.gpus));
  }
  if (o.gpus > 1 && !mode_given) o.mode = RefMode::ZERO3;
  try {
    validate(o.model);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    const auto colon = what.find(": expected ");
    throw UsageError(what.substr(0, colon), what.substr(colon + 11));
  }
  if (is_pipeline(o.mode) && o.gpus < 2) throw UsageError("--gpus", "at least 2 pipeline stages", std::to_string(o.gpus));
  if (is_pipeline(o.mode) && o.model.layers < o.gpus) {
    throw UsageError("--layers", "at least one layer per pipeline stage (--gpus " + std::to_string(o.gpus) + ")",
                     std::to_string(o.model.layers));
  }
  if (!o.storage_dir.empty() && o.mode != RefMode::OFFLOAD) {
    throw UsageError("--storage-dir", "--mode infinity as well (the storage tier holds its optimizer states)");
  }
  if (o.storage_probe_chunks > 0) {
    if (o.storage_dir.empty()) throw UsageError("--storage-probe-chunks", "--storage-dir as well (it probes the state files)");
    if (o.check) throw UsageError("--storage-probe-chunks", "a measured run, not --check");
    const int chunks = state_file_chunks(o);
    if (o.storage_probe_chunks > chunks) {
      throw UsageError("--storage-probe-chunks",
                       "at most the " + std::to_string(chunks) + " chunks of a rank's state file at this model and --gpus",
                       std::to_string(o.storage_probe_chunks));
    }
  }
  if (o.checkpoints == Checkpoints::HOST) {
    if (o.recompute != Recompute::LAYER) {
      throw UsageError("--checkpoints", "--recompute layer as well (host memory holds the layer checkpoints)", "host");
    }
    if (is_pipeline(o.mode)) {
      throw UsageError("--checkpoints", "gpu with --mode " + to_string(o.mode) + " (host checkpoints: single, zero3, infinity)",
                       "host");
    }
    if (o.check) throw UsageError("--checkpoints", "a measured run, not --check (the check compares host against GPU checkpoints itself)", "host");
  }
  if (o.cpu_threads == 0) o.cpu_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / o.gpus);
  if (o.name.empty()) o.name = default_run_name(o);
  for (char c : o.name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok) throw UsageError("--name", "letters, digits, '-', '_', '.'", "\"" + o.name + "\"");
  }
  return o;
}

}  // namespace trainsim::calibrate::ref
