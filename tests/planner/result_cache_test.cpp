// The results cache is checked, not trusted (issue 38): an entry edited by hand, one whose result
// is impossible for its strategy, a walks file with raised bounds, a FIFO or a device in an entry's
// place: each is worked out again, said on stderr, and the answer is the one without a cache.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "result_cache.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "test_support.hpp"

namespace trainsim::planner {
namespace {

namespace fs = std::filesystem;

// About two seconds of replays on two cores (gpt2-1.5b on two V100s).
const std::string SMALL = "plan --model gpt2-1.5b --hw dgx2 --gpus 2 --global-batch 8 --quiet --format json";

std::vector<fs::path> entries(const fs::path& cache, const std::string& kind) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(cache)) {
    if (e.path().extension() != ".json") continue;
    const nlohmann::json j = nlohmann::json::parse(test::read_file(e.path().string()));
    if (j.at("kind") == kind) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

class CachedPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = dir_.path() / "cache";
    const auto first = test::run_trainsim(SMALL + " --cache " + cache_.string());
    ASSERT_EQ(first.exit_code, 0) << first.err;
    answer_ = first.out;
    ASSERT_FALSE(entries(cache_, "trainsim.cache").empty());
  }
  test::CommandResult again() const { return test::run_trainsim(SMALL + " --cache " + cache_.string()); }

  test::ScratchDir dir_;
  fs::path cache_;
  std::string answer_;
};

TEST_F(CachedPlan, AnEntryEditedToANegativeStepIsReplayedAgainAndSaidSo) {
  const fs::path p = entries(cache_, "trainsim.cache").front();
  std::string text = test::read_file(p.string());
  text = std::regex_replace(text, std::regex("\"step_time_s\":[-0-9.eE+]+"), "\"step_time_s\":-0.1");
  write(p, text);
  const auto r = again();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, answer_);
  EXPECT_NE(r.err.find("not used (its checksum does not match its contents)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(p.filename().string()), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("-0.1"), std::string::npos);
}

TEST_F(CachedPlan, RaisedWalkBoundsAreNotTrusted) {
  const std::vector<fs::path> walks = entries(cache_, "trainsim.walks");
  ASSERT_FALSE(walks.empty());
  for (const fs::path& p : walks) {
    nlohmann::json j = nlohmann::json::parse(test::read_file(p.string()));
    for (auto& [text, bound] : j.at("walks").items()) bound = 1e9;
    write(p, j.dump());
  }
  const auto r = again();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, answer_);
  EXPECT_NE(r.err.find("checksum"), std::string::npos) << r.err;
}

TEST_F(CachedPlan, AFifoOrADeviceInAnEntrysPlaceIsRefusedWithoutWaiting) {
  const std::vector<fs::path> results = entries(cache_, "trainsim.cache");
  ASSERT_GE(results.size(), 2u);
  fs::remove(results[0]);
  ASSERT_EQ(::mkfifo(results[0].c_str(), 0600), 0);
  fs::remove(results[1]);
  fs::create_symlink("/dev/zero", results[1]);
  const auto r = again();  // a read of the FIFO would wait for ever, one of /dev/zero never end
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, answer_);
  EXPECT_NE(r.err.find(results[0].filename().string() + " not used (a FIFO (named pipe))"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(results[1].filename().string() + " not used (a character device)"), std::string::npos) << r.err;
}

TEST_F(CachedPlan, AnUntouchedCacheIsUsedSilently) {
  const auto r = again();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, answer_);
  EXPECT_EQ(r.err.find("not used"), std::string::npos) << r.err;
}

// A result whose checksum holds (written by the cache itself) but which is impossible for its
// strategy is still refused: below the bound proven for it, or tokens/s that do not match it.
TEST(ResultCache, AConsistentChecksumDoesNotMakeAnImpossibleResultUsable) {
  test::ScratchDir dir;
  const ResultCache cache((dir.path() / "cache").string(), "--cache");
  const wl::ModelSpec model = wl::builtin_model("gpt2-1.5b");
  const hw::ClusterProfile profile = hw::builtin_profile("dgx2");
  wl::Strategy s;
  s.gpus = 2, s.dp = 2, s.global_batch = 8, s.micro_batch = 4, s.seq = 1024;
  const Config config{&model, &profile, s, 0.05};
  const std::string key = ResultCache::key_text(config, {});
  sim::SimResult r;
  r.simulated = true;
  r.fits = true;
  r.step_time_s = 2.0;
  r.tokens_per_s = 8.0 * 1024 / 2.0;
  cache.store(key, r);
  ASSERT_TRUE(cache.load(key, s, 1.0).has_value());
  EXPECT_FALSE(cache.load(key, s, 2.5).has_value());  // below its proven bound
  r.tokens_per_s *= 2;
  cache.store(key, r);
  EXPECT_FALSE(cache.load(key, s, 0).has_value());  // tokens/s that do not match the step
  r.tokens_per_s /= 2;
  r.step_time_s = std::numeric_limits<double>::infinity();
  cache.store(key, r);
  EXPECT_FALSE(cache.load(key, s, 0).has_value());
}

}  // namespace
}  // namespace trainsim::planner
