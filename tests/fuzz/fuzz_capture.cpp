// Fuzzes the trainsim.capture loader (workloads/capture_document.cpp), then the costing and a
// scaling of an accepted capture: every accepted document must cost to finite, non-negative work.
#include "capture_scale.hpp"
#include "captured_layer_cost.hpp"
#include "fuzz_common.hpp"

namespace {
void expect_pass(const trainsim::wl::PassCost& p) {
  trainsim::fuzz::expect_quantity("pass flops", p.flops());
  trainsim::fuzz::expect_quantity("pass bytes", p.bytes());
  trainsim::fuzz::expect_quantity("pass launches", p.launches);
}
}  // namespace

using trainsim::wl::SymbolValues;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  return fuzz::guarded([&] {
    const wl::CaptureDocument doc = wl::load_capture_json(parse_json_text(fuzz::as_text(data, size), "capture.json"));
    for (std::int64_t tp : {1, 2}) {
      try {
        const wl::CapturedCosts c = wl::captured_costs(doc, tp);
        for (const auto& [kind, l] : c.layers) {
          expect_pass(l.cost.forward);
          expect_pass(l.cost.backward);
          expect_pass(l.recompute);
        }
        expect_pass(c.embedding.forward);
        expect_pass(c.head.backward);
      } catch (const ConfigError&) {
        // tp = 2 where the capture's heads or widths are odd: a refusal.
      }
    }
    if (doc.scalable) {
      SymbolValues twice;
      for (const auto& s : doc.symbol_space->independent) twice[s] = doc.symbols.at(s) * 2;
      wl::scale_capture(doc, twice);
    }
  });
}
