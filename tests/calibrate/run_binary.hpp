#pragma once
// Runs build/trainsim-calibrate in a shell with extra environment and captures its streams.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace trainsim::calibrate::test {

// A fresh empty directory, removed with the object.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("trainsim-calibrate-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  bool empty() const { return std::filesystem::is_empty(path_); }

 private:
  std::filesystem::path path_;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Run {
  int exit_code = -1;
  std::string out, err;
};

// `env` is prepended to the command line ("CUDA_VISIBLE_DEVICES= "), `args` is shell-quoted text.
inline Run run_calibrate(const std::string& args, const std::string& env = "") {
  TempDir io;
  const std::string out = (io.path() / "out").string(), err = (io.path() / "err").string();
  const std::string cmd = env + " " + TRAINSIM_CALIBRATE_BINARY + " " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  Run r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace trainsim::calibrate::test
