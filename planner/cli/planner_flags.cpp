#include "planner_flags.hpp"

#include <unistd.h>

#include <csignal>

#include <fmt/format.h>

#include <iostream>

#include "cli_common.hpp"
#include "config_error.hpp"
#include "output_files.hpp"

namespace trainsim::cli {

void add_question_flags(CLI::App& app, planner::PlanFlags& f, bool nodes_range) {
  namespace lim = wl::limits;
  app.add_option("--model", f.model, "Model: a built-in name (see `trainsim list`), a model JSON or a Hugging Face config.json")
      ->group("Question");
  app.add_option("--hw", f.hw, "Cluster: a built-in profile name or a profile JSON")->group("Question")->capture_default_str();
  app.add_option("--nodes", f.nodes, nodes_range ? "Nodes: N, or a range A..B (one answer per node count)" : "Nodes")
      ->group("Question");
  app.add_option("--gpus", f.gpus, "GPUs in total (instead of --nodes)")->group("Question")->check(whole_number(lim::GPUS));
  app.add_option("--global-batch", f.global_batch, "Global batch in sequences (default: one sequence per GPU)")
      ->group("Question")
      ->check(whole_number(lim::GLOBAL_BATCH));
  app.add_option("--seq", f.seq, "Sequence length (default: the model's)")->group("Question")->check(whole_number(lim::SEQ));
  app.add_option("--precision", f.precision, "Numerics: fp16-mixed, bf16-mixed, bf16, fp32")->group("Question");
  app.add_option("--attention", f.attention, "Attention: materialized, flash")->group("Question");
  app.add_option("--tokens", f.tokens, "Tokens to train on (default: 20 per parameter, Hoffmann et al. 2022)")->group("Question");
  app.add_option("--grid-kgco2-per-kwh", f.grid_kg_per_kwh,
                 "Grid carbon intensity in kg CO2 per kWh (default 0.429, US average, Patterson et al. 2021)")
      ->group("Question");
  app.add_option("--stack", f.framework.stack,
                 "The framework you train with, searching only what it runs: idealized (default: every strategy), megatron, "
                 "deepspeed, deepspeed-0.3 (its 2020 release), pytorch (DDP, FSDP2, pipelining), pytorch-ddp, pytorch-fsdp, "
                 "pytorch-pipelining")
      ->group("Framework");
  app.add_option("--deepspeed", f.framework.deepspeed_file,
                 "A DeepSpeed ds_config.json: what it fixes (ZeRO stage, offload, buckets, batch) is kept; implies --stack deepspeed")
      ->group("Framework");
  app.add_option("--megatron-args", f.framework.megatron_args,
                 "Megatron-LM arguments, quoted: what they fix is kept; implies --stack megatron")
      ->group("Framework");
  app.add_flag("--allow-async", f.framework.allow_async,
               "Also search schemes that change the optimizer's math (ZeRO-Offload's delayed update, PipeDream, 2BW); "
               "each is replayed (no bound holds for them) and marked in the answer")
      ->group("Framework");
  app.add_flag("--uneven-pipelines", f.uneven_pipelines,
               "Also search pipeline degrees that do not divide the layers (stages balanced by cost; Megatron-LM refuses "
               "them; their replays take up to a hundred times longer)")
      ->group("Question");
  app.add_option("--memory-headroom", f.memory_headroom,
                 fmt::format("Share of the usable GPU memory left free at the replayed reserved peak (default {:g})",
                             planner::DEFAULT_MEMORY_HEADROOM))
      ->group("Framework");
}

void add_run_flags(CLI::App& app, RunFlags& r) {
  app.add_option("--cache", r.cache, "Results cache directory (default: $XDG_CACHE_HOME/trainsim or ~/.cache/trainsim)")
      ->group("Running");
  app.add_flag("--no-cache", r.no_cache, "Neither read nor write the results cache")->group("Running");
  app.add_option("--jobs", r.jobs, "Replay workers (default: one per core); under mpirun, per rank")
      ->group("Running")
      ->check(whole_number(wl::IntLimit{1, 1024}));
  app.add_flag("--quiet", r.quiet, "No progress bar")->group("Running");
  app.add_option("--time-limit", r.time_limit_s,
                 "Stop replaying after this many seconds and answer with what was found (the answer says what is "
                 "incomplete); a first SIGINT or SIGTERM does the same")
      ->group("Running")
      ->check(CLI::Range(1.0, 1e7));
}

SweepRuntime::SweepRuntime(const RunFlags& r) : quiet_(r.quiet), time_limit_s_(r.time_limit_s) {
  // A sweep answers with what it has found when interrupted once (a second interrupt ends it). Not
  // across MPI ranks, whose waves must agree: there an interrupt ends the run and --time-limit is
  // refused (it would stop each rank at another wave).
  if (mpi_.size() > 1 && r.time_limit_s) {
    throw ConfigError("--time-limit", "--time-limit", "no --time-limit under mpirun (the ranks would stop at different waves)",
                      "--time-limit with " + std::to_string(mpi_.size()) + " ranks");
  }
  if (mpi_.size() == 1) defer_first_interrupt();
  if (r.no_cache && !r.cache.empty()) throw ConfigError("--no-cache", "--no-cache", "either --cache DIR or --no-cache", "both");
  const std::string dir = r.no_cache ? std::string() : r.cache.empty() ? planner::ResultCache::default_dir() : r.cache;
  if (!r.cache.empty() || dir.empty()) {
    cache_ = std::make_unique<planner::ResultCache>(dir, "--cache");
  } else {
    // The default directory is a convenience, not something the user asked for: an unwritable
    // HOME (a service account, a read-only container) runs without the cache, said once.
    try {
      cache_ = std::make_unique<planner::ResultCache>(dir, "--cache (default)");
    } catch (const ConfigError& e) {
      if (writes_output()) {
        std::cerr << "trainsim: warning: running without the results cache: " << e.what()
                  << "; give --cache DIR or --no-cache\n";
      }
      cache_ = std::make_unique<planner::ResultCache>(std::string(), "--cache (default)");
    }
  }
  progress_ = std::make_unique<planner::Progress>(!r.quiet && writes_output() && planner::Progress::stderr_is_terminal());
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  jobs_ = r.jobs > 0 ? r.jobs : online > 0 ? static_cast<int>(online) : 1;
  local_ = planner::make_local_executor(r.jobs, *cache_, options_, *progress_);
  executor_ = mpi_.size() > 1 ? planner::make_mpi_executor(mpi_, *local_, *cache_, *progress_) : nullptr;
}

std::string SweepRuntime::stop_reason() const {
  if (mpi_.size() > 1) return {};
  if (const int sig = interrupt_requested()) return sig == SIGTERM ? "interrupted by SIGTERM" : "interrupted by SIGINT";
  if (time_limit_s_) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (elapsed >= *time_limit_s_) return fmt::format("the time limit of {:g} s (--time-limit)", *time_limit_s_);
  }
  return {};
}

int SweepRuntime::exit_status() const {
  const int sig = interrupt_requested();
  return sig > 0 ? 128 + sig : 0;
}

void SweepRuntime::report() const {
  progress_->finish();
  if (quiet_ || !writes_output()) return;
  std::cout.flush();  // the answer first, then this line, when both go to one terminal or file
  std::cerr << fmt::format("trainsim: {} replays ({} from the results cache{}){}\n", progress_->replayed(), progress_->cached(),
                           cache_->enabled() ? " in " + cache_->dir() : ", disabled",
                           mpi_.size() > 1 ? fmt::format(", over {} MPI ranks", mpi_.size()) : "");
}

}  // namespace trainsim::cli
