#include "output.hpp"

#include <iostream>

#include "output_files.hpp"

namespace trainsim::cli {
namespace {

// `take_text`: the texts move into the set (a trace is tens of megabytes); else paths alone.
void add_files(OutputSet& set, std::vector<Output>& outputs, bool take_text) {
  for (Output& o : outputs) {
    if (o.to_stdout) continue;
    const bool streamable = o.flag == OUTPUT_FLAG;
    set.add(o.flag, o.path, take_text ? std::move(o.text) : std::string(),
            streamable ? "leave out -o to write to standard output" : "");
  }
}

}  // namespace

Output result_output(const CLI::App& sub, const OutputFlags& out) {
  Output o;
  o.flag = OUTPUT_FLAG;
  o.path = out.output;
  o.to_stdout = sub.count("--output") == 0;
  return o;
}

void check_outputs(std::vector<Output> outputs) {
  OutputSet set;
  add_files(set, outputs, false);
  set.check();
}

void emit(std::vector<Output> outputs) {
  {
    OutputSet set;
    add_files(set, outputs, true);
    set.commit();
  }
  for (const Output& o : outputs) {
    if (!o.to_stdout) continue;
    std::cout << o.text;
    std::cout.flush();
    if (!std::cout) throw OutputError("cannot write to standard output");
  }
}

}  // namespace trainsim::cli
