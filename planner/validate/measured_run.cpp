#include "measured_run.hpp"

#include <algorithm>
#include <filesystem>

#include "config_error.hpp"
#include "enum_names.hpp"
#include "input_file.hpp"
#include "measured_json.hpp"
#include "stack_model.hpp"

namespace trainsim::planner {
namespace {

namespace fs = std::filesystem;

// The stack a measured run ran, spelled as wl::names::STACK spells it (run_step.py writes those
// names): any a real run runs (wl::StackModel::measurable).
wl::StackKind stack_kind(const StrictObject& o, const std::string& name) {
  if (const wl::StackKind* k = wl::names::parse(name, wl::names::STACK); k != nullptr && wl::stack_model(*k).measurable) {
    return *k;
  }
  std::string expected;
  for (const auto& [kind, spelling] : wl::names::STACK) {
    if (wl::stack_model(kind).measurable) expected += (expected.empty() ? "one of " : ", ") + std::string(spelling);
  }
  throw ConfigError(o.source(), o.path_of("name"), expected, "\"" + name + "\"");
}

std::string beside(const std::string& directory, const std::string& file, const StrictObject& o, const char* key) {
  if (file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos) {
    throw ConfigError(o.source(), o.path_of(key), "the name of a file beside the measured run (no directories)", "\"" + file + "\"");
  }
  return (fs::path(directory) / file).string();
}

const NumberRange SECONDS{0.0, 1e6, false, "a number of seconds in (0, 1e6]"};
const NumberRange FRACTION{0.0, 1.0, true, "a fraction in [0, 1]"};
const NumberRange BYTES{0.0, 1e15, false, "a number of bytes in (0, 1e15]"};

// measured.launches: the same configuration timed in several launches (fresh process groups), the
// row being the launch with the median step time (reports/validation/README.md, "Launches"). The
// row's step_time_s must be that median, so a reader can trust the range it is shown beside.
void read_launches(StrictObject& m, MeasuredRun& r) {
  std::vector<StrictObject> launches = m.objects("launches");
  if (launches.size() % 2 == 0) {
    throw ConfigError(m.source(), m.path_of("launches"), "an odd number of launches (the row is the median one)",
                      std::to_string(launches.size()) + " launches");
  }
  for (StrictObject& launch : launches) {
    launch.integer("launch", 1, 1000);
    r.launch_step_times_s.push_back(launch.number("step_time_s", SECONDS));
    launch.optional_number("step_time_spread", {0.0, 1e3, true, "a number in [0, 1000]"});
    launch.optional_number("bubble_fraction", FRACTION);
    r.launch_cpu_steal_fractions.push_back(launch.optional_number("cpu_steal_fraction", FRACTION));
    launch.optional_string("date");
    launch.finish();
  }
  std::vector<double> sorted = r.launch_step_times_s;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  if (r.step_time_s != median) {
    throw ConfigError(m.source(), m.path_of("step_time_s"),
                      "the median of measured.launches' step_time_s (" + describe_json(median) + ")",
                      describe_json(r.step_time_s));
  }
}

// measured of a run that ran: its step time, its peaks per rank and what else it timed.
void read_step(StrictObject& m, MeasuredRun& r, const std::string& directory) {
  if (m.has("oom_message")) {
    throw ConfigError(m.source(), m.path_of("oom_message"), "oom_message only beside \"oom\": true (the message of a run that ran out of memory)",
                      r.oom ? "\"oom\": false" : "no measured.oom");
  }
  r.step_time_s = m.number("step_time_s", SECONDS);
  if (auto spread = m.optional_number("step_time_spread", {0.0, 1e3, true, "a number in [0, 1000]"})) r.step_time_spread = *spread;
  r.peak_allocated_bytes = m.numbers("peak_allocated_bytes", BYTES);
  r.peak_reserved_bytes = m.numbers("peak_reserved_bytes", BYTES);
  if (r.peak_reserved_bytes.size() != r.peak_allocated_bytes.size()) {
    throw ConfigError(m.source(), "measured.peak_reserved_bytes",
                      "one peak per rank, as many as measured.peak_allocated_bytes (" +
                          std::to_string(r.peak_allocated_bytes.size()) + ")",
                      std::to_string(r.peak_reserved_bytes.size()) + " values");
  }
  if (auto busy = m.optional_object("busy")) {
    const NumberRange busy_s{0.0, 1e6, true, "seconds in [0, 1e6]"};
    r.compute_busy_s = busy->optional_number("compute_s", busy_s);
    r.communication_busy_s = busy->optional_number("communication_s", busy_s);
    r.exposed_communication_s = busy->optional_number("exposed_communication_s", busy_s);
    r.offload_io_busy_s = busy->optional_number("offload_io_s", busy_s);
    r.optimizer_busy_s = busy->optional_number("optimizer_s", busy_s);
    r.host_busy_s = busy->optional_number("host_s", busy_s);
    r.bubble_fraction = busy->optional_number("bubble_fraction", {0.0, 1.0, true, "a fraction in [0, 1]"});
    if (auto d = busy->optional_string("definition")) {
      if (*d == "kernels") r.busy_definition = BusyDefinition::KERNELS;
      else if (*d == "call_spans") r.busy_definition = BusyDefinition::CALL_SPANS;
      else throw ConfigError(m.source(), busy->path_of("definition"), "\"kernels\" or \"call_spans\"", "\"" + *d + "\"");
    }
    busy->finish();
  }
  if (auto bytes = m.optional_object("bytes")) {
    const NumberRange moved{0.0, 1e18, true, "a number of bytes in [0, 1e18]"};
    for (const char* key : {"collective", "p2p", "host_to_device", "device_to_host", "nvme_read", "nvme_write"}) {
      if (auto v = bytes->optional_number(key, moved)) r.bytes_moved.emplace_back(key, *v);
    }
    bytes->finish();
  }
  if (m.has("launches")) read_launches(m, r);
  if (m.has("trace") && !m.json().at("trace").is_null()) r.trace_path = beside(directory, m.string("trace"), m, "trace");
  else if (m.has("trace")) m.raw("trace");
  if (m.has("trace_summary")) {
    if (r.trace_path) {
      throw ConfigError(m.source(), m.path_of("trace_summary"), "either trace or trace_summary (a summary of that trace), not both",
                        "both");
    }
    r.trace_summary_path = beside(directory, m.string("trace_summary"), m, "trace_summary");
  }
  m.finish({"warmup_steps", "warmup_step_times_s", "step_times_s", "step_times_s_per_rank", "params_per_rank",
            "tokens_per_s", "build_s"});
}

// measured of a run that ran out of GPU memory ("oom": true): the allocator's message and nothing
// else. A run that did not finish a step has no step time and no peaks of timed steps; a figure here
// would be one the validation cannot compare, so it is refused rather than ignored (what the run
// reached before it ran out belongs in stack.details.oom, which is kept).
void read_out_of_memory(StrictObject& m, MeasuredRun& r) {
  r.oom_message = m.string("oom_message");
  if (r.oom_message.empty()) {
    throw ConfigError(m.source(), m.path_of("oom_message"), "the allocator's message (a non-empty string)", "\"\"");
  }
  for (const auto& [key, value] : m.json().items()) {
    if (key == "oom" || key == "oom_message") continue;
    throw ConfigError(m.source(), m.path_of(key),
                      "no other key in measured beside \"oom\": true (a run that ran out of memory has no step time and no "
                      "peaks; where it ran out belongs in stack.details.oom)",
                      describe_json(value));
  }
  m.finish();
}

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
    r.cpu_steal_fraction = p.optional_number("cpu_steal_fraction", FRACTION);
    // The rest of the provenance is kept as it is (who ran it, where, with which versions).
    for (const auto& [key, value] : p.json().items()) {
      if (key != "gpu" && key != "gpus" && key != "cpu_steal_fraction") p.raw(key);
    }
    p.finish();
  }
  r.model_path = beside(directory, root.string("model"), root, "model");
  // The calibration of the host the run ran on, when the run carries one (a profile JSON beside it):
  // validate costs the run there unless --hw says otherwise (reports/validation/README.md, "Launches").
  if (auto profile = root.optional_string("profile")) r.profile_path = beside(directory, *profile, root, "profile");
  // The capture of the run's layer, when the run carries one: validate predicts the run from it, as
  // `--capture FILE` predicts every run. Checked here to be there; read when the run is predicted.
  if (auto capture = root.optional_string("capture")) {
    r.capture_path = beside(directory, *capture, root, "capture");
    std::error_code ec;
    if (!fs::is_regular_file(*r.capture_path, ec)) {
      const bool exists = fs::exists(*r.capture_path, ec);
      throw ConfigError(doc.source, "capture", "a capture beside the measured run (trainsim_capture's JSON, workloads/capture/SCHEMA.md)",
                        "\"" + *capture + "\" (" + (exists ? "not a regular file" : "no such file") + ")");
    }
  }
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
  // The model file through the strict reader (a readable regular file of bounded size, valid JSON):
  // its errors name the file and exit 2, as the model loader's would.
  r.configuration = nlohmann::json{{"model", parse_json_file(r.model_path).json},
                                   {"strategy", strategy},
                                   {"stack", r.stack},
                                   {"layers_per_stage", r.layers_per_stage}}
                        .dump();
  if (auto ms = root.optional_object("machine_storage")) {
    const NumberRange gbps{0.0, 1e4, false, "GB/s in (0, 1e4]"};
    MachineStorage storage;
    storage.read_GBps = ms->number("read_GBps", gbps);
    storage.write_GBps = ms->number("write_GBps", gbps);
    const auto mixed_read = ms->optional_number("mixed_read_GBps", gbps);
    const auto mixed_write = ms->optional_number("mixed_write_GBps", gbps);
    if (mixed_read.has_value() != mixed_write.has_value()) {
      throw ConfigError(doc.source, ms->path_of(mixed_read ? "mixed_write_GBps" : "mixed_read_GBps"),
                        "mixed_read_GBps and mixed_write_GBps together (one storage_mixed bench), or neither",
                        "only " + ms->path_of(mixed_read ? "mixed_read_GBps" : "mixed_write_GBps"));
    }
    storage.mixed_read_GBps = mixed_read.value_or(0.0);
    storage.mixed_write_GBps = mixed_write.value_or(0.0);
    storage.source = ms->string("source");
    if (storage.source.empty()) {
      throw ConfigError(doc.source, ms->path_of("source"), "where the figures were measured (a non-empty string)", "\"\"");
    }
    ms->finish();
    r.machine_storage = storage;
  }
  {
    StrictObject m = root.object("measured");
    r.oom = m.optional_boolean("oom");
    if (ran_out_of_memory(r)) read_out_of_memory(m, r);
    else read_step(m, r, directory);
  }
  root.finish();
  return r;
}

