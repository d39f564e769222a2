// `trainsim list`: the built-in models and clusters.
#include <fmt/format.h>

#include "commands.hpp"
#include "model_loader.hpp"
#include "model_params.hpp"
#include "output.hpp"
#include "profile_loader.hpp"
#include "request.hpp"

namespace trainsim::cli {

void register_list(CLI::App& app, Commands& commands) {
  CLI::App* sub = app.add_subcommand("list", "List the built-in models and cluster profiles");
  sub->footer(std::string("Examples:\n"
                          "  trainsim list\n"
                          "  trainsim list | grep -i dgx\n\n") +
              EXIT_CODES_HELP);
  sub->callback([&commands] {
    commands.run = [] {
      std::string out = "Models (--model):\n";
      for (const auto& name : wl::builtin_model_names()) {
        const wl::ModelSpec m = wl::builtin_model(name);
        out += fmt::format("  {:<16} {:>9}  {}\n", name, planner::human_count(wl::total_params(m)), m.description);
      }
      out += "\nClusters (--hw):\n";
      for (const auto& name : hw::builtin_profile_names()) {
        const hw::ClusterProfile p = hw::builtin_profile(name);
        out += fmt::format("  {:<18} {:>4} nodes x {:>2} {:<16} {}\n", name, p.node_count, p.gpus_per_node(),
                           p.gpu.model, p.description.substr(0, 60));
      }
      emit({{"", "", std::move(out), true}});
      return 0;
    };
  });
}

}  // namespace trainsim::cli
