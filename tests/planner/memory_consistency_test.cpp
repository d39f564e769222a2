// One truth for memory (planner/memory_fit.hpp): the memory model, the filter in front of the
// replay, against the replay over strategies of every family and framework, sampled evenly from
// the planner's own search space on small clusters. For each: the replay's reserved peak within
// MEMORY_MODEL_TOLERANCE of the model's GPU bytes (so the filter never drops what would fit, nor
// says "fits" where the replay overflows), the host and storage peaks likewise, and every gradient
// byte a step makes reduced (and, with the optimizer off the GPU, offloaded) once per step.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>

#include "data_parallel_program.hpp"
#include "estimator.hpp"
#include "families.hpp"
#include "memory_fit.hpp"
#include "model_loader.hpp"
#include "model_params.hpp"
#include "profile_loader.hpp"
#include "property_suite.hpp"
#include "replay_executor.hpp"
#include "search_space.hpp"
#include "strategy_identity.hpp"
#include "training_stack.hpp"

namespace trainsim::planner {
namespace {

struct Space {
  const char* model;
  const char* profile;
  int gpus;
  std::int64_t global_batch;
  const char* stack;  // "" (idealized, asynchronous schemes included), "megatron", "deepspeed", "pytorch"
};

// Small clusters, models of every shape (GPT with learned positions and tied embeddings, Llama-like
// rotary, BERT), every stack the planner searches for.
const std::vector<Space>& spaces() {
  static const std::vector<Space> s = {
      {"gpt2-1.5b", "dgx2", 4, 16, ""},        {"gpt2-1.5b", "dgx2", 16, 64, ""},   {"bert-large", "zhores", 8, 32, ""},
      {"megatron-8.3b", "dgx-a100", 16, 32, ""}, {"gpt2-1.5b", "dgx-a100", 8, 32, "megatron"},
      {"gpt2-1.5b", "dgx2", 8, 32, "deepspeed"}, {"gpt2-1.5b", "dgx-h200", 8, 32, "pytorch"},
  };
  return s;
}

struct Sampled {
  wl::ModelSpec model;
  hw::ClusterProfile profile;
  std::vector<wl::Strategy> strategies;
};

// Every `stride`-th valid strategy of the space, up to `cap`.
Sampled sample(const Space& sp, std::size_t cap) {
  Sampled out{wl::builtin_model(sp.model), hw::builtin_profile(sp.profile), {}};
  FrameworkFlags flags;
  flags.allow_async = true;
  if (std::string(sp.stack).size() > 0) flags.stack = sp.stack;
  if (std::string(sp.stack) == "pytorch") out.model.numerics = wl::Numerics::BF16_MIXED;
  const Framework fw = resolve_framework(flags, out.model);
  SpaceShape shape;
  shape.model = &out.model;
  shape.gpus_per_node = out.profile.gpus_per_node();
  shape.gpu_count = sp.gpus;
  shape.nodes = (sp.gpus + shape.gpus_per_node - 1) / shape.gpus_per_node;
  shape.global_batch = sp.global_batch;
  shape.seq = out.model.seq_len;
  shape.framework = &fw;
  std::vector<wl::Strategy> valid;
  enumerate_space(shape, [&](const wl::Strategy& s) {
    const Config c{&out.model, &out.profile, s};
    if (validate(c).empty() && !replay_size_issue(c)) valid.push_back(s);
  });
  const std::size_t stride = std::max<std::size_t>(1, valid.size() / cap);
  for (std::size_t i = 0; i < valid.size() && out.strategies.size() < cap; i += stride) out.strategies.push_back(valid[i]);
  return out;
}

double relative(double replay, double model) { return model > 0 ? replay / model - 1 : (replay > 0 ? 1.0 : 0.0); }

// The band memory_fit.hpp states: the model at most MEMORY_MODEL_OVER above the replay's peak, the
// peak at most MEMORY_MODEL_UNDER of the model plus MEMORY_MODEL_UNDER_BYTES above it.
bool within_band(double replay, double model) {
  return replay >= model * (1 - MEMORY_MODEL_OVER) && replay <= model * (1 + MEMORY_MODEL_UNDER) + MEMORY_MODEL_UNDER_BYTES;
}

TEST(MemoryConsistency, TheModelStaysWithinItsToleranceOfTheReplayAcrossTheSearchSpace) {
  const std::size_t per_space = test_suite::full() ? 400 : 24;
  const ResultCache none("", "--cache");
  Progress quiet(false);
  int cases = 0;
  std::map<std::string, std::pair<double, double>> extremes;  // family -> (lowest, highest) GPU ratio - 1
  std::map<std::string, std::pair<double, double>> allocated;  // the same for the allocated peak
  double worst_gpu = 0, worst_host = 0, worst_storage = 0;
  for (const Space& sp : spaces()) {
    const Sampled s = sample(sp, per_space);
    ASSERT_FALSE(s.strategies.empty()) << sp.model << " on " << sp.profile;
    std::vector<ReplayJob> jobs;
    std::vector<wl::MemoryEstimate> estimates;
    for (const wl::Strategy& st : s.strategies) {
      const Config c{&s.model, &s.profile, st};
      jobs.push_back({c, ResultCache::key_text(c, {})});
      estimates.push_back(wl::estimate_memory(s.model, st, s.profile.gpus_per_node()));
    }
    const std::vector<ReplayOutcome> outcomes = make_local_executor(2, none, {}, quiet)->run(jobs);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const std::string what = fmt::format("{} on {} x {}: {}", sp.model, sp.gpus, sp.profile, wl::canonical_text(s.strategies[i]));
      ASSERT_TRUE(outcomes[i].error.empty()) << what << ": " << outcomes[i].error;
      const sim::SimResult& r = outcomes[i].result;
      const wl::MemoryEstimate& e = estimates[i];
      ++cases;
      double model_gpu = 0;
      for (const auto& st : e.stages) model_gpu = std::max(model_gpu, st.gpu_bytes());
      const double gpu = relative(r.peak_reserved_bytes, model_gpu);
      // Host and storage have no allocator model: their peaks against the same band.
      const double host = relative(r.host_peak_bytes, e.peak_node.cpu_bytes);
      const double storage = relative(r.storage_peak_bytes, e.peak_node.nvme_bytes);
      auto& [low, high] = extremes[std::string(family_of(s.strategies[i]))];
      low = std::min(low, gpu);
      high = std::max(high, gpu);
      if (std::getenv("TRAINSIM_SUITE_VERBOSE") != nullptr && std::fabs(relative(r.peak_memory_bytes, model_gpu)) > 0.08) {
        std::cout << fmt::format("ALLOC {:+.3f} RES {:+.3f} {}\n", relative(r.peak_memory_bytes, model_gpu), gpu, what);
      }
      auto& [alow, ahigh] = allocated[std::string(family_of(s.strategies[i]))];
      alow = std::min(alow, relative(r.peak_memory_bytes, model_gpu));
      ahigh = std::max(ahigh, relative(r.peak_memory_bytes, model_gpu));
      worst_gpu = std::max(worst_gpu, std::fabs(gpu));
      worst_host = std::max(worst_host, host);
      worst_storage = std::max(worst_storage, storage);
      EXPECT_TRUE(within_band(r.peak_reserved_bytes, model_gpu))
          << fmt::format("[{:+.3f} alloc {:+.3f}] ", gpu, relative(r.peak_memory_bytes, model_gpu)) << what << ": replayed reserved peak " << r.peak_reserved_bytes / 1073741824.0 << " GiB (allocated "
          << r.peak_memory_bytes / 1073741824.0 << "), memory model " << model_gpu / 1073741824.0 << " GiB";
      EXPECT_TRUE(within_band(r.host_peak_bytes, e.peak_node.cpu_bytes))
          << what << ": host " << r.host_peak_bytes << " replayed, " << e.peak_node.cpu_bytes << " modeled";
      EXPECT_TRUE(within_band(r.storage_peak_bytes, e.peak_node.nvme_bytes))
          << what << ": storage " << r.storage_peak_bytes << " replayed, " << e.peak_node.nvme_bytes << " modeled";
    }
  }
  nlohmann::ordered_json by_family = nlohmann::ordered_json::object();
  for (const auto& [family, range] : extremes) by_family[family] = {range.first, range.second};
  test_suite::report({{"suite", "memory_consistency"},
                      {"cases", cases},
                      {"over", MEMORY_MODEL_OVER},
                      {"under", MEMORY_MODEL_UNDER},
                      {"under_bytes", MEMORY_MODEL_UNDER_BYTES},
                      {"worst_gpu", worst_gpu},
                      {"worst_host", worst_host},
                      {"worst_storage", worst_storage},
                      {"gpu_ratio_minus_one_by_family", by_family}});
  std::cout << fmt::format("memory consistency: {} cases, worst GPU {:.4f}, host {:.4f}, storage {:.4f}\n", cases, worst_gpu,
                           worst_host, worst_storage);
  for (const auto& [family, range] : extremes) {
    std::cout << fmt::format("  {:<22} reserved [{:+.4f}, {:+.4f}] allocated [{:+.4f}, {:+.4f}]\n", family, range.first, range.second,
                             allocated[family].first, allocated[family].second);
  }
}

}  // namespace
}  // namespace trainsim::planner

