#include "part_store.hpp"

#include <filesystem>

#include "atomic_file.hpp"
#include "config_error.hpp"
#include "errors.hpp"
#include "strict_json.hpp"

namespace trainsim::calibrate {
namespace {

namespace fs = std::filesystem;

std::optional<nlohmann::json> read_if_there(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    return parse_json_file(path).json;
  } catch (const ConfigError& e) {
    throw UsageError("--resume", "the part files trainsim-calibrate wrote", e.what());
  }
}

}  // namespace

PartStore::PartStore(std::string out_dir) : out_dir_(std::move(out_dir)) {}

bool PartStore::exists() const {
  std::error_code ec;
  return fs::exists(dir(), ec);
}

void PartStore::make_dirs() const {
  std::error_code ec;
  fs::create_directories(framework_dir(), ec);
  if (ec) throw CalibrationError("cannot create " + framework_dir() + ": " + ec.message());
}

void PartStore::record_arguments(const std::vector<std::string>& arguments) const {
  make_dirs();
  nlohmann::ordered_json j{{"schema_version", 1}, {"kind", "trainsim.calibrate_run"}, {"arguments", arguments}};
  write_out_dir(dir(), {{"run.json", j.dump(1) + "\n"}});
}

std::vector<std::string> PartStore::recorded_arguments(const std::string& out_dir) {
  const std::string path = out_dir + "/parts/run.json";
  const auto j = read_if_there(path);
  if (!j) throw UsageError("--resume", "the --out DIR of an earlier run (with parts/run.json)", "\"" + out_dir + "\"");
  if (!j->is_object() || !j->contains("arguments") || !(*j)["arguments"].is_array()) {
    throw UsageError("--resume", "parts/run.json with \"arguments\"", "\"" + path + "\"");
  }
  std::vector<std::string> args;
  for (const auto& a : (*j)["arguments"]) {
    if (!a.is_string()) throw UsageError("--resume", "parts/run.json arguments as strings", describe_json(a));
    args.push_back(a.get<std::string>());
  }
  return args;
}

void PartStore::save(const std::string& part, const StoredPart& stored) const {
  make_dirs();
  Results r(false);
  for (const auto& m : stored.measurements) r.add(m);
  nlohmann::ordered_json j{{"schema_version", 1},  {"kind", "trainsim.calibrate_part"}, {"part", part},
                           {"level", stored.level}, {"seconds", stored.seconds},        {"measurements", r.to_json()},
                           {"notes", stored.notes}};
  write_out_dir(dir(), {{part + ".json", j.dump(1) + "\n"}});
}

std::optional<StoredPart> PartStore::load(const std::string& part, int level) const {
  const std::string path = dir() + "/" + part + ".json";
  const auto j = read_if_there(path);
  if (!j) return std::nullopt;
  try {
    StoredPart s;
    s.level = j->at("level").get<int>();
    if (s.level < level) return std::nullopt;
    s.seconds = j->at("seconds").get<double>();
    Results r(false);
    add_measurements(r, j->at("measurements"), path + ": measurements");
    s.measurements = r.all();
    s.notes = j->at("notes").get<std::vector<std::string>>();
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError("--resume", "the part files trainsim-calibrate wrote", "\"" + path + "\": " + e.what());
  }
}

std::optional<nlohmann::ordered_json> PartStore::load_framework(const std::string& part, int sizes) const {
  const std::string path = framework_dir() + "/" + part + ".json";
  const auto j = read_if_there(path);
  if (!j) return std::nullopt;
  if (!j->is_object() || !j->contains("sizes") || !(*j)["sizes"].is_number_integer() || !j->contains("records")) {
    throw UsageError("--resume", "framework part files the driver wrote (with sizes and records)", "\"" + path + "\"");
  }
  if ((*j)["sizes"].get<int>() < sizes) return std::nullopt;
  return nlohmann::ordered_json::parse(j->dump());
}

}  // namespace trainsim::calibrate
