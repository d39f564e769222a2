#include "options.hpp"

#include <array>
#include <charconv>
#include <cstdlib>
#include <utility>

#include "config_error.hpp"
#include "errors.hpp"

namespace trainsim::calibrate {
namespace {

constexpr std::array<std::pair<Part, std::string_view>, 12> PART_NAMES{{
    {Part::GEMM, "gemm"},
    {Part::KERNELS, "kernels"},
    {Part::HOST_COPY, "host_copy"},
    {Part::NCCL, "nccl"},
    {Part::STORAGE_GPU, "storage_gpu"},
    {Part::STORAGE, "storage"},
    {Part::CPU_ADAM, "cpu_adam"},
    {Part::HOST_MEMORY, "host_memory"},
    {Part::INTERFERENCE, "interference"},
    {Part::HOST_DISPATCH, "host_dispatch"},
    {Part::REFERENCE_KERNELS, "reference_kernels"},
    {Part::FRAMEWORK, "framework"},
}};

std::string part_list() {
  std::string s;
  for (const auto& [part, name] : PART_NAMES) {
    if (!s.empty()) s += ", ";
    s += name;
  }
  return s;
}

std::set<Part> parse_parts(const std::string& flag, const std::string& text) {
  std::set<Part> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool found = false;
    for (const auto& [part, name] : PART_NAMES) {
      if (item == name) {
        parts.insert(part);
        found = true;
      }
    }
    if (item == "cpu") {  // shorthand for every part that needs no GPU
      parts.insert({Part::STORAGE, Part::CPU_ADAM, Part::HOST_MEMORY});
      found = true;
    }
    if (!found) throw UsageError(flag, "a comma-separated list of " + part_list() + " or cpu", "\"" + item + "\"");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

// Storage bench file sizes: at least a mixed chunk (48 MiB) and a whole sweep request; at most 1 TiB.
constexpr int MIN_FILE_MIB = 64;
constexpr int MAX_FILE_MIB = 1 << 20;

int parse_count(const std::string& flag, const std::string& text, int min, int max) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    throw UsageError(flag, "an integer from " + std::to_string(min) + " to " + std::to_string(max),
                     "\"" + text + "\"");
  }
  return value;
}

bool valid_profile_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::string quote_arg(const std::string& a) {
  if (!a.empty() && a.find_first_of(" \t\"'\\$`") == std::string::npos) return a;
  std::string q = "'";
  for (char c : a) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string_view to_string(Part part) {
  for (const auto& [p, name] : PART_NAMES) {
    if (p == part) return name;
  }
  return "?";
}

std::string_view to_string(Mode mode) { return mode == Mode::QUICK ? "quick" : "full"; }

bool is_gpu_part(Part part) {
  return part == Part::GEMM || part == Part::KERNELS || part == Part::HOST_COPY || part == Part::NCCL ||
         part == Part::STORAGE_GPU || part == Part::INTERFERENCE || part == Part::HOST_DISPATCH ||
         part == Part::REFERENCE_KERNELS;  // framework: the driver itself says whether CUDA is there
}

bool any_gpu_part(const std::set<Part>& parts) {
  for (Part p : parts) {
    if (is_gpu_part(p)) return true;
  }
  return false;
}

std::string usage_text() {
  return "usage: trainsim-calibrate [--quick|--full] --out DIR [options]\n"
         "       trainsim-calibrate compare A/summary.json B/summary.json [--tolerance F]\n"
         "       trainsim-calibrate rebuild RUN/raw_results.json --out DIR [--base NAME|PATH] [--name NAME]\n"
         "       trainsim-calibrate reference --out DIR [options]  (a real training step: reference --help)\n"
         "\n"
         "Measures this machine (GPU GEMMs, memory-bound kernels, host<->device copies, NCCL\n"
         "collectives, O_DIRECT storage, CPU-Adam) and writes raw_results.json, summary.json,\n"
         "summary.md, SVG plots and, with --base, profile.json in the trainsim profile schema.\n"
         "\n"
         "  --quick              short run (under 2 minutes); the default is the full run\n"
         "  --full               full run (under 10 minutes)\n"
         "  --out DIR            output directory (created if missing; files replaced atomically)\n"
         "  --base NAME|PATH     profile giving what a benchmark cannot measure (price, power,\n"
         "                       datasheet peaks); without it no profile.json is written\n"
         "  --name NAME          name of the written profile (default: measured)\n"
         "  --storage-dir DIR    directory the storage benchmarks may write into (nothing is\n"
         "                       written outside it; temporary files are removed on exit)\n"
         "  --storage-kind KIND  nvme, sata_ssd, virtio or hdd (default: detected)\n"
         "  --storage-file-mib N the storage bench's test file, MiB (64 to 1048576; default 1024\n"
         "                       quick, 2048 full)\n"
         "  --storage-mixed-file-mib N  each of the mixed read+write bench's files (two per\n"
         "                       stream), MiB (64 to 1048576; default 1024)\n"
         "  --only LIST          run only these parts: " + part_list() + ",\n"
         "                       or cpu (= storage,cpu_adam,host_memory); framework = the PyTorch\n"
         "                       parts (calibrate/framework/, where PyTorch with CUDA is importable)\n"
         "  --skip LIST          run everything except these parts\n"
         "  --gpus N             use the first N GPUs (default: all)\n"
         "  --threads N          most CPU-Adam threads (default: all logical CPUs)\n"
         "  --budget SECONDS     measure what fits in this time (10 to 86400): parts in order of\n"
         "                       need, then more sizes; what is left out is printed\n"
         "  --resume DIR         finish the run recorded in DIR (interrupted or timed out): its\n"
         "                       finished parts are kept, the others measured (with --budget only)\n"
         "  --help, --version\n"
         "\n"
         "compare: the headline figures of two runs side by side; exit 1 if any differs by more than\n"
         "the tolerance (default 0.05, relative to their mean).\n"
         "rebuild: summary, plots and profile again from a run's raw results, measuring nothing (after\n"
         "a change of base profile or of trainsim-calibrate's report code).\n"
         "\n"
         "Exit codes: 0 done, 1 a measurement failed or its check failed, 2 bad command line,\n"
         "3 GPU benchmarks asked for but no GPU (run the CPU parts with --only cpu).\n";
}

ParsedCommand parse_command_line(const std::vector<std::string>& args) {
  ParsedCommand cmd;
  Options& o = cmd.options;
  o.command_line = "trainsim-calibrate";
  for (const auto& a : args) o.command_line += " " + quote_arg(a);

  if (!args.empty() && args[0] == "compare") {
    cmd.action = Action::COMPARE;
    for (std::size_t i = 1; i < args.size(); ++i) {
      if (args[i] == "--tolerance") {
        if (i + 1 >= args.size()) throw UsageError("--tolerance", "a fraction such as 0.05 after the flag");
        const std::string& t = args[++i];
        char* end = nullptr;
        cmd.tolerance = std::strtod(t.c_str(), &end);
        if (end != t.c_str() + t.size() || !(cmd.tolerance > 0 && cmd.tolerance < 1)) {
          throw UsageError("--tolerance", "a fraction in (0, 1)", "\"" + t + "\"");
        }
      } else if (args[i].starts_with("-")) {
        throw UsageError(args[i], "no such flag for compare (only --tolerance)");
      } else {
        cmd.inputs.push_back(args[i]);
      }
    }
    if (cmd.inputs.size() != 2) {
      throw UsageError("compare", "two summary.json files", std::to_string(cmd.inputs.size()) + " files");
    }
    return cmd;
  }

  if (!args.empty() && args[0] == "rebuild") {
    cmd.action = Action::REBUILD;
    for (std::size_t i = 1; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto value = [&]() -> const std::string& {
        if (i + 1 >= args.size() || args[i + 1].starts_with("--")) throw UsageError(a, "a value after the flag");
        return args[++i];
      };
      if (a == "--out") {
        o.out_dir = value();
      } else if (a == "--base") {
        o.base = value();
      } else if (a == "--name") {
        o.name = value();
        if (!valid_profile_name(o.name)) {
          throw UsageError("--name", "1 to 64 characters from a-z, 0-9, '-', '_', '.'", "\"" + o.name + "\"");
        }
      } else if (a == "--storage-kind") {
        o.storage_kind = value();
        if (*o.storage_kind != "nvme" && *o.storage_kind != "sata_ssd" && *o.storage_kind != "virtio" &&
            *o.storage_kind != "hdd") {
          throw UsageError("--storage-kind", "one of nvme, sata_ssd, virtio, hdd", "\"" + *o.storage_kind + "\"");
        }
      } else if (a.starts_with("-")) {
        throw UsageError(a, "no such flag for rebuild (--out, --base, --name, --storage-kind)");
      } else {
        cmd.inputs.push_back(a);
      }
    }
    if (cmd.inputs.size() != 1) throw UsageError("rebuild", "one raw_results.json", std::to_string(cmd.inputs.size()) + " files");
    if (o.out_dir.empty()) throw UsageError("--out", "an output directory (--out DIR)");
    return cmd;
  }

  o.arguments = args;
  // --resume DIR [--budget S]: everything else is the recorded run's (calibrate_run.cpp reads it).
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--resume") continue;
    for (std::size_t j = 0; j < args.size(); ++j) {
      if (j == i) {
        if (j + 1 >= args.size() || args[j + 1].starts_with("--")) throw UsageError("--resume", "the --out DIR of an earlier run");
        o.resume_dir = args[++j];
      } else if (args[j] == "--budget") {
        if (j + 1 >= args.size()) throw UsageError("--budget", "a value after the flag");
        o.budget_s = parse_count("--budget", args[++j], 10, 86400);
      } else {
        throw UsageError(args[j], "nothing beside --resume DIR but --budget SECONDS (the other choices are the recorded run's)");
      }
    }
    return cmd;
  }
  std::optional<std::set<Part>> only, skip;
  bool quick = false, full = false;
  auto value_of = [&](std::size_t& i) -> const std::string& {
    if (i + 1 >= args.size() || args[i + 1].starts_with("--")) throw UsageError(args[i], "a value after the flag");
    return args[++i];
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      cmd.action = Action::HELP;
      return cmd;
    } else if (a == "--version") {
      cmd.action = Action::VERSION;
      return cmd;
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--full") {
      full = true;
    } else if (a == "--out") {
      o.out_dir = value_of(i);
    } else if (a == "--base") {
      o.base = value_of(i);
    } else if (a == "--name") {
      o.name = value_of(i);
      if (!valid_profile_name(o.name)) {
        throw UsageError("--name", "1 to 64 characters from a-z, 0-9, '-', '_', '.'", "\"" + o.name + "\"");
      }
    } else if (a == "--storage-dir") {
      o.storage_dir = value_of(i);
    } else if (a == "--storage-kind") {
      o.storage_kind = value_of(i);
      if (*o.storage_kind != "nvme" && *o.storage_kind != "sata_ssd" && *o.storage_kind != "virtio" &&
          *o.storage_kind != "hdd") {
        throw UsageError("--storage-kind", "one of nvme, sata_ssd, virtio, hdd", "\"" + *o.storage_kind + "\"");
      }
    } else if (a == "--only") {
      only = parse_parts("--only", value_of(i));
    } else if (a == "--skip") {
      skip = parse_parts("--skip", value_of(i));
    } else if (a == "--gpus") {
      o.gpus = parse_count("--gpus", value_of(i), 1, 1024);
    } else if (a == "--budget") {
      o.budget_s = parse_count("--budget", value_of(i), 10, 86400);
    } else if (a == "--threads") {
      o.threads = parse_count("--threads", value_of(i), 1, 4096);
    } else if (a == "--storage-file-mib") {
      o.storage_file_mib = parse_count("--storage-file-mib", value_of(i), MIN_FILE_MIB, MAX_FILE_MIB);
    } else if (a == "--storage-mixed-file-mib") {
      o.storage_mixed_file_mib = parse_count("--storage-mixed-file-mib", value_of(i), MIN_FILE_MIB, MAX_FILE_MIB);
    } else {
      // The run's flags and the subcommands, for a suggestion when `a` is a typo of one.
      static constexpr std::string_view KNOWN[] = {
          "--help", "--version", "--quick", "--full", "--out", "--base", "--name", "--storage-dir", "--storage-kind", "--only",
          "--skip", "--gpus", "--threads", "--storage-file-mib", "--storage-mixed-file-mib", "compare", "rebuild", "reference"};
      throw UsageError(a, "no such flag (see --help)" + did_you_mean(a, KNOWN));
    }
  }
  if (quick && full) throw UsageError("--quick", "either --quick or --full, not both");
  if (only && skip) throw UsageError("--skip", "either --only or --skip, not both");
  if (o.out_dir.empty()) throw UsageError("--out", "an output directory (--out DIR)");
  o.mode = quick ? Mode::QUICK : Mode::FULL;

