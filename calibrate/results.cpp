#include "results.hpp"

#include <cstdio>
#include <stdexcept>

namespace trainsim::calibrate {

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

double param_number(const nlohmann::ordered_json& params, const char* key) {
  const auto it = params.find(key);
  if (it == params.end() || !it->is_number()) {
    throw std::logic_error(std::string("measurement params lack numeric key ") + key);
  }
  return it->get<double>();
}

}  // namespace trainsim::calibrate
