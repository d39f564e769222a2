// The documentation's examples print what the commands print today. On each page below, every `sh`
// block that holds one `build/trainsim` command and is followed by a plain block of output (after at
// most a line of prose, such as "prints:"), and on README.md the quick start's plan, are run from the
// source directory and compared with that block, once the wall-clock figures that differ from run to
// run are masked. An example that writes files (-o, --trace, --charts, --report-dir) is not run here:
// its output is a file.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace trainsim::test {
namespace {

struct Example {
  std::string command;   // the arguments after build/trainsim
  std::string expected;  // the output block
  int line = 0;          // where the command stands in its page
  bool quick_start = false;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<Example> examples_of(const std::string& page) {
  const std::vector<std::string> l = lines_of(read_file(source_path(page)));
  const std::string binary = "build/trainsim ";
  std::vector<Example> found;
  for (std::size_t i = 0; i + 2 < l.size(); ++i) {
    if (l[i] != "```sh" || l[i + 2] != "```" || l[i + 1].rfind(binary, 0) != 0) continue;
    std::size_t j = i + 3;
    while (j < l.size() && j <= i + 5 && l[j] != "```") ++j;  // a blank line, perhaps "prints:"
    if (j >= l.size() || l[j] != "```") continue;
    Example e{l[i + 1].substr(binary.size()), "", static_cast<int>(i + 2)};
    for (std::size_t k = j + 1; k < l.size() && l[k] != "```"; ++k) e.expected += l[k] + "\n";
    found.push_back(e);
  }
  // The quick start: its first command sets up, then plans; its output follows "The first command
  // prints", after the test command.
  for (std::size_t i = 0; i + 1 < l.size(); ++i) {
    const std::size_t plan = l[i + 1].find(" && " + binary);
    if (l[i] != "```sh" || l[i + 1].rfind(".ci/setup", 0) != 0 || plan == std::string::npos) continue;
    std::size_t j = i + 2;
    while (j < l.size() && l[j].rfind("The first command prints", 0) != 0) ++j;
    while (j < l.size() && l[j] != "```") ++j;
    Example e{l[i + 1].substr(plan + 4 + binary.size()), "", static_cast<int>(i + 2), true};
    for (std::size_t k = j + 1; k < l.size() && l[k] != "```"; ++k) e.expected += l[k] + "\n";
    if (j < l.size()) found.push_back(e);
    break;
  }
  return found;
}

// Wall-clock figures: "(8151 ops, 6096 SimGrid activities, 0.08 s wall)" and the like.
std::string masked(const std::string& text) {
  static const std::regex wall(R"([0-9]+(\.[0-9]+)? s wall)");
  return std::regex_replace(text, wall, "X s wall");
}

// A page (from the source directory) and the fewest examples of it that must run: an example
// dropped, or one whose block no longer parses as an example, fails here rather than going unchecked.
void expect_every_shown_output_printed_today(const std::string& page, int min_examples_run) {
  const std::vector<Example> examples = examples_of(page);
  if (page == "README.md") {
    ASSERT_FALSE(examples.empty()) << "README.md's examples were not found";
    ASSERT_TRUE(examples.back().quick_start) << "the quick start's setup and plan were not found in README.md";
    ASSERT_EQ(examples.back().command.rfind("plan ", 0), 0U) << "the quick start's first command does not plan";
  }
  ScratchDir cache;  // the plan's results cache, away from the user's
  int run = 0;
  for (const Example& e : examples) {
    if (std::regex_search(e.command, std::regex(R"((^| )(-o|--output|--trace|--charts|--report-dir|--cache)([ =]|$))"))) continue;
    const CommandResult r = run_command("cd '" + source_path("") + "' && XDG_CACHE_HOME='" + cache.path().string() + "' " +
                                        std::string(TRAINSIM_BINARY) + " " + e.command);
    ++run;
    EXPECT_EQ(r.exit_code, 0) << page << " line " << e.line << ": " << e.command << "\n" << r.err;
    EXPECT_EQ(masked(r.out), masked(e.expected)) << page << " line " << e.line << ": " << e.command;
  }
  EXPECT_GE(run, min_examples_run) << page << ": " << run << " examples ran, fewer than the " << min_examples_run
                                   << " it holds";
}

// The quick start's plan, memory, simulate and validate.
TEST(DocumentedExamples, Readme) { expect_every_shown_output_printed_today("README.md", 4); }
// plan with --stack, --megatron-args and --deepspeed; compare.
TEST(DocumentedExamples, PlannerPage) { expect_every_shown_output_printed_today("planner/README.md", 4); }
// simulate on 3072 GPUs.
TEST(DocumentedExamples, SimPage) { expect_every_shown_output_printed_today("sim/README.md", 2); }
// memory of a ZeRO-Offload run.
TEST(DocumentedExamples, WorkloadsPage) { expect_every_shown_output_printed_today("workloads/README.md", 1); }
// validate on the allocator records.
TEST(DocumentedExamples, ValidatePage) { expect_every_shown_output_printed_today("planner/validate/README.md", 1); }

}  // namespace
}  // namespace trainsim::test
