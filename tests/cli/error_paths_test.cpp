// No input reaches an internal error. A fixed, seeded sample of flag combinations (models,
// clusters, every strategy flag with valid, edge and invalid values) through `memory` and
// `simulate`: each run is an answer (exit 0, output on stdout) or a ConfigError (exit 2, one line
// on stderr naming a flag or file), never exit 1, a signal or a sanitizer report. The distinct
// error messages met are the public error paths; the test prints how many it met.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "test_support.hpp"

namespace trainsim {
namespace {

const std::vector<std::vector<std::string>> OPTIONS = {
    {"--model gpt2-1.5b", "--model bert-large", "--model megatron-8.3b", "--model {src}/tests/data/llama2-7b-config.json",
     "--model {src}/tests/data/gpt-neox-20b-config.json", "--params 7.5e9", ""},
    {"", "--hw v100-workstation", "--hw dgx-a100", "--hw h200x2-measured", "--hw zhores", "--hw dgx-h100"},
    {"", "--gpus 1", "--gpus 2", "--gpus 8", "--nodes 2", "--gpus 3", "--nodes 1000"},
    {"", "--tp 2", "--tp 4", "--tp 3", "--pp 2", "--pp 4 --vpp 2", "--dp 4"},
    {"", "--zero 1", "--zero 2", "--zero 3", "--zero 3 --offload-params cpu", "--zero 3 --offload-params nvme",
     "--offload-optimizer cpu", "--zero 2 --offload-optimizer cpu --dpu", "--zero 3 --offload-optimizer nvme", "--l2l"},
    {"", "--recompute selective", "--recompute full", "--recompute full --offload-activations cpu",
     "--offload-activations cpu"},
    {"", "--micro-batch 4", "--global-batch 64", "--global-batch 7", "--seq 4096", "--seq 512",
     "--schedule gpipe", "--sp", "--precision bf16-mixed", "--precision fp32", "--attention flash"},
};

std::string expand(std::string s) {
  const std::string src = TRAINSIM_SOURCE_DIR;
  for (auto pos = s.find("{src}"); pos != std::string::npos; pos = s.find("{src}")) s.replace(pos, 5, src);
  return s;
}

void sweep(const std::string& command, int runs, unsigned seed, std::set<std::string>& messages) {
  std::mt19937 rng(seed);
  for (int i = 0; i < runs; ++i) {
    std::string args = command;
    for (const auto& choices : OPTIONS) {
      const auto& pick = choices[std::uniform_int_distribution<std::size_t>(0, choices.size() - 1)(rng)];
      if (!pick.empty()) args += " " + expand(pick);
    }
    const auto r = test::run_trainsim(args);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << args << "\nexit " << r.exit_code << ": " << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << args << ": " << r.err;
    if (r.exit_code == 0) {
      EXPECT_FALSE(r.out.empty()) << args;
    }
    if (r.exit_code == 2) {
      EXPECT_TRUE(r.out.empty()) << args;
      EXPECT_EQ(r.err.rfind("trainsim: error: ", 0), 0u) << args << ": " << r.err;
      messages.insert(r.err.substr(0, r.err.find(", got")));
    }
  }
}

TEST(ErrorPaths, NoSampledInputReachesAnInternalError) {
  std::set<std::string> messages;
  sweep("memory", 160, 7, messages);
  sweep("simulate", 40, 11, messages);
  std::printf("distinct error paths met: %zu\n", messages.size());
  EXPECT_GE(messages.size(), 8u) << "the sample should reach many of the public error paths";
}

}  // namespace
}  // namespace trainsim
