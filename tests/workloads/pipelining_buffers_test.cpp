// torch.distributed.pipelining's receive buffers (workloads/stacks/training_stacks.md, "torch.distributed.
// pipelining"): one per micro-batch for the activation a non-first stage receives and one for the
// gradient a non-last stage receives, kept across steps. Under 1F1B a stage's activations do not grow
// with the number of micro-batches, so what a stage's measured peak gains from more micro-batches is
// these buffers alone. The committed measured runs of the same configuration at two micro-batch
// counts give that gain per stage; the memory model must give the same.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memory_model.hpp"
#include "model_loader.hpp"
#include "strategy_input.hpp"
#include "test_support.hpp"

namespace trainsim::wl {
namespace {

struct Run {
  ModelSpec model;
  Strategy strategy;
  std::vector<double> measured_peaks;  // per rank = per stage, bytes
};

Run committed_run(const std::string& path) {
  const nlohmann::json doc = test::read_source_json(path + ".json");
  const nlohmann::json& s = doc.at("strategy");
  StrategyInput in;
  in.gpus.set(s.at("gpus").get<int>(), "t");
  in.dp.set(1, "t");
  in.pp.set(s.at("pp").get<int>(), "t");
  in.schedule.set(s.at("schedule") == "1f1b" ? Schedule::ONE_F_ONE_B : Schedule::GPIPE, "t");
  in.micro_batch.set(s.at("micro_batch").get<int>(), "t");
  in.global_batch.set(s.at("global_batch").get<int>(), "t");
  in.seq.set(s.at("seq").get<int>(), "t");
  in.precision.set(Numerics::BF16_MIXED, "t");
  TrainingStack stack;
  stack.kind = StackKind::PYTORCH_PIPELINING;
  in.stack.set(stack, "t");
  const ResolvedInputs r = resolve_inputs(in, load_model_file(test::source_path(path + ".model.json")), {8, 1, "t"});
  return {r.model, r.strategy, doc.at("measured").at("peak_allocated_bytes").get<std::vector<double>>()};
}

// Per stage: (measured gain, modeled gain) from `fewer` micro-batches to `more`.
void expect_same_gain(const std::string& fewer, const std::string& more) {
  const Run a = committed_run(fewer), b = committed_run(more);
  const MemoryEstimate ea = estimate_memory(a.model, a.strategy, 8), eb = estimate_memory(b.model, b.strategy, 8);
  ASSERT_EQ(a.measured_peaks.size(), ea.stages.size());
  for (std::size_t st = 0; st < ea.stages.size(); ++st) {
    const double measured = b.measured_peaks[st] - a.measured_peaks[st];
    const double modeled = eb.stages[st].gpu_bytes() - ea.stages[st].gpu_bytes();
    // The caching allocator rounds and splits blocks: 2 MiB is well under one 16 MiB buffer.
    EXPECT_NEAR(modeled, measured, 2.0 * 1024 * 1024) << more << " against " << fewer << ", stage " << st;
  }
}

TEST(PipeliningReceiveBuffers, OneFOneBStagesGainWhatTheMeasuredRunsGained) {
  // 4 stages, 8 -> 16 micro-batches of [2, 2048, 1024] fp32 (16 MiB): measured +128.5, +256.5,
  // +256.5, +127.5 MiB.
  expect_same_gain("reports/validation/measured/gpt-small-pipeline-h200x4/h200x4_pipe-1f1b_L24-h1024_mb2x8",
                   "reports/validation/measured/gpt-small-pipeline-h200x4/h200x4_pipe-1f1b_L24-h1024_mb2x16");
  // 2 stages, 4 -> 8 micro-batches: measured +64.3 and +62.8 MiB.
  expect_same_gain("reports/validation/measured/gpt-small-pipeline-h200x2/h200x2_pipe-1f1b_L24-h1024_mb2x4",
                   "reports/validation/measured/gpt-small-pipeline-h200x2/h200x2_pipe-1f1b_L24-h1024_mb2x8");
}

}  // namespace
}  // namespace trainsim::wl
