// One truth for memory (planner/memory_fit.hpp): the memory model, the filter in front of the
// replay, against the replay over strategies of every family and framework, sampled evenly from
// the planner's own search space on small clusters. For each: the replay's reserved peak within
// MEMORY_MODEL_TOLERANCE of the model's GPU bytes (so the filter never drops what would fit, nor
// says "fits" where the replay overflows), the host and storage peaks likewise, and every gradient
// byte a step makes reduced (and, with the optimizer off the GPU, offloaded) once per step.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>

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
      // Host and storage: small pinned buffers are compared in absolute terms (64 MiB).
      const double floor = 64.0 * 1024 * 1024;
      const double host = std::fabs(r.host_peak_bytes - e.peak_node.cpu_bytes) / std::max(e.peak_node.cpu_bytes, floor);
      const double storage = std::fabs(r.storage_peak_bytes - e.peak_node.nvme_bytes) / std::max(e.peak_node.nvme_bytes, floor);
      auto& [low, high] = extremes[std::string(family_of(s.strategies[i]))];
      low = std::min(low, gpu);
      high = std::max(high, gpu);
      auto& [alow, ahigh] = allocated[std::string(family_of(s.strategies[i]))];
      alow = std::min(alow, relative(r.peak_memory_bytes, model_gpu));
      ahigh = std::max(ahigh, relative(r.peak_memory_bytes, model_gpu));
      worst_gpu = std::max(worst_gpu, std::fabs(gpu));
      worst_host = std::max(worst_host, host);
      worst_storage = std::max(worst_storage, storage);
 EXPECT_LE(std::fabs(gpu), MEMORY_MODEL_TOLERANCE)
          << fmt::format("[{:+.3f} alloc {:+.3f}] ", gpu, relative(r.peak_memory_bytes, model_gpu)) << what << ": replayed reserved peak " << r.peak_reserved_bytes / 1073741824.0 << " GiB (allocated "
          << r.peak_memory_bytes / 1073741824.0 << "), memory model " << model_gpu / 1073741824.0 << " GiB";
      EXPECT_LE(host, MEMORY_MODEL_TOLERANCE) << what << ": host " << r.host_peak_bytes << " replayed, " << e.peak_node.cpu_bytes << " modeled";
      EXPECT_LE(storage, MEMORY_MODEL_TOLERANCE)
          << what << ": storage " << r.storage_peak_bytes << " replayed, " << e.peak_node.nvme_bytes << " modeled";
    }
  }
  nlohmann::ordered_json by_family = nlohmann::ordered_json::object();
  for (const auto& [family, range] : extremes) by_family[family] = {range.first, range.second};
  test_suite::report({{"suite", "memory_consistency"},
                      {"cases", cases},
                      {"tolerance", MEMORY_MODEL_TOLERANCE},
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
