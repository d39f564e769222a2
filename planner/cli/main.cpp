// trainsim: the command-line front door. Exit codes: 0 an answer (including "does not fit"),
// 2 malformed input (ConfigError or a flag CLI11 rejects: an output path that cannot be written is
// one), 1 an internal error or an output that failed while being written (disk full).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <malloc.h>

#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli_common.hpp"
#include "commands.hpp"
#include "config_error.hpp"
#include "output_files.hpp"

#ifndef TRAINSIM_VERSION
#define TRAINSIM_VERSION "unknown"
#endif

namespace {
// CLI11's own words for a flag given twice ("--gpus: At Most 1 required but received 2"), in ours.
std::string plain_parse_error(const std::string& what) {
  const std::string at_most = ": At Most 1 required but received ";
  if (const auto pos = what.find(at_most); pos != std::string::npos) {
    return what.substr(0, pos) + ": expected once, got it " + what.substr(pos + at_most.size()) + " times";
  }
  return what;
}

// CLI11 (2.1) names an unknown flag without guessing what was meant: add the closest flag of the
// subcommand that was being parsed ("--tpp (did you mean \"--tp\"?)"), or the closest subcommand.
std::string suggestions(const CLI::App& app) {
  const CLI::App* at = &app;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  std::vector<std::string> known;
  if (at == &app) {
    for (const CLI::App* sub : app.get_subcommands({})) known.push_back(sub->get_name());
  } else {
    for (const CLI::Option* opt : at->get_options()) {
      for (const std::string& l : opt->get_lnames()) known.push_back("--" + l);
      for (const std::string& s : opt->get_snames()) known.push_back("-" + s);
    }
  }
  const std::vector<std::string_view> names(known.begin(), known.end());
  std::string out;
  for (const std::string& arg : at->remaining()) {
    const std::string word = arg.substr(0, arg.find('='));
    if (at != &app && word.rfind('-', 0) != 0) continue;
    const std::string best = trainsim::closest_name(word, names);
    if (!best.empty()) out += fmt::format("; for {} did you mean {}?", trainsim::printable(word, 80), best);
  }
  return out;
}
// Keeps the heap's freed memory for reuse instead of handing it back to the kernel after every
// large free: a plan builds and drops thousands of per-unit cost tables and programs, and on the
// virtual machines we run on each page faulted back in is expensive (`trainsim plan --model
// megatron-1t --hw dgx2 --nodes 40..48` from a warm cache: 5.3 s with glibc's defaults, 1.9 s with
// these, 1.5 s of system time gone). The price: a process keeps its heap's high-water mark (the
// cold 1..128 plan's process tree peaked at 2.4 GiB instead of 1.8 GiB, reports/perf/plan.md).
void keep_freed_heap() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
}
}  // namespace

int main(int argc, char** argv) {
  keep_freed_heap();
  // Output temporaries and the simulator's child go away on SIGINT/SIGTERM/SIGHUP.
  trainsim::install_cleanup_signal_handlers();
  CLI::App app{"trainsim: simulator and capacity planner for large-model training"};
  app.set_version_flag("--version", TRAINSIM_VERSION);
  app.require_subcommand(1);
  trainsim::cli::Commands commands;
  trainsim::cli::register_commands(app, commands);
  try {
    app.parse(argc, argv);
    return commands.run();
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    std::cerr << "trainsim: error: " << trainsim::printable(e.what(), 1024) << suggestions(app) << "\n";
    std::cerr << "Run with --help for more information.\n";
    return 2;
  } catch (const CLI::ParseError& e) {
    std::cerr << "trainsim: error: " << trainsim::printable(plain_parse_error(e.what()), 1024) << suggestions(app) << "\n";
    std::cerr << "Run with --help for more information.\n";
    return 2;
  } catch (const trainsim::ConfigError& e) {
    std::cerr << "trainsim: error: " << e.what() << "\n";
    return 2;
  } catch (const trainsim::OutputError& e) {
    std::cerr << "trainsim: error: " << trainsim::printable(e.what(), 1024) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "trainsim: internal error: " << trainsim::printable(e.what(), 1024) << "\n";
    return 1;
  }
}
