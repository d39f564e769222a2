#pragma once
// SimGrid allows one engine and one platform per process (sim/README.md, The engine), so each
// simulation runs in a forked child: the child configures SimGrid, builds its platform, replays
// and hands back its answer as text through a pipe. This also keeps a planner free to run many
// simulations, and to run them in parallel.
//
// The child writes no files: everything it produces comes back through the pipe and the parent
// decides what to write (hwprofiles/io/output_files.hpp). The child dies with its parent
// (PR_SET_PDEATHSIG), and a parent interrupted by SIGINT/SIGTERM/SIGHUP kills and reaps it first
// (the cleanup registry of output_files.hpp), so no simulation outlives the command that asked.

#include <functional>
#include <string>
#include <vector>

namespace trainsim::sim {

// Runs `fn` in a child process and returns the texts it produced, each passed back
// length-prefixed. Exceptions in the child come back as std::runtime_error with their message; a
// crashed child is an error naming its signal.
std::vector<std::string> run_isolated_parts(const std::function<std::vector<std::string>()>& fn);

// The same for one text.
std::string run_isolated(const std::function<std::string()>& fn);

}  // namespace trainsim::sim
