// Fuzzes the cluster-profile loader (hwprofiles/profile_loader.cpp) through the strict parser.
// An accepted profile must survive its own JSON form unchanged and give finite capacities.
#include "fuzz_common.hpp"
#include "profile_loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  return fuzz::guarded([&] {
    const hw::ClusterProfile p = hw::load_profile(parse_json_text(fuzz::as_text(data, size), "fuzz.json"));
    fuzz::expect_quantity("gpu usable bytes", p.gpu_usable_bytes());
    fuzz::expect_quantity("host memory bytes", p.host_memory_bytes());
    fuzz::expect_quantity("storage capacity bytes", p.storage_capacity_bytes());
    const std::string again = hw::profile_to_json(p).dump();
    const hw::ClusterProfile q = hw::load_profile(parse_json_text(again, "roundtrip.json"));
    if (hw::profile_to_json(q).dump() != again) fuzz::violated("profile round trip differs", 0);
  });
}
