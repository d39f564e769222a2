#pragma once
// Helpers shared by the tests: a scratch directory, running the built CLI, reading fixtures.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace trainsim::test {

// A fresh directory under the system temp dir, removed with the object.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // Writes `text` to `name` inside the directory and returns the full path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs build/trainsim with `args` (a shell-quoted string) and captures both streams.
CommandResult run_trainsim(const std::string& args);
CommandResult run_command(const std::string& command_line);

std::string read_file(const std::string& path);
std::string source_path(const std::string& relative);  // a path inside the source tree
nlohmann::json read_source_json(const std::string& relative);

}  // namespace trainsim::test
