// The README's examples print what the commands print today. Every `sh` block of README.md that holds
// one `build/trainsim` command and is followed by a plain block of output (after at most a line of
// prose, such as "prints:"), and the quick start's plan, are run from the source directory and
// compared with that block, once the wall-clock figures that differ from run to run are masked. An example that writes
// files (-o, --trace, --charts, --report-dir) is not run here: its output is a file.
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
  int line = 0;          // where the command stands in README.md
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<Example> readme_examples() {
  const std::vector<std::string> l = lines_of(read_file(source_path("README.md")));
  std::vector<Example> found;
  for (std::size_t i = 0; i + 2 < l.size(); ++i) {
    if (l[i] != "```sh" || l[i + 2] != "```" || l[i + 1].rfind("build/trainsim ", 0) != 0) continue;
    std::size_t j = i + 3;
    while (j < l.size() && j <= i + 5 && l[j] != "```") ++j;  // a blank line, perhaps "prints:"
    if (j >= l.size() || l[j] != "```") continue;
    Example e{l[i + 1].substr(std::string("build/trainsim ").size()), "", static_cast<int>(i + 2)};
    for (std::size_t k = j + 1; k < l.size() && l[k] != "```"; ++k) e.expected += l[k] + "\n";
    found.push_back(e);
  }
  // The quick start: its first command sets up, then plans; its output follows "The first command
  // prints", after the test command.
  for (std::size_t i = 0; i + 1 < l.size(); ++i) {
    const std::string setup = ".ci/setup && build/trainsim ";
    if (l[i] != "```sh" || l[i + 1].rfind(setup, 0) != 0) continue;
    std::size_t j = i + 2;
    while (j < l.size() && l[j].rfind("The first command prints", 0) != 0) ++j;
    while (j < l.size() && l[j] != "```") ++j;
    Example e{l[i + 1].substr(setup.size()), "", static_cast<int>(i + 2)};
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

TEST(ReadmeExamples, EveryShownOutputIsWhatTheCommandPrintsToday) {
  const std::vector<Example> examples = readme_examples();
  // The quick start's plan and four examples with their output (memory, two simulate, validate).
  ASSERT_GE(examples.size(), 5U) << "README.md's examples with output were not all found";
  ASSERT_EQ(examples.back().command.rfind("plan ", 0), 0U) << "the quick start's plan and its output were not found";
  ScratchDir cache;  // the plan's results cache, away from the user's
  int run = 0;
  for (const Example& e : examples) {
    if (std::regex_search(e.command, std::regex(R"((^| )(-o|--output|--trace|--charts|--report-dir|--cache)([ =]|$))"))) continue;
    const CommandResult r = run_command("cd '" + source_path("") + "' && XDG_CACHE_HOME='" + cache.path().string() + "' " +
                                        std::string(TRAINSIM_BINARY) + " " + e.command);
    ++run;
    EXPECT_EQ(r.exit_code, 0) << "README.md line " << e.line << ": " << e.command << "\n" << r.err;
    EXPECT_EQ(masked(r.out), masked(e.expected)) << "README.md line " << e.line << ": " << e.command;
  }
  EXPECT_GE(run, 4) << "fewer README examples ran than expected";
}

}  // namespace
}  // namespace trainsim::test
