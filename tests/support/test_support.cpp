#include "test_support.hpp"

#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace trainsim::test {

ScratchDir::ScratchDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("trainsim-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string ScratchDir::write(const std::string& name, const std::string& text) const {
  const auto file = path_ / name;
  std::ofstream out(file, std::ios::binary);
  out << text;
  return file.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

CommandResult run_command(const std::string& command_line) {
  ScratchDir scratch;
  const std::string out_path = (scratch.path() / "stdout").string();
  const std::string err_path = (scratch.path() / "stderr").string();
  const std::string full = command_line + " >" + out_path + " 2>" + err_path;
  const int status = std::system(full.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
}

CommandResult run_trainsim(const std::string& args) { return run_command(std::string(TRAINSIM_BINARY) + " " + args); }

std::string source_path(const std::string& relative) { return std::string(TRAINSIM_SOURCE_DIR) + "/" + relative; }

nlohmann::json read_source_json(const std::string& relative) {
  return nlohmann::json::parse(read_file(source_path(relative)));
}

}  // namespace trainsim::test