  if (only) {
    o.parts = *only;
    o.parts_explicit = true;
  } else {
    for (const auto& [part, name] : PART_NAMES) o.parts.insert(part);
    if (skip) {
      for (Part p : *skip) o.parts.erase(p);
    }
  }
  const bool wants_storage = o.parts.contains(Part::STORAGE) || o.parts.contains(Part::STORAGE_GPU);
  if (wants_storage && !o.storage_dir) {
    if (o.parts_explicit) {
      throw UsageError("--storage-dir", "a directory for the storage benchmarks (asked for with --only)");
    }
    o.parts.erase(Part::STORAGE);
    o.parts.erase(Part::STORAGE_GPU);
    o.skipped_notes.push_back("storage and storage_gpu skipped: no --storage-dir given");
  }
  if (o.storage_kind && !o.storage_dir) throw UsageError("--storage-kind", "--storage-dir as well");
  for (const auto& [flag, mib] : {std::pair<const char*, int>{"--storage-file-mib", o.storage_file_mib},
                                  std::pair<const char*, int>{"--storage-mixed-file-mib", o.storage_mixed_file_mib}}) {
    if (mib != 0 && !o.parts.contains(Part::STORAGE)) {
      throw UsageError(flag, "the storage part to run (--storage-dir, and storage in --only if given)");
    }
  }
  if (o.parts.empty()) throw UsageError(only ? "--only" : "--skip", "at least one part left to run");
  return cmd;
}

}  // namespace trainsim::calibrate
