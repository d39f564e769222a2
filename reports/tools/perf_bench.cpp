// trainsim-bench: wall time and peak memory of the simulator on the reference steps and
// on growing work (GPUs, layers, micro-batches). Each measurement runs the real CLI
// (`trainsim simulate ... --format json`) as a child process, as users run it: wall time from
// fork to exit, peak RSS of the process tree from wait4 (bench_runs.hpp). Writes bench.json,
// README.md and cost_curve.svg into the output folder (reports/perf by default); the planner's
// section (`--section plan`) is plan_bench.cpp.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench_runs.hpp"
#include "plan_bench.hpp"
#include "soundness_bench.hpp"
#include "svg_plot.hpp"

namespace {

using namespace trainsim::bench;

struct Measurement {
  std::string name;
  std::string args;
  double wall_s = 0;       // median
  double wall_min_s = 0, wall_max_s = 0;
  double max_rss_MiB = 0;
  double step_time_s = 0;
  std::size_t ops = 0, activities = 0;
  int simulated_gpus = 0, gpus = 0, layers = 0, micro_batches = 0;
};

Measurement measure(const std::string& trainsim, const std::string& name, const std::string& args, int repeat) {
  Measurement m;
  m.name = name;
  m.args = args;
  const Repeated r = run_repeated(trainsim, "simulate " + args + " --format json", repeat);
  m.wall_s = r.wall_s;
  m.wall_min_s = r.wall_min_s;
  m.wall_max_s = r.wall_max_s;
  m.max_rss_MiB = r.max_rss_MiB;
  const auto& a = r.last.answer;
  if (a["step_time_s"].is_null()) throw std::runtime_error(name + ": not simulated: " + a["infeasible_reason"].dump());
  m.step_time_s = a["step_time_s"].get<double>();
  m.ops = a["simulation"]["ops"].get<std::size_t>();
  m.activities = a["simulation"]["activities"].get<std::size_t>();
  m.simulated_gpus = a["simulation"]["simulated_gpus"].get<int>();
  m.gpus = a["inputs"]["strategy"]["gpus"].get<int>();
  m.layers = a["inputs"]["model"]["layers"].get<int>();
  m.micro_batches = a["inputs"]["strategy"]["micro_batches"].get<int>();
  std::cerr << fmt::format("  {:<44} {:>8.3f} s  {:>7.1f} MiB  {:>8} ops\n", name, m.wall_s, m.max_rss_MiB, m.ops);
  return m;
}

nlohmann::ordered_json to_json(const Measurement& m) {
  return {{"name", m.name},           {"command", "trainsim simulate " + m.args},
          {"wall_s_median", m.wall_s}, {"wall_s_min", m.wall_min_s},
          {"wall_s_max", m.wall_max_s}, {"max_rss_MiB", m.max_rss_MiB},
          {"gpus", m.gpus},            {"simulated_gpus", m.simulated_gpus},
          {"layers", m.layers},        {"micro_batches", m.micro_batches},
          {"ops", m.ops},              {"activities", m.activities},
          {"simulated_step_time_s", m.step_time_s}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"trainsim-bench: simulator wall time and peak memory"};
  std::string trainsim = "build/trainsim", out_dir = "reports/perf";
  int repeat = 3;
  std::string section = "all";
  app.add_option("--trainsim", trainsim, "The trainsim binary to measure")->capture_default_str();
  std::string property_test = "build/tests/planner_property_test";
  app.add_option("--section", section,
                 "What to measure: simulate (reference steps, cost curve), plan (the planner), soundness (the planner's "
                 "property suites in full, a few minutes), or all (all but soundness)")
      ->check(CLI::IsMember({"simulate", "plan", "soundness", "all"}))
      ->capture_default_str();
  app.add_option("--out", out_dir, "Output folder")->capture_default_str();
  app.add_option("--property-test", property_test, "The built planner_property_test (--section soundness)")->capture_default_str();
  app.add_option("--repeat", repeat, "Runs per measurement (median reported)")->check(CLI::Range(1, 50))->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "trainsim-bench: error: " << e.what() << "\n";
    return 2;
  }
  if (access(trainsim.c_str(), X_OK) != 0) {
    std::cerr << "trainsim-bench: error: --trainsim: expected an executable trainsim binary, got \"" << trainsim << "\"\n";
    return 2;
  }
  try {
    char plan_date[32];
    const std::time_t plan_now = std::time(nullptr);
    std::strftime(plan_date, sizeof plan_date, "%Y-%m-%d %H:%M UTC", std::gmtime(&plan_now));
    const std::string command =
        fmt::format("trainsim-bench --trainsim {} --out {} --repeat {} --section {}", trainsim, out_dir, repeat, section);
    if (section == "plan") {
      std::filesystem::create_directories(out_dir);
      plan_section(trainsim, out_dir, repeat, plan_date, command);
      return 0;
    }
    if (section == "soundness") {
      std::filesystem::create_directories(out_dir);
      soundness_section(property_test, out_dir, plan_date, fmt::format("trainsim-bench --section soundness --property-test {} --out {}",
                                                                      property_test, out_dir));
      return 0;
    }
    std::cerr << "Reference steps (" << repeat << " runs each, median):\n";
    const std::string zinf = "--zero 3 --offload-params nvme --offload-optimizer nvme --recompute full --offload-activations cpu";
    const std::string llama405b =
        "--num-layers 126 --hidden-size 16384 --num-attention-heads 128 --num-query-groups 8 --group-query-attention "
        "--ffn-hidden-size 53248 --swiglu --normalization RMSNorm --position-embedding-type rope "
        "--untie-embeddings-and-output-weights --disable-bias-linear --attention-dropout 0 --hidden-dropout 0 "
        "--seq-length 8192 --max-position-embeddings 8192 --vocab-size 128256 --bf16 --use-flash-attn "
        "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 --virtual-pipeline-model-parallel-size 2 "
        "--sequence-parallel --use-distributed-optimizer --recompute-granularity full --recompute-method uniform "
        "--recompute-num-layers 1 --micro-batch-size 1 "
        "--global-batch-size 2048";
    struct Target {
      double wall_s;
      double rss_MiB;
    };
    std::vector<std::pair<Measurement, Target>> refs;
    auto ref = [&](const std::string& name, const std::string& args, Target t) {
      refs.push_back({measure(trainsim, name, args, repeat), t});
    };
    ref("Megatron 1008B, 3072 A100 (TP 8, PP 64, batch 3072)",
        "--model megatron-1t --hw dgx-a100 --gpus 3072 --tp 8 --pp 64 --recompute full --global-batch 3072", {5, 0});
    ref("Llama-style 405B, 16384 H100 (TP 8, PP 16 x 2 chunks, DP 128)",
        "--hw grand-teton-h100 --gpus 16384 --megatron-args \"" + llama405b + "\"", {30, 4096});
    ref("Megatron 1T, ZeRO-Infinity NVMe, 1 DGX-2, batch 1024 (64 micro-batches per GPU)",
        "--model megatron-1t --hw dgx2 --nodes 1 --global-batch 1024 " + zinf, {5, 1024});
    ref("ZeRO 100B, ZeRO-3, 25 DGX-2 (400 GPUs)",
        "--model zero-100b --hw dgx2 --nodes 25 --zero 3 --micro-batch 8 --recompute full", {2, 2048});
    ref("Megatron 1T, ZeRO-Infinity NVMe, 32 DGX-2 (512 GPUs)", "--model megatron-1t --hw dgx2 --nodes 32 " + zinf, {2, 2048});
    ref("GPT-2 1.5B, ZeRO-2, 1 DGX-2 (16 GPUs)",
        "--model gpt2-1.5b --hw dgx2 --nodes 1 --zero 2 --micro-batch 8 --recompute full", {2, 2048});
    // A 1T Hugging Face Llama config replayed from its family's committed capture (issue 39): every
    // layer's, the embedding's and the head's captured ops, one stage a layer.
    ref("Llama-style 1.01T from its committed capture, 150 H200 (PyTorch pipelining 1F1B, 150 stages, 150 micro-batches)",
        "--model reports/perf/llama-1t-config.json --hw dgx-h200 --stack pytorch-pipelining --gpus 150 --pp 150 "
        "--schedule 1f1b --global-batch 150 --precision bf16 --recompute full --micro-batch 1 --seq 4096",
        {5, 1024});
    // Two committed validation rows through the PyTorch stacks' paths: the host stream that feeds each
    // compute stream (pipelining), and FSDP2's CPU offload with its pageable copies and CPU AdamW
    // (reports/validation/measured/; run from the repository root).
    const std::string measured = "reports/validation/measured/";
    ref("PyTorch pipelining 1F1B, 4 H200, 16 micro-batches, host dispatch (a measured row)",
        "--model " + measured + "gpt-small-pipeline-h200x4-second-host/h200x4_pipe-1f1b_L24-h1024_mb2x16_host2.model.json --hw " + measured +
            "gpt-small-pipeline-h200x4-second-host/host.profile.json --stack pytorch-pipelining --gpus 4 --pp 4 --schedule 1f1b "
            "--micro-batch 2 --global-batch 32 --seq 2048 --precision bf16-mixed",
        {2, 2048});
    ref("PyTorch FSDP2 CPU offload, 2 H200, 2 micro-batches (a measured row)",
        "--model " + measured + "gpt-small-offload/h200x2_fsdp2-offload_L24-h1024_mb4x2.model.json --hw " + measured +
            "gpt-small-offload/host.profile.json --stack pytorch-fsdp --gpus 2 --zero 3 --offload-params cpu "
            "--offload-optimizer cpu --micro-batch 4 --global-batch 16 --seq 2048 --precision bf16-mixed",
        {2, 2048});

    std::cerr << "Cost curve:\n";
    std::vector<Measurement> by_gpus, by_stages, by_layers, by_mbs;
    // 3D parallelism with more data-parallel replicas: the same stages, more GPUs.
    for (int dp : {1, 4, 16, 64}) {
      by_gpus.push_back(measure(trainsim, fmt::format("GPUs {}", 64 * dp),
                                fmt::format("--model gpt3-175b --hw dgx-a100 --gpus {} --tp 8 --pp 8 --recompute full "
                                            "--global-batch {}",
                                            64 * dp, 64 * dp),
                                1));
    }
    for (int pp : {8, 16, 32, 48, 96}) {  // 175B needs 8 stages of TP 8 to fit 80 GB
      by_stages.push_back(measure(trainsim, fmt::format("stages {}", pp),
                                  fmt::format("--model gpt3-175b --hw dgx-a100 --gpus {} --tp 8 --pp {} --recompute full "
                                              "--global-batch {}",
                                              8 * pp, pp, 8 * pp),
                                  1));
    }
    for (int layers : {12, 24, 48, 96, 192}) {
      by_layers.push_back(measure(
          trainsim, fmt::format("layers {}", layers),
          fmt::format("--hw dgx2 --nodes 1 --zero 3 --recompute full --megatron-args \"--num-layers {} --hidden-size 2048 "
                      "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 4\"",
                      layers),
          1));
    }
    for (int m : {8, 32, 128, 512, 2048}) {
      by_mbs.push_back(measure(trainsim, fmt::format("micro-batches {}", m),
                               fmt::format("--model gpt3-175b --hw dgx-a100 --gpus 64 --tp 8 --pp 8 --recompute full "
                                           "--global-batch {}",
                                           m),
                               1));
    }

    std::filesystem::create_directories(out_dir);
    nlohmann::ordered_json doc;
    doc["schema_version"] = 1;
    doc["kind"] = "trainsim.bench";
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    doc["context"] = {{"date", date},
                      {"host", host_description()},
                      {"load_average_1_5_15_min", load_average()},
                      {"trainsim", trainsim},
                      {"command", fmt::format("trainsim-bench --trainsim {} --out {} --repeat {}", trainsim, out_dir, repeat)}};
    auto list = [](const std::vector<Measurement>& ms) {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (const auto& m : ms) a.push_back(to_json(m));
      return a;
    };
    nlohmann::ordered_json ref_list = nlohmann::ordered_json::array();
    for (const auto& [m, t] : refs) {
      nlohmann::ordered_json j = to_json(m);
      j["target_wall_s"] = t.wall_s;
      if (t.rss_MiB > 0) j["target_max_rss_MiB"] = t.rss_MiB;
      j["meets_target"] = m.wall_s < t.wall_s && (t.rss_MiB == 0 || m.max_rss_MiB < t.rss_MiB);
      ref_list.push_back(j);
    }
    doc["reference_steps"] = ref_list;
    doc["cost_curve"] = {{"gpus", list(by_gpus)}, {"stages", list(by_stages)}, {"layers", list(by_layers)},
                         {"micro_batches", list(by_mbs)}};
    std::ofstream(out_dir + "/bench.json") << doc.dump(2) << "\n";

    using trainsim::svg::Series;
    auto series = [](const std::string& label, const std::vector<Measurement>& ms, auto x_of) {
      Series s{label, {}, {}};
      for (const auto& m : ms) {
        s.x.push_back(x_of(m));
        s.y.push_back(m.wall_s);
      }
      return s;
    };
    auto ops = [](const Measurement& m) { return static_cast<double>(m.ops); };
    std::ofstream(out_dir + "/cost_curve.svg") << trainsim::svg::line_plot_svg(
        {"Simulator wall time against task-graph size", "ops in the task graph", "wall time (s)", true, true},
        {series("more GPUs (data-parallel replicas)", by_gpus, ops), series("more pipeline stages", by_stages, ops),
         series("more layers", by_layers, ops), series("more micro-batches", by_mbs, ops)});

    std::string md = "# Simulator performance\n\n";
    md += fmt::format("Measured {} on {}; `{}` (built {}).\n\n", date, host_description(), doc["context"]["command"].get<std::string>(),
                      "RelWithDebInfo");
    md += fmt::format("Load average (1, 5, 15 min) when the run ended: {} on {} cores; a load above the core count means "
                      "other processes shared the CPU and the wall times are upper bounds.\n\n",
                      doc["context"]["load_average_1_5_15_min"].get<std::string>(), sysconf(_SC_NPROCESSORS_ONLN));
    md += "Each figure is the real CLI (`trainsim simulate ... --format json`) in a child process: wall time from start to exit "
          "(median of the runs), peak resident memory of the process tree (wait4/getrusage). `ops` counts every op of every "
          "replay (a folded step replays a few micro-batch counts and extrapolates).\n\n";
    md += "| reference step | wall (s), median [min, max] | target | peak RSS (MiB) | target | meets | ops | simulated step (s) |\n";
    md += "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (const auto& [m, t] : refs) {
      const bool ok = m.wall_s < t.wall_s && (t.rss_MiB == 0 || m.max_rss_MiB < t.rss_MiB);
      md += fmt::format("| {} | {:.3f} [{:.3f}, {:.3f}] | < {:.0f} s | {:.0f} | {} | {} | {} | {:.2f} |\n", m.name, m.wall_s,
                        m.wall_min_s, m.wall_max_s, t.wall_s, m.max_rss_MiB,
                        t.rss_MiB > 0 ? fmt::format("< {:.0f} MiB", t.rss_MiB) : "-", ok ? "yes" : "NO", m.ops, m.step_time_s);
    }
    md += "\nCommands:\n\n";
    for (const auto& [m, t] : refs) md += fmt::format("- `trainsim simulate {}`\n", m.args);
    md += "\n## Cost curve\n\n![wall time against ops](cost_curve.svg)\n\n";
    md += "| series | point | GPUs (simulated) | layers | micro-batches | ops | wall (s) | wall per 1k ops (ms) |\n";
    md += "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
    auto rows = [&](const char* label, const std::vector<Measurement>& ms) {
      for (const auto& m : ms) {
        md += fmt::format("| {} | {} | {} ({}) | {} | {} | {} | {:.3f} | {:.2f} |\n", label, m.name, m.gpus, m.simulated_gpus, m.layers,
                          m.micro_batches, m.ops, m.wall_s, 1e6 * m.wall_s / static_cast<double>(m.ops));
      }
    };
    rows("GPUs", by_gpus);
    rows("stages", by_stages);
    rows("layers", by_layers);
    rows("micro-batches", by_mbs);
    md += "\nThe work grows with what is distinct: pipeline stages (one simulated rank each) and layers. It does not grow with "
          "the GPU count (identical tensor- and data-parallel ranks are folded into one per stage, other data-parallel nodes "
          "mirror the simulated ones) nor, past the pipeline's warm-up, with identical micro-batches (three micro-batch counts "
          "are replayed and the step extrapolated once it is periodic; sim/README.md). "
          "Rerun: `build/trainsim-bench` from the repository root.\n";
    md += "\nThe planner's benchmark (`--section plan`) is in [plan.md](plan.md); its soundness suites in full (`--section "
          "soundness`) in [soundness.md](soundness.md).\n";
    std::ofstream(out_dir + "/README.md") << md;
    std::cerr << "wrote " << out_dir << "/bench.json, README.md, cost_curve.svg\n";
    if (section == "all") plan_section(trainsim, out_dir, repeat, plan_date, command);
  } catch (const std::exception& e) {
    std::cerr << "trainsim-bench: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
