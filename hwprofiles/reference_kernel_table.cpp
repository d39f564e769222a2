#include "reference_kernel_table.hpp"

#include <algorithm>
#include <iterator>
#include <string>

namespace trainsim::hw {

void read_reference_kernels(StrictObject o, Calibration& cal) {
  const NumberRange bytes{1.0, 1e15, true, "a number in [1, 1e15] (bytes one launch reads and writes)"};
  const NumberRange rate{1e-3, 1e5, true, "a number in [0.001, 1e5] (GB/s)"};
  std::string classes;
  for (std::string_view c : REFERENCE_KERNEL_CLASSES) classes += (classes.empty() ? "" : ", ") + std::string(c);
  for (StrictObject c : o.objects("curves")) {
    BandwidthCurve curve;
    curve.what = c.string("what");
    if (std::find(std::begin(REFERENCE_KERNEL_CLASSES), std::end(REFERENCE_KERNEL_CLASSES), curve.what) ==
        std::end(REFERENCE_KERNEL_CLASSES)) {
      throw ConfigError(c.source(), c.path_of("what"), "one of " + classes, "\"" + curve.what + "\"");
    }
    for (const BandwidthCurve& seen : cal.reference_kernels) {
      if (seen.what == curve.what) {
        throw ConfigError(c.source(), c.path_of("what"), "each class once", "\"" + curve.what + "\" again");
      }
    }
    double previous = 0;
    for (StrictObject p : c.objects("points")) {
      CurvePoint point{p.number("bytes", bytes), p.number("GBps", rate)};
      if (point.bytes <= previous) {
        throw ConfigError(p.source(), p.path_of("bytes"), "sizes in strictly ascending order", std::to_string(point.bytes));
      }
      previous = point.bytes;
      p.finish();
      curve.points.push_back(point);
    }
    c.finish();
    cal.reference_kernels.push_back(std::move(curve));
  }
  cal.reference_kernels_source = o.string("source");
  o.finish();
}

nlohmann::ordered_json reference_kernels_to_json(const Calibration& c) {
  nlohmann::ordered_json curves = nlohmann::ordered_json::array();
  for (const BandwidthCurve& k : c.reference_kernels) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const CurvePoint& p : k.points) points.push_back({{"bytes", p.bytes}, {"GBps", p.value}});
    curves.push_back({{"what", k.what}, {"points", points}});
  }
  return {{"curves", curves}, {"source", c.reference_kernels_source}};
}

}  // namespace trainsim::hw
