#pragma once
// The command line of trainsim-calibrate. Parsing is strict: every problem is a UsageError that
// names the flag and what was expected (exit code 2), raised before any measurement starts.

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim::calibrate {

enum class Mode { QUICK, FULL };

// One benchmark family. GPU parts need a GPU; CPU parts run anywhere.
enum class Part { GEMM, KERNELS, HOST_COPY, NCCL, STORAGE_GPU, STORAGE, CPU_ADAM, HOST_MEMORY, INTERFERENCE, HOST_DISPATCH, REFERENCE_KERNELS,
                  FRAMEWORK };

std::string_view to_string(Part part);
std::string_view to_string(Mode mode);
bool is_gpu_part(Part part);

struct Options {
  Mode mode = Mode::FULL;
  std::string out_dir;                     // --out: where results, summary, plots and the profile go
  std::optional<std::string> base;         // --base: profile supplying what cannot be measured
  std::string name = "measured";           // --name: the written profile's name
  std::optional<std::string> storage_dir;  // --storage-dir: the only place storage benchmarks write
  std::optional<std::string> storage_kind; // --storage-kind: overrides the detected device kind
  std::set<Part> parts;                    // what to run (after --only / --skip)
  bool parts_explicit = false;             // --only given: a missing prerequisite is an error
  int gpus = 0;                            // --gpus: use the first N GPUs (0 = all)
  int threads = 0;                         // --threads: most CPU-Adam threads (0 = all logical CPUs)
  // --storage-file-mib / --storage-mixed-file-mib: the storage bench's test file (reads and writes
  // alone) and each of the mixed bench's files, in MiB; 0 = the default (storage_config: 1 GiB
  // quick, 2 GiB full; MixedStorageConfig::file_bytes, 1 GiB).
  int storage_file_mib = 0;
  int storage_mixed_file_mib = 0;
  std::optional<double> budget_s;          // --budget: plan the parts to fit this many seconds
  std::optional<std::string> resume_dir;   // --resume DIR: the run recorded there, its finished parts kept
  std::vector<std::string> arguments;      // as given (a resumed run parses its recorded ones again)
  std::vector<std::string> skipped_notes;  // parts dropped by default rules, with the reason
  std::string command_line;                // as typed, for provenance
};

// What main() should do.
enum class Action { RUN, HELP, VERSION, COMPARE, REBUILD };

struct ParsedCommand {
  Action action = Action::RUN;
  Options options;
  // `compare A B [--tolerance F]`: two summary.json files and the allowed relative difference;
  // `rebuild RAW --out DIR [--base X] [--name N] [--storage-kind K]`: one raw_results.json.
  std::vector<std::string> inputs;
  double tolerance = 0.05;
};

ParsedCommand parse_command_line(const std::vector<std::string>& args);
std::string usage_text();

bool any_gpu_part(const std::set<Part>& parts);

}  // namespace trainsim::calibrate
