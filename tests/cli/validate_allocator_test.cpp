// `trainsim validate --allocator-record`: the caching allocator's own record of a run replayed
// through trainsim's allocator model (planner/validate/allocator_record.hpp), and bad records (a
// clear error naming the file and the key; exit 2; nothing written).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <functional>
#include <string>
#include <vector>

#include "gzip_file.hpp"
#include "test_support.hpp"
#include "validate_cli_support.hpp"

namespace trainsim::test {
namespace {

using namespace validate_cli;

const std::string RECORD = "reports/validation/allocator/gpt/h200x2_ddp_L24-h1024_mb4x2.allocator.rank0.json.gz";

nlohmann::json committed_record() {
  return nlohmann::json::parse(read_maybe_gzipped(source_path(RECORD), "the committed record", std::size_t{64} << 20));
}

TEST(ValidateAllocator, ARecordReplaysToItsMeasuredReservedPeak) {
  const CommandResult r = run_trainsim("validate --allocator-record " + q(source_path(RECORD)) + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("kind"), "trainsim.allocator_replay");
  ASSERT_EQ(j.at("records").size(), 1u);
  const auto& rec = j.at("records")[0];
  EXPECT_EQ(rec.at("rank"), 0);
  EXPECT_EQ(rec.at("requests"), 15106);
  EXPECT_NEAR(rec.at("replayed_reserved_bytes").get<double>(), rec.at("measured_reserved_bytes").get<double>(),
              0.01 * rec.at("measured_reserved_bytes").get<double>());
}

TEST(ValidateAllocator, ExactlyOneOfMeasuredAndAllocatorRecord) {
  for (const std::string& args : std::vector<std::string>{"validate", "validate --measured x --allocator-record y",
                                 "validate --allocator-record " + q(source_path(RECORD)) + " --no-trace"}) {
    const CommandResult r = run_trainsim(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.err.find("expected"), std::string::npos) << r.err;
  }
}

TEST(ValidateAllocator, BadRecordsNameFileAndKeyAndExit2) {
  const nlohmann::json good = committed_record();
  struct Case {
    const char* what;
    std::function<void(nlohmann::json&)> change;
    const char* key;
  };
  const std::vector<Case> cases = {
      {"another kind", [](nlohmann::json& j) { j["kind"] = "trainsim.measured_run"; }, "kind"},
      {"a key nobody reads", [](nlohmann::json& j) { j["measured"]["max_memory_reserverd"] = 1; }, "max_memory_reserverd"},
      {"arrays of different lengths", [](nlohmann::json& j) { j["events"]["addr"].erase(0); }, "events.addr"},
      {"an action code beyond the names", [](nlohmann::json& j) { j["events"]["action"][0] = 99; }, "events.action"},
      {"a negative size", [](nlohmann::json& j) { j["events"]["size"][3] = -512; }, "events.size"},
      {"blocks not adding up to their segment",
       [](nlohmann::json& j) { j["segments_at_start"][0]["total_size"] = j["segments_at_start"][0]["total_size"].get<long long>() + 512; },
       "segments_at_start[0].blocks"},
      {"a free of an address never allocated",
       [](nlohmann::json& j) {
         auto& ev = j["events"];
         const auto actions = j["actions"];
         for (std::size_t i = 0; i < ev["action"].size(); ++i) {
           if (actions[ev["action"][i].get<std::size_t>()] == "free_completed") {
             ev["addr"][i] = 12345;
             break;
           }
         }
       },
       "events["},
      {"an allocation at an address still allocated",
       [](nlohmann::json& j) {
         auto& ev = j["events"];
         const auto actions = j["actions"];
         auto is = [&](std::size_t i, const char* what) { return actions[ev["action"][i].get<std::size_t>()] == what; };
         std::size_t first = 0;
         while (!is(first, "alloc")) ++first;
         for (std::size_t i = first + 1; i < ev["action"].size(); ++i) {
           if (is(i, "free_completed") && ev["addr"][i] == ev["addr"][first]) break;  // freed first: look no further
           if (is(i, "alloc")) {
             ev["addr"][i] = ev["addr"][first];
             break;
           }
         }
       },
       "still allocated"},
      {"no measured reserved peak", [](nlohmann::json& j) { j["measured"].erase("max_memory_reserved_timed"); }, "max_memory_reserved_timed"},
  };
  ScratchDir dir;
  for (const auto& c : cases) {
    nlohmann::json bad = good;
    c.change(bad);
    const std::string path = dir.write("bad.json", bad.dump());
    const std::string out = (dir.path() / "out.json").string();
    const CommandResult r = run_trainsim("validate --allocator-record " + q(path) + " --format json -o " + q(out));
    EXPECT_EQ(r.exit_code, 2) << c.what << ": " << r.err;
    EXPECT_NE(r.err.find(path), std::string::npos) << c.what << ": " << r.err;
    EXPECT_NE(r.err.find(c.key), std::string::npos) << c.what << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.what;
  }
  // Not JSON at all, and a directory without records.
  const std::string junk = dir.write("junk.json", "not json");
  EXPECT_EQ(run_trainsim("validate --allocator-record " + q(junk)).exit_code, 2);
  const CommandResult empty = run_trainsim("validate --allocator-record " + q(dir.path().string() + "/nothing_here"));
  EXPECT_EQ(empty.exit_code, 2) << empty.err;
  std::filesystem::create_directory(dir.path() / "none");
  const CommandResult none = run_trainsim("validate --allocator-record " + q((dir.path() / "none").string()));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("allocator records"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace trainsim::test
