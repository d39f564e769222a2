// Every number of a profile has a physical range: each row of the table is enforced by the
// loader (a value just outside is a ConfigError naming the key, the value at the bound loads),
// and hwprofiles/README.md prints exactly the table the loader uses.
#include "profile_ranges.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>

#include "profile_loader.hpp"
#include "test_support.hpp"

namespace trainsim::hw {
namespace {

// Where each row's key lives in a profile that has every section (the measured profile has the
// calibration tables as well).
const std::map<std::string, std::string>& pointers() {
  static const std::map<std::string, std::string> p = {
      {"node_count", "/node_count"},
      {"gpu.count_per_node", "/gpu/count_per_node"},
      {"gpu.memory_GiB", "/gpu/memory_GiB"},
      {"gpu.reserved_GiB", "/gpu/reserved_GiB"},
      {"gpu.peak_TFLOPs", "/gpu/peak_TFLOPs/bf16"},
      {"gpu.hbm_GBps", "/gpu/hbm_GBps"},
      {"intra_node.link_GBps", "/intra_node/link_GBps"},
      {"intra_node.latency_us", "/intra_node/latency_us"},
      {"pcie.link_GBps", "/pcie/link_GBps"},
      {"pcie.latency_us", "/pcie/latency_us"},
      {"pcie.gpus_per_switch", "/pcie/gpus_per_switch"},
      {"pcie.switch_uplink_GBps", "/pcie/switch_uplink_GBps"},
      {"pcie.host_aggregate_GBps", "/pcie/host_aggregate_GBps"},
      {"host.sockets", "/host/sockets"},
      {"host.cores", "/host/cores"},
      {"host.memory_GiB", "/host/memory_GiB"},
      {"host.memory_GBps", "/host/memory_GBps"},
      {"storage.count", "/storage/count"},
      {"storage.capacity_TB", "/storage/capacity_TB"},
      {"storage.read_GBps", "/storage/read_GBps"},
      {"storage.write_GBps", "/storage/write_GBps"},
      {"storage.mixed_read_GBps", "/storage/mixed_read_GBps"},
      {"storage.mixed_write_GBps", "/storage/mixed_write_GBps"},
      {"nic.count", "/nic/count"},
      {"nic.link_Gbps", "/nic/link_Gbps"},
      {"nic.latency_us", "/nic/latency_us"},
      {"inter_node.oversubscription", "/inter_node/oversubscription"},
      {"inter_node.latency_us", "/inter_node/latency_us"},
      {"cost.price_per_gpu_hour_usd", "/cost/price_per_gpu_hour_usd"},
      {"cost.power_per_node_kW", "/cost/power_per_node_kW"},
      {"calibration.gemm.m", "/calibration/gemm/0/m"},
      {"calibration.gemm.efficiency", "/calibration/gemm/0/efficiency"},
      {"calibration.curve.group_size", "/calibration/collectives/0/group_size"},
      {"calibration.curve.bytes", "/calibration/copies/0/points/0/bytes"},
      {"calibration.curve.GBps", "/calibration/kernels/0/points/0/GBps"},
      {"calibration.cpu_adam_params_per_s", "/calibration/cpu_adam_params_per_s"},
  };
  return p;
}

// The measured profile, made multi-node so NIC and fabric rows are checked as they matter.
nlohmann::json full_profile() {
  nlohmann::json j = test::read_source_json("hwprofiles/h200x2-measured.json");
  j["node_count"] = 4;
  j["inter_node"]["topology"] = "fat_tree";
  j["nic"]["count"] = 2;
  j["nic"]["link_Gbps"] = 400;
  return j;
}

std::string load_error(const nlohmann::json& j) {
  test::ScratchDir dir;
  try {
    load_profile_file(dir.write("p.json", j.dump()));
  } catch (const ConfigError& e) {
    return e.key_path() + ": " + e.what();
  }
  return "";
}

TEST(ProfileRanges, EveryRowIsEnforcedAtBothEnds) {
  for (const auto& row : profile_quantity_ranges()) {
    SCOPED_TRACE(std::string(row.key));
    ASSERT_EQ(pointers().count(std::string(row.key)), 1u) << "no profile location for this row";
    const nlohmann::json::json_pointer at(pointers().at(std::string(row.key)));
    const std::string key_path = std::string(row.key).find("calibration.") == 0 ? "" : std::string(row.key);
    // Just beyond the top.
    nlohmann::json above = full_profile();
    above[at] = row.integer ? nlohmann::json(static_cast<std::int64_t>(row.max) + 1) : nlohmann::json(row.max * 1.5);
    const std::string e1 = load_error(above);
    EXPECT_NE(e1.find("expected a"), std::string::npos) << e1;
    if (!key_path.empty()) {
      EXPECT_EQ(e1.rfind(key_path, 0), 0u) << e1;
    }
    // Just below the bottom (or at it, when it is excluded).
    nlohmann::json below = full_profile();
    const double low = row.integer ? row.min - 1 : (row.min_inclusive ? (row.min == 0 ? -1e-9 : row.min * 0.5) : row.min);
    below[at] = row.integer ? nlohmann::json(static_cast<std::int64_t>(low)) : nlohmann::json(low);
    const std::string e2 = load_error(below);
    EXPECT_NE(e2.find("expected a"), std::string::npos) << e2;
  }
}

TEST(ProfileRanges, AGpuOf1e10GiBAndALinkOf1e300AreRefusedNamingTheRange) {
  nlohmann::json j = full_profile();
  j["gpu"]["memory_GiB"] = 1e10;
  EXPECT_NE(load_error(j).find("gpu.memory_GiB: expected a number in (0, 16384] (GiB), got 10000000000.0"),
            std::string::npos)
      << load_error(j);
  j = full_profile();
  j["intra_node"]["link_GBps"] = 1e-300;
  EXPECT_NE(load_error(j).find("intra_node.link_GBps: expected a number in [0.01, 100000] (GB/s)"), std::string::npos)
      << load_error(j);
}

TEST(ProfileRanges, EveryBuiltInProfileIsInsideTheTable) {
  for (const auto& name : builtin_profile_names()) EXPECT_NO_THROW(builtin_profile(name)) << name;
}

TEST(ProfileRanges, TheReadmeTableIsTheLoadersTable) {
  std::ifstream in(test::source_path("hwprofiles/README.md"));
  std::map<std::string, std::string> readme;  // key -> range text
  const std::regex row(R"(^\| `([A-Za-z_.]+)` \| (.+) \|$)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, row) && m[2].str().rfind("a number", 0) == 0) readme[m[1]] = m[2];
    if (std::regex_match(line, m, row) && m[2].str().rfind("an integer", 0) == 0) readme[m[1]] = m[2];
  }
  for (const auto& r : profile_quantity_ranges()) {
    ASSERT_EQ(readme.count(std::string(r.key)), 1u) << r.key << " is missing from the README's range table";
    EXPECT_EQ(readme[std::string(r.key)], range_text(r)) << r.key;
  }
  EXPECT_EQ(readme.size(), profile_quantity_ranges().size()) << "the README lists a range the loader does not have";
}

}  // namespace
}  // namespace trainsim::hw
