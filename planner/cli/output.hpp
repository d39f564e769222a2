#pragma once
// Writing a command's results. Every command builds all its outputs in memory first, then hands
// them here together: the files are written through one OutputSet (hwprofiles/io/output_files.hpp:
// all checked before any is written, each to a temporary beside its target, all renamed into
// place at the end, all or none), and standard output is printed last, once the files are in
// place.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli_common.hpp"

namespace trainsim::cli {

// How -o/--output is named in messages.
inline constexpr const char* OUTPUT_FLAG = "-o/--output";

struct Output {
  std::string flag;  // names the output in messages ("-o/--output", "--trace")
  std::string path;  // the file, unless to_stdout
  std::string text;
  bool to_stdout = false;
};

// The result of a subcommand with output flags: its -o file, or standard output when -o was not
// given (an explicit empty -o is a file path, and refused as such).
Output result_output(const CLI::App& sub, const OutputFlags& out);

// Checks every file output and writes nothing: commands call it before a long computation, so a
// bad path fails at once. Throws ConfigError naming the flag.
void check_outputs(std::vector<Output> outputs);

// Writes every file output (checked again, all or none), then prints the standard output ones.
// Throws ConfigError for a refused path, OutputError for a failed write.
void emit(std::vector<Output> outputs);

}  // namespace trainsim::cli