namespace trainsim::planner {
namespace {

// Every gradient byte a step makes is reduced once (a micro-batch's under ZeRO-2 and 3, which
// partition gradients in the backward; the step's accumulated sum once under ZeRO 0-1) and, with the
// optimizer off the GPU, its rank's partition copied to the host once per reduction. Worked from
// the model's parameter count (workloads/model_params.hpp, checked against published counts by
// zero_table_test), not from the program: data-parallel strategies without tensor parallelism,
// whose every rank computes with all P parameters. The models here train in fp16 mixed precision,
// whose gradients DeepSpeed (and the idealized stack, ZeRO Sec. 3.1) reduce in fp16: 2 bytes each.
TEST(GradientAccounting, EveryGradientByteIsReducedAndOffloadedOncePerStep) {
  const std::size_t cap = test_suite::full() ? 2000 : 200;
  int checked = 0;
  for (const Space& sp : spaces()) {
    if (std::string(sp.stack) != "" && std::string(sp.stack) != "deepspeed") continue;
    const Sampled s = sample(sp, cap);
    ASSERT_EQ(s.model.numerics, wl::Numerics::FP16_MIXED) << sp.model;
    const double P = wl::total_params(s.model);
    for (const wl::Strategy& st : s.strategies) {
      if (st.pp > 1 || st.tp > 1 || st.dp < 2 || st.l2l || st.schedule == wl::Schedule::HYDRA) continue;
      const sim::CostModel costs(s.profile, s.model.numerics, st.stack);
      const wl::MemoryEstimate memory = wl::estimate_memory(s.model, st, s.profile.gpus_per_node());
      const sim::ProgramSet set = sim::build_data_parallel_program(s.model, st, costs, memory, s.profile.gpus_per_node(), 0,
                                                                   sim::TrailingStep::OMIT);
      const double reductions = st.zero_stage >= 2 ? static_cast<double>(st.micro_batches()) : 1.0;
      double reduced = 0, offloaded = 0;
      for (const sim::Instruction& in : set.stages.front().instructions) {
        if (in.step != 0) continue;
        if (std::string(in.name) == "reduce_grads") reduced += in.bytes;
        if (std::string(in.name) == "d2h_grads") offloaded += in.bytes;
      }
      const std::string what = wl::canonical_text(st);
      const double produced = P * 2;
      EXPECT_NEAR(reduced, reductions * produced, 1e-9 * produced) << what;
      const double partition = produced / st.dp;
      // Each bucket's partition is padded to whole bytes: at most one byte per bucket and reduction.
      if (st.offload_optimizer != wl::OffloadTarget::NONE) {
        EXPECT_NEAR(offloaded, reductions * partition, reductions * 64) << what;
      } else {
        EXPECT_EQ(offloaded, 0) << what;
      }
      ++checked;
    }
  }
  test_suite::report({{"suite", "gradient_accounting"}, {"cases", checked}});
  EXPECT_GT(checked, 20);
}

}  // namespace
}  // namespace trainsim::planner
