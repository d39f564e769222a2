#include "results.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "errors.hpp"
#include "strict_json.hpp"

namespace trainsim::calibrate {
namespace {

// A field of raw_results.json of the type trainsim-calibrate writes, or a usage error naming it
// (a number written as a string was an internal error, exit 1).
const nlohmann::json& field(const nlohmann::json& o, const std::string& where, const char* key) {
  if (!o.is_object() || !o.contains(key)) {
    throw UsageError("rebuild", "a raw_results.json with " + where + "." + key, "none");
  }
  return o[key];
}

std::string text_of(const nlohmann::json& o, const std::string& where, const char* key) {
  const nlohmann::json& v = field(o, where, key);
  if (!v.is_string()) throw UsageError("rebuild", where + "." + key + " a string", describe_json(v));
  return v.get<std::string>();
}

double number_of(const nlohmann::json& o, const std::string& where, const char* key) {
  const nlohmann::json& v = field(o, where, key);
  if (!v.is_number() || !std::isfinite(v.get<double>())) {
    throw UsageError("rebuild", where + "." + key + " a finite number", describe_json(v));
  }
  return v.get<double>();
}

}  // namespace


void Results::add(Measurement m) {
  if (verbose_) {
    std::printf("  %-10s %-16s %-52s %12.4g %-12s [%.4g .. %.4g]\n", m.bench.c_str(), m.what.c_str(),
                m.params.dump().substr(0, 52).c_str(), m.stats.median, m.unit.c_str(), m.stats.min, m.stats.max);
    std::fflush(stdout);
  }
  measurements_.push_back(std::move(m));
}

void Results::note(std::string text) {
  if (verbose_) {
    std::printf("  note: %s\n", text.c_str());
    std::fflush(stdout);
  }
  notes_.push_back(std::move(text));
}

std::vector<const Measurement*> Results::select(std::string_view bench, std::string_view what) const {
  std::vector<const Measurement*> out;
  for (const auto& m : measurements_) {
    if (m.bench == bench && m.what == what) out.push_back(&m);
  }
  return out;
}

const Measurement* Results::find(std::string_view bench, std::string_view what,
                                 const std::function<bool(const nlohmann::ordered_json&)>& match) const {
  for (const auto& m : measurements_) {
    if (m.bench == bench && m.what == what && match(m.params)) return &m;
  }
  return nullptr;
}

nlohmann::ordered_json Results::to_json() const {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& m : measurements_) {
    list.push_back({{"bench", m.bench},
                    {"what", m.what},
                    {"params", m.params},
                    {"unit", m.unit},
                    {"stats", calibrate::to_json(m.stats)},
                    {"check", m.check}});
  }
  return list;
}

void add_measurements(Results& r, const nlohmann::json& all, const std::string& where_all) {
  if (!all.is_array()) throw UsageError("rebuild", where_all + " an array", describe_json(all));
  for (std::size_t i = 0; i < all.size(); ++i) {
    const nlohmann::json& m = all[i];
    const std::string where = where_all + "[" + std::to_string(i) + "]";
    const nlohmann::json& s = field(m, where, "stats");
    const std::string sw = where + ".stats";
    const double n = number_of(s, sw, "n");
    if (n < 0 || n > 1e9 || n != std::floor(n)) throw UsageError("rebuild", sw + ".n a whole number of samples", describe_json(s["n"]));
    r.add({text_of(m, where, "bench"), text_of(m, where, "what"), nlohmann::ordered_json(field(m, where, "params")),
           text_of(m, where, "unit"),
           Stats{number_of(s, sw, "median"), number_of(s, sw, "min"), number_of(s, sw, "max"), number_of(s, sw, "q1"),
                 number_of(s, sw, "q3"), static_cast<int>(n)},
           text_of(m, where, "check")});
  }
}

double param_number(const nlohmann::ordered_json& params, const char* key) {
  const auto it = params.find(key);
  if (it == params.end() || !it->is_number()) {
    throw std::logic_error(std::string("measurement params lack numeric key ") + key);
  }
  return it->get<double>();
}

}  // namespace trainsim::calibrate
