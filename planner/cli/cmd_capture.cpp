// `trainsim capture ARGS...`: the capture package (workloads/capture/, trainsim_capture) run as
// `python3 -m trainsim_capture ARGS...` with the package on PYTHONPATH, so one tool answers and
// records. The Python is $TRAINSIM_PYTHON, else python3 (it needs PyTorch; transformers for
// --hf-config); the package is $TRAINSIM_CAPTURE_PATH, else this build's source tree.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "commands.hpp"

#ifndef TRAINSIM_CAPTURE_DIR
#error "TRAINSIM_CAPTURE_DIR: the folder holding trainsim_capture (set by planner/CMakeLists.txt)"
#endif

namespace trainsim::cli {

void register_capture(CLI::App& app, Commands& commands) {
  CLI::App* sub = app.add_subcommand("capture", "Record your model's training step (python3 -m trainsim_capture; needs PyTorch)");
  sub->allow_extras();
  sub->prefix_command();
  sub->set_help_flag();  // --help goes to trainsim_capture, whose options these are
  sub->callback([sub, &commands] {
    std::vector<std::string> args = sub->remaining();
    commands.run = [args] {
      const char* python = std::getenv("TRAINSIM_PYTHON");
      const std::string py = python != nullptr && *python != '\0' ? python : "python3";
      const char* dir = std::getenv("TRAINSIM_CAPTURE_PATH");
      std::string path = dir != nullptr && *dir != '\0' ? dir : TRAINSIM_CAPTURE_DIR;
      if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0') path += std::string(":") + old;
      ::setenv("PYTHONPATH", path.c_str(), 1);
      std::vector<char*> argv{const_cast<char*>(py.c_str()), const_cast<char*>("-m"), const_cast<char*>("trainsim_capture")};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execvp(argv[0], argv.data());
      std::fprintf(stderr, "trainsim: error: capture: could not start %s (%s); set TRAINSIM_PYTHON to a Python with PyTorch\n",
                   py.c_str(), std::strerror(errno));
      return 2;
    };
  });
}

}  // namespace trainsim::cli
