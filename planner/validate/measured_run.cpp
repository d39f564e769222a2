#include "measured_run.hpp"

#include <filesystem>

#include "config_error.hpp"
#include "enum_names.hpp"

namespace trainsim::planner {
namespace {

namespace fs = std::filesystem;

// PyTorch's stacks as run_step.py names them, and trainsim's stack for each
// (workloads/training_stacks.md).
wl::StackKind stack_kind(const StrictObject& o, const std::string& name) {
  if (name == "pytorch") return wl::StackKind::PYTORCH;
  if (name == "pytorch-ddp") return wl::StackKind::PYTORCH_DDP;
  if (name == "pytorch-fsdp") return wl::StackKind::PYTORCH_FSDP;
  if (name == "pytorch-pipelining") return wl::StackKind::PYTORCH_PIPELINING;
  if (name == "megatron") return wl::StackKind::MEGATRON;
  if (name == "deepspeed") return wl::StackKind::DEEPSPEED;
  throw ConfigError(o.source(), o.path_of("name"),
                    "one of pytorch, pytorch-ddp, pytorch-fsdp, pytorch-pipelining, megatron, deepspeed", "\"" + name + "\"");
}

std::string beside(const std::string& directory, const std::string& file, const StrictObject& o, const char* key) {
  if (file.empty() || file.find('/') != std::string::npos) {
    throw ConfigError(o.source(), o.path_of(key), "the name of a file beside the measured run (no directories)", "\"" + file + "\"");
  }
  return (fs::path(directory) / file).string();
}

const NumberRange SECONDS{0.0, 1e6, false, "a number of seconds in (0, 1e6]"};
const NumberRange BYTES{0.0, 1e15, false, "a number of bytes in (0, 1e15]"};

}  // namespace

MeasuredRun measured_run_from_json(const JsonDocument& doc, const std::string& directory) {
  StrictObject root(doc.json, doc.source, "");
  const auto version = root.integer("schema_version", 1, 1000);
  if (version != 1) throw ConfigError(doc.source, "schema_version", "schema version 1", std::to_string(version));
  const std::string kind = root.string("kind");
  if (kind != "trainsim.measured_run") {
    throw ConfigError(doc.source, "kind", "\"trainsim.measured_run\"", "\"" + kind + "\"");
  }
  MeasuredRun r;
  r.path = doc.source;
  r.name = root.string("name");
  {
    StrictObject p = root.object("provenance");
    r.gpu = p.optional_string("gpu").value_or("");
    r.gpus = static_cast<int>(p.optional_integer("gpus", 1, 1 << 20).value_or(1));
    // The rest of the provenance is kept as it is (who ran it, where, with which versions).
    for (const auto& [key, value] : p.json().items()) {
      if (key != "gpu" && key != "gpus") p.raw(key);
    }
    p.finish();
  }
  r.model_path = beside(directory, root.string("model"), root, "model");
  // The strategy object is trainsim's strategy schema, read by its own strict reader.
  const nlohmann::json& strategy = root.raw("strategy");
  if (!strategy.is_object()) throw ConfigError(doc.source, "strategy", "an object (a trainsim strategy)", describe_json(strategy));
  r.strategy = wl::strategy_from_json(JsonDocument{strategy, doc.source + " (key strategy)"});
  {
    StrictObject st = root.object("stack");
    r.stack = st.string("name");
    wl::TrainingStack stack;
    stack.kind = stack_kind(st, r.stack);
    if (auto d = st.optional_object("details")) {
      // The details record the exact policies; those the model reads are read here, the rest kept.
      for (const auto& [key, value] : d->json().items()) {
        if (key == "gradient_as_bucket_view") {
          stack.gradient_as_bucket_view = d->boolean(key);
        } else if (key == "layers_per_stage") {
          for (std::int64_t n : d->integers(key, 0, 1 << 20)) r.layers_per_stage.push_back(static_cast<int>(n));
        } else {
          d->raw(key);
        }
      }
      d->finish();
    }
    st.finish();
    r.strategy.stack.set(stack, doc.source + ": stack");
  }
  {
    StrictObject m = root.object("measured");
    r.step_time_s = m.number("step_time_s", SECONDS);
    if (auto spread = m.optional_number("step_time_spread", {0.0, 1e3, true, "a number in [0, 1000]"})) r.step_time_spread = *spread;
    r.peak_allocated_bytes = m.numbers("peak_allocated_bytes", BYTES);
    r.peak_reserved_bytes = m.numbers("peak_reserved_bytes", BYTES);
    if (r.peak_reserved_bytes.size() != r.peak_allocated_bytes.size()) {
      throw ConfigError(doc.source, "measured.peak_reserved_bytes",
                        "one peak per rank, as many as measured.peak_allocated_bytes (" +
                            std::to_string(r.peak_allocated_bytes.size()) + ")",
                        std::to_string(r.peak_reserved_bytes.size()) + " values");
    }
    if (auto busy = m.optional_object("busy")) {
      r.exposed_communication_s = busy->optional_number("exposed_communication_s", {0.0, 1e6, true, "seconds in [0, 1e6]"});
      r.bubble_fraction = busy->optional_number("bubble_fraction", {0.0, 1.0, true, "a fraction in [0, 1]"});
      busy->finish();
    }
    if (m.has("trace") && !m.json().at("trace").is_null()) r.trace_path = beside(directory, m.string("trace"), m, "trace");
    else if (m.has("trace")) m.raw("trace");
    m.finish({"warmup_steps", "warmup_step_times_s", "step_times_s", "step_times_s_per_rank", "params_per_rank",
              "tokens_per_s", "build_s"});
  }
  root.finish();
  return r;
}

MeasuredRun load_measured_run(const std::string& path) {
  const JsonDocument doc = parse_json_file(path);
  return measured_run_from_json(doc, fs::path(path).parent_path().string());
}

}  // namespace trainsim::planner
