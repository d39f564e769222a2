#include "profile_loader.hpp"

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace trainsim::hw {
namespace {

TEST(ProfileLoader, EveryBuiltInProfileLoadsAndNamesItsSources) {
  const auto names = builtin_profile_names();
  for (const char* expected : {"dgx2", "zhores", "v100-workstation", "dgx-a100", "dgx-h100"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const auto& name : names) {
    const ClusterProfile p = builtin_profile(name);
    EXPECT_EQ(p.name, name);
    for (const std::string* source : {&p.gpu.source, &p.intra_node.source, &p.pcie.source, &p.host.source,
                                      &p.storage.source, &p.nic.source, &p.inter_node.source, &p.cost.source}) {
      EXPECT_GT(source->size(), 10u) << name << ": every section cites where its figures come from";
    }
  }
}

TEST(ProfileLoader, Dgx2MatchesTheSeedsTable) {
  // ZeRO-Infinity's DGX-2 table (seeds): 16 GPUs x 32 GB = 0.5 TB, 1.5 TB CPU, 28 TB NVMe (TiB),
  // 12 GB/s CPU-GPU for one GPU, 3.0 GB/s per GPU with 16, 1.6 GB/s NVMe per GPU with 16.
  const ClusterProfile p = builtin_profile("dgx2");
  EXPECT_EQ(p.gpus_per_node(), 16);
  EXPECT_DOUBLE_EQ(p.gpu.memory_GiB * p.gpus_per_node(), 512.0);
  EXPECT_DOUBLE_EQ(p.host.memory_GiB, 1536.0);
  // 8 x 3.84 TB = 30.72 TB = 27.94 TiB; the table prints 28.0 (TB), within 0.1.
  EXPECT_NEAR(p.storage_capacity_bytes() / 1099511627776.0, 28.0, 0.1);
  EXPECT_DOUBLE_EQ(p.pcie.link_GBps, 12.0);
  EXPECT_DOUBLE_EQ(p.pcie.host_aggregate_GBps / p.gpus_per_node(), 3.0);
  EXPECT_DOUBLE_EQ(p.storage.read_GBps * p.storage.count / p.gpus_per_node(), 1.6);
  EXPECT_EQ(p.nic.count, 8);
  EXPECT_DOUBLE_EQ(p.nic.link_Gbps, 100.0);
}

TEST(ProfileLoader, RoundTripsThroughItsJsonForm) {
  for (const auto& name : builtin_profile_names()) {
    const ClusterProfile p = builtin_profile(name);
    const JsonDocument doc{nlohmann::json::parse(profile_to_json(p).dump()), "roundtrip.json"};
    const ClusterProfile q = load_profile(doc);
    EXPECT_EQ(profile_to_json(q).dump(), profile_to_json(p).dump()) << name;
  }
}

// Each way a profile can be wrong has its own message naming the file and the key.
struct BadProfileCase {
  const char* what;
  void (*mutate)(nlohmann::json&);
  const char* key_path;
  const char* message_part;
};

class BadProfile : public ::testing::TestWithParam<BadProfileCase> {};

TEST_P(BadProfile, IsAConfigErrorNamingFileAndKey) {
  nlohmann::json j = test::read_source_json("hwprofiles/dgx2.json");
  GetParam().mutate(j);
  test::ScratchDir dir;
  const std::string path = dir.write("bad.json", j.dump());
  try {
    load_profile_file(path);
    FAIL() << GetParam().what << ": expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.source(), path);
    EXPECT_EQ(e.key_path(), GetParam().key_path) << e.what();
    EXPECT_NE(std::string(e.what()).find(GetParam().message_part), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadProfile,
    ::testing::Values(
        BadProfileCase{"unknown key", [](nlohmann::json& j) { j["gpu"]["colour"] = "green"; }, "gpu.colour",
                       "unknown key"},
        BadProfileCase{"missing unit",
                       [](nlohmann::json& j) {
                         j["intra_node"].erase("link_GBps");
                         j["intra_node"]["link"] = 150;
                       },
                       "intra_node.link_GBps", "expected a number in [0.01, 100000] (GB/s), got nothing"},
        BadProfileCase{"wrong unit",
                       [](nlohmann::json& j) {
                         j["host"]["memory_GB"] = 1536;
                       },
                       "host.memory_GB", "the unit this schema uses"},
        BadProfileCase{"negative bandwidth", [](nlohmann::json& j) { j["pcie"]["link_GBps"] = -12; },
                       "pcie.link_GBps", "expected a number in [0.01, 10000] (GB/s), got -12"},
        BadProfileCase{"wrong type", [](nlohmann::json& j) { j["gpu"]["count_per_node"] = "sixteen"; },
                       "gpu.count_per_node", "expected an integer in [1, 1024], got \"sixteen\""},
        BadProfileCase{"unknown fabric", [](nlohmann::json& j) { j["intra_node"]["fabric"] = "ethernet"; },
                       "intra_node.fabric", "one of \"nvswitch\", \"nvlink_mesh\", \"pcie_only\""},
        BadProfileCase{"switch sharing", [](nlohmann::json& j) { j["pcie"]["gpus_per_switch"] = 3; },
                       "pcie.gpus_per_switch", "a divisor of gpu.count_per_node (16)"},
        BadProfileCase{"schema version", [](nlohmann::json& j) { j["schema_version"] = 7; }, "schema_version",
                       "schema version 1"},
        BadProfileCase{"missing section", [](nlohmann::json& j) { j.erase("storage"); }, "storage",
                       "expected an object"},
        BadProfileCase{"mixed storage figure alone", [](nlohmann::json& j) { j["storage"]["mixed_read_GBps"] = 1.1; },
                       "storage.mixed_write_GBps", "together (both measured by one bench), or neither"},
        BadProfileCase{"mixed storage figure out of range",
                       [](nlohmann::json& j) {
                         j["storage"]["mixed_read_GBps"] = 0;
                         j["storage"]["mixed_write_GBps"] = 1.1;
                       },
                       "storage.mixed_read_GBps", "expected a number in [0.001, 10000] (GB/s), got 0"},
        // The table of products timed inside steps has the entries and ranges of the GEMM table.
        BadProfileCase{"in-step GEMM efficiency out of range",
                       [](nlohmann::json& j) {
                         j["calibration"]["gemm_in_step"] = {
                             {"products", {{{"precision", "bf16"}, {"m", 2048}, {"n", 4096}, {"k", 4096}, {"efficiency", 2.5}}}},
                             {"source", "test"}};
                       },
                       "calibration.gemm_in_step.products[0].efficiency", "(fraction of peak), got 2.5"},
        BadProfileCase{"unknown key in an in-step GEMM entry",
                       [](nlohmann::json& j) {
                         j["calibration"]["gemm_in_step"] = {
                             {"products",
                              {{{"precision", "bf16"}, {"m", 2048}, {"n", 4096}, {"k", 4096}, {"efficiency", 0.8}, {"tflops", 790}}}},
                             {"source", "test"}};
                       },
                       "calibration.gemm_in_step.products[0].tflops", "unknown key"},
        BadProfileCase{"in-step GEMM table without its source",
                       [](nlohmann::json& j) {
                         j["calibration"]["gemm_in_step"] = {
                             {"products", {{{"precision", "bf16"}, {"m", 2048}, {"n", 4096}, {"k", 4096}, {"efficiency", 0.8}}}}};
                       },
                       "calibration.gemm_in_step.source", "expected a string"},
        // The NCCL a profile names must be one whose tuning tables the replay carries.
        BadProfileCase{"NCCL release without its tables",
                       [](nlohmann::json& j) {
                         j["nccl"] = {{"version", "2.11.4"}, {"gpu_arch", "sm70"}, {"cpu_vendor", "intel"}, {"source", "test"}};
                       },
                       "nccl.version", "\"2.12\" or \"2.12.<patch>\""},
        BadProfileCase{"NCCL version with text after the patch",
                       [](nlohmann::json& j) {
                         j["nccl"] = {{"version", "2.12.10-1"}, {"gpu_arch", "sm70"}, {"cpu_vendor", "intel"}, {"source", "test"}};
                       },
                       "nccl.version", "got \"2.12.10-1\""},
        BadProfileCase{"unknown GPU architecture for NCCL",
                       [](nlohmann::json& j) {
                         j["nccl"] = {{"version", "2.12"}, {"gpu_arch", "volta"}, {"cpu_vendor", "intel"}, {"source", "test"}};
                       },
                       "nccl.gpu_arch", "one of \"sm70\", \"sm80\", \"sm90\""},
        BadProfileCase{"unknown CPU vendor for NCCL",
                       [](nlohmann::json& j) {
                         j["nccl"] = {{"version", "2.12"}, {"gpu_arch", "sm70"}, {"cpu_vendor", "ibm"}, {"source", "test"}};
                       },
                       "nccl.cpu_vendor", "one of \"intel\", \"amd\", \"other\""},
        BadProfileCase{"unknown key in the NCCL section",
                       [](nlohmann::json& j) {
                         j["nccl"] = {{"version", "2.12"}, {"gpu_arch", "sm70"}, {"cpu_vendor", "intel"}, {"source", "test"},
                                      {"channels", 8}};
                       },
                       "nccl.channels", "unknown key"}));

// The NCCL section (hwprofiles/README.md): read, kept through the JSON form; absent from the
// profiles that do not name their NCCL.
TEST(ProfileLoader, NcclSectionIsReadAndRoundTrips) {
  const ClusterProfile p = builtin_profile("ndm-a100-v4");
  ASSERT_TRUE(p.nccl.has_value());
  EXPECT_EQ(p.nccl->version, "2.12.10");
  EXPECT_EQ(p.nccl->gpu_sm, 80);
  EXPECT_EQ(p.nccl->cpu_vendor, NcclCpuVendor::AMD);
  const ClusterProfile q = load_profile(JsonDocument{nlohmann::json::parse(profile_to_json(p).dump()), "roundtrip.json"});
  ASSERT_TRUE(q.nccl.has_value());
  EXPECT_EQ(q.nccl->version, "2.12.10");
  EXPECT_EQ(q.nccl->gpu_sm, 80);
  EXPECT_EQ(q.nccl->cpu_vendor, NcclCpuVendor::AMD);
  EXPECT_FALSE(builtin_profile("dgx2").nccl.has_value());
}

// The mixed read+write figure (hwprofiles/README.md): read, kept through the JSON form.
TEST(ProfileLoader, MixedStorageFigureIsReadAndRoundTrips) {
  nlohmann::json j = test::read_source_json("hwprofiles/dgx2.json");
  j["storage"]["mixed_read_GBps"] = 1.1;
  j["storage"]["mixed_write_GBps"] = 1.2;
  const ClusterProfile p = load_profile(JsonDocument{j, "mixed.json"});
  EXPECT_DOUBLE_EQ(p.storage.mixed_read_GBps, 1.1);
  EXPECT_DOUBLE_EQ(p.storage.mixed_write_GBps, 1.2);
  const ClusterProfile q = load_profile(JsonDocument{nlohmann::json::parse(profile_to_json(p).dump()), "roundtrip.json"});
  EXPECT_DOUBLE_EQ(q.storage.mixed_write_GBps, 1.2);
  EXPECT_DOUBLE_EQ(builtin_profile("dgx2").storage.mixed_read_GBps, 0.0);
}

TEST(ProfileLoader, MissingUnitKeyIsReportedWhenTheRightKeyIsOptional) {
  // A "link" key beside an existing link_GBps is an unknown key whose message suggests the unit.
  nlohmann::json j = test::read_source_json("hwprofiles/dgx2.json");
  j["nic"]["latency"] = 2;
  test::ScratchDir dir;
  const std::string path = dir.write("bad.json", j.dump());
  try {
    load_profile_file(path);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key_path(), "nic.latency");
    EXPECT_NE(std::string(e.what()).find("a unit in the key name: \"latency_us\""), std::string::npos) << e.what();
  }
}

TEST(ProfileLoader, UnknownBuiltInNameListsTheChoices) {
  try {
    resolve_profile("dgx3");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.source(), "--hw");
    EXPECT_NE(std::string(e.what()).find("\"dgx2\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trainsim::hw