MeasuredRun measured_run_from_trace(const std::string& trace_path, const std::string& sidecar, const std::string& model_flag) {
  MeasuredRun r;
  r.from_trace = true;
  r.trace_path = trace_path;
  r.path = trace_path;
  r.name = fs::path(trace_path).filename().string();
  for (const char* suffix : {".gz", ".json", ".trace"}) {
    if (r.name.ends_with(suffix)) r.name.erase(r.name.size() - std::string(suffix).size());
  }
  if (sidecar.empty()) {
    if (model_flag.empty()) {
      throw ConfigError("--measured", "--measured",
                        "with a profiler trace, --sidecar FILE or --model (and the strategy flags) saying what it ran",
                        "\"" + trace_path + "\" alone");
    }
    return r;
  }
  const JsonDocument doc = parse_measured_json(sidecar);
  StrictObject root(doc.json, doc.source, "");
  const auto version = root.integer("schema_version", 1, 1000);
  if (version != 1) throw ConfigError(doc.source, "schema_version", "schema version 1", std::to_string(version));
  const std::string kind = root.string("kind");
  if (kind != "trainsim.trace_sidecar") throw ConfigError(doc.source, "kind", "\"trainsim.trace_sidecar\"", "\"" + kind + "\"");
  const std::string directory = fs::path(sidecar).parent_path().string();
  if (auto name = root.optional_string("name")) r.name = *name;
  r.model_path = beside(directory, root.string("model"), root, "model");
  r.gpu = root.optional_string("gpu").value_or("");
  r.gpus = static_cast<int>(root.optional_integer("gpus", 1, 1 << 20).value_or(1));
  const nlohmann::json& strategy = root.raw("strategy");
  if (!strategy.is_object()) throw ConfigError(doc.source, "strategy", "an object (a trainsim strategy)", describe_json(strategy));
  r.strategy = wl::strategy_from_json(JsonDocument{strategy, doc.source + " (key strategy)"});
  if (root.has("stack")) {
    StrictObject st = root.object("stack");
    r.stack = st.string("name");
    wl::TrainingStack stack;
    stack.kind = stack_kind(st, r.stack);
    if (auto b = st.optional_boolean("gradient_as_bucket_view")) stack.gradient_as_bucket_view = *b;
    st.finish();
    r.strategy.stack.set(stack, doc.source + ": stack");
  }
  if (root.has("peak_allocated_bytes")) r.peak_allocated_bytes = root.numbers("peak_allocated_bytes", BYTES);
  if (root.has("peak_reserved_bytes")) r.peak_reserved_bytes = root.numbers("peak_reserved_bytes", BYTES);
  root.finish();
  return r;
}

bool is_measured_run_file(const std::string& path) {
  const std::string text = read_input_file(path);
  const MeasuredFileKind found = measured_file_kind(text);
  // Text that is not JSON is refused, naming the file and where, as the strict reader says it.
  if (!found.json) parse_json_text(text, path, MEASURED_JSON_LIMITS);
  return found.kind == "trainsim.measured_run";
}

MeasuredRun load_measured_run(const std::string& path) {
  const JsonDocument doc = parse_measured_json(path);
  return measured_run_from_json(doc, fs::path(path).parent_path().string());
}

}  // namespace trainsim::planner
