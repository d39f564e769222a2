#pragma once
// SimGrid allows one engine and one platform per process (shared/notes/simgrid-3.32.md), so each
// simulation runs in a forked child: the child configures SimGrid, builds its platform, replays
// and hands back its answer as text through a pipe. This also keeps a planner free to run many
// simulations, and to run them in parallel.

#include <functional>
#include <string>

namespace trainsim::sim {

// Runs `fn` in a child process and returns the text it produced. Exceptions in the child come
// back as std::runtime_error with their message; a crashed child is an error naming its signal.
std::string run_isolated(const std::function<std::string()>& fn);

}  // namespace trainsim::sim
