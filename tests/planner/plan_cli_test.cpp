// `trainsim plan` and `trainsim compare` end to end, through the built binary: the public JSON,
// byte-identical answers (again, from the cache, after an interrupt), every bad flag an exit 2
// naming it with nothing written, and what is said when nothing fits.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "test_support.hpp"

namespace trainsim {
namespace {

namespace fs = std::filesystem;

// About two seconds of replays on two cores (gpt2-1.5b on two V100s).
const std::string SMALL = "plan --model gpt2-1.5b --hw dgx2 --gpus 2 --global-batch 8 --quiet";

std::string cache_flag(const test::ScratchDir& d) { return " --cache " + (d.path() / "cache").string(); }

TEST(PlanCli, JsonCarriesThePublicKeys) {
  test::ScratchDir dir;
  const auto r = test::run_trainsim(SMALL + " --top 3 --format json" + cache_flag(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"schema_version", "kind", "provenance", "inputs", "ranked", "infeasible", "search", "per_node_count",
                          "fastest", "cheapest", "min_nodes_to_fit"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["kind"], "trainsim.plan");
  ASSERT_EQ(j["ranked"].size(), 3u);
  double previous = 0;
  for (const auto& e : j["ranked"]) {
    for (const char* key : {"strategy", "step_time_s", "tflops_per_gpu", "tokens_per_s", "peak_memory_bytes", "time_to_train_days",
                            "gpu_hours", "cost_usd", "energy_kwh", "co2_kg", "beats_next"}) {
      EXPECT_TRUE(e.contains(key)) << key;
    }
    EXPECT_GE(e["step_time_s"].get<double>(), previous);  // best first
    previous = e["step_time_s"].get<double>();
    // Cost and energy follow from the step time, the profile's price and power.
    const double hours = e["time_to_train_days"].get<double>() * 24;
    EXPECT_NEAR(e["gpu_hours"].get<double>(), 2 * hours, 1e-9 * hours);
    EXPECT_NEAR(e["cost_usd"].get<double>(), 3.9 * 2 * hours, 1e-6 * hours);
    EXPECT_NEAR(e["co2_kg"].get<double>(), 0.429 * e["energy_kwh"].get<double>(), 1e-9 * e["co2_kg"].get<double>() + 1e-12);
  }
  EXPECT_FALSE(j["ranked"][0]["beats_next"].is_null());
  EXPECT_TRUE(j["ranked"][2]["beats_next"].is_null());
  EXPECT_TRUE(j["infeasible"].is_object());
  EXPECT_GT(j["search"]["pruned_by_bound"].get<long>(), 0);
  // The strategy object reads back as a strategy file.
  test::ScratchDir files;
  const std::string s = files.write("s.json", j["ranked"][0]["strategy"].dump());
  const auto sim = test::run_trainsim("simulate --model gpt2-1.5b --hw dgx2 --strategy " + s + " --format json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_EQ(nlohmann::json::parse(sim.out)["step_time_s"], j["ranked"][0]["step_time_s"]);
}

TEST(PlanCli, SameBytesAgainFromTheCacheAndWithoutIt) {
  test::ScratchDir dir;
  const auto first = test::run_trainsim(SMALL + " --format json" + cache_flag(dir));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_FALSE(fs::is_empty(dir.path() / "cache"));
  const auto again = test::run_trainsim(SMALL + " --format json" + cache_flag(dir));
  EXPECT_EQ(first.out, again.out);
  const auto uncached = test::run_trainsim(SMALL + " --format json --no-cache");
  EXPECT_EQ(first.out, uncached.out);
  for (const char* format : {"table", "csv"}) {
    EXPECT_EQ(test::run_trainsim(SMALL + " --format " + format + cache_flag(dir)).out,
              test::run_trainsim(SMALL + " --format " + format + cache_flag(dir)).out);
  }
}

// SIGINT in the middle of a sweep: the process stops with what it has, leaves no temporaries; the next run
// resumes from what was cached and prints what an uninterrupted run prints. The top 120 takes about
// 0.9 s alone: with the default top 5 the whole sweep replays 8 in 0.2 s, and the top 40 (0.3 s
// alone) can end between the third cached replay and the interrupt under the full suite's load.
TEST(PlanCli, InterruptedSweepResumesToTheSameBytes) {
  test::ScratchDir dir;
  const fs::path cache = dir.path() / "cache";
  const std::string question = "plan --model bert-large --hw dgx2 --gpus 4 --global-batch 16 --top 120 --quiet --format json";
  const std::string args = question + " --cache " + cache.string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", (std::string("exec ") + TRAINSIM_BINARY + " " + args + " >/dev/null 2>&1").c_str(), nullptr);
    ::_exit(127);
  }
  // Wait until some replays are cached, then interrupt.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::size_t cached = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    cached = 0;
    if (fs::exists(cache)) {
      for (const auto& e : fs::directory_iterator(cache)) cached += e.path().extension() == ".json" && e.path().filename().string()[0] != '.';
    }
    if (cached >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GE(cached, 3u) << "no replay was cached within a minute";
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  // The first interrupt ends the search with what it has (exit 128 + SIGINT); a finished sweep exits 0.
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGINT) << "the sweep finished before the interrupt; status " << status;
  for (const auto& e : fs::directory_iterator(cache)) EXPECT_NE(e.path().filename().string()[0], '.') << "temporary left: " << e.path();
  const auto resumed = test::run_trainsim(args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto fresh = test::run_trainsim(question + " --no-cache");
  EXPECT_EQ(resumed.out, fresh.out);
}

TEST(PlanCli, NodeRangeAnswersEachCountAndTheFastestAndCheapest) {
  test::ScratchDir dir;
  const auto range = test::run_trainsim("plan --model bert-large --hw zhores --nodes 1..2 --global-batch 16 --families zero2,dp --format json --quiet" +
                                        cache_flag(dir));
  ASSERT_EQ(range.exit_code, 0) << range.err;
  const auto j = nlohmann::json::parse(range.out);
  ASSERT_EQ(j["per_node_count"].size(), 2u);
  EXPECT_EQ(j["per_node_count"][0]["nodes"], 1);
  EXPECT_EQ(j["per_node_count"][1]["nodes"], 2);
  EXPECT_EQ(j["per_node_count"][0]["ranked"].size(), 1u);  // a range answers one per node count
  EXPECT_EQ(j["ranked"].size(), 2u);
  EXPECT_FALSE(j["fastest"].is_null());
  EXPECT_FALSE(j["cheapest"].is_null());
  for (const auto& e : j["ranked"]) EXPECT_TRUE(e["family"] == "zero2" || e["family"] == "dp") << e["family"];
  const auto table = test::run_trainsim("plan --model bert-large --hw zhores --nodes 1..2 --global-batch 16 --families zero2,dp --quiet" +
                                        cache_flag(dir));
  EXPECT_NE(table.out.find("Fastest: "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("Cheapest: "), std::string::npos);
}

// Node counts past the cluster's size are answered at once, not searched: a range is cut at the
// cluster's size and says so; a count wholly past it is an error naming the cluster's size, before
// any search (the issue's `--nodes 97..1000` on 96 DGX-2 ran for minutes).
TEST(PlanCli, RangePastTheClusterSaysHowManyNodesItHas) {
  const auto r = test::run_trainsim("plan --model bert-large --hw zhores --nodes 25..26 --global-batch 200 --families dp --quiet --no-cache");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  node counts 26..26 not searched: zhores has 25 nodes\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("   26  "), std::string::npos) << r.out;
  const auto past = test::run_trainsim("plan --model gpt2-1.5b --hw dgx2 --nodes 97..1000 --quiet --no-cache");
  EXPECT_EQ(past.exit_code, 2);
  EXPECT_NE(past.err.find("--nodes: expected at most the cluster's size: dgx2 has 96 nodes (1536 GPUs), got 97..1000"), std::string::npos)
      << past.err;
  const auto one = test::run_trainsim("plan --model gpt2-1.5b --hw dgx2 --nodes 200 --quiet --no-cache");
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.err.find("dgx2 has 96 nodes"), std::string::npos) << one.err;
}

TEST(PlanCli, NothingFitsGivesTheSmallestNodeCountThatDoes) {
  test::ScratchDir dir;
  const auto r = test::run_trainsim("plan --model gpt3-175b --hw dgx2 --nodes 1 --families zero3 --global-batch 512 --format json --quiet" +
                                    cache_flag(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["ranked"].empty());
  ASSERT_FALSE(j["min_nodes_to_fit"].is_null());
  EXPECT_TRUE(j["min_nodes_to_fit"]["found"].get<bool>());
  const int n = j["min_nodes_to_fit"]["nodes"].get<int>();
  EXPECT_GT(n, 1);
  EXPECT_EQ(j["min_nodes_to_fit"]["best"]["nodes"], n);
  EXPECT_EQ(j["min_nodes_to_fit"]["best"]["family"], "zero3");
  // A cluster of one node says so.
  const auto one = test::run_trainsim("plan --model megatron-1t --hw v100-workstation --nodes 1 --quiet" + cache_flag(dir));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("Nothing fits, and no larger node count"), std::string::npos) << one.out;
}

TEST(PlanCli, BadFlagsAreExit2NamingTheFlagAndWriteNothing) {
  test::ScratchDir dir;
  const std::string out = (dir.path() / "plan.json").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--nodes 0", "--nodes: expected a node count N or a range A..B"},
      {"--nodes 5..2", "--nodes: expected a node count N or a range A..B"},
      {"--nodes 1..x", "--nodes: expected a node count N or a range A..B"},
      {"--nodes 1 --objective speed", "--objective: expected one of \"time\", \"cost\", \"energy\", got \"speed\""},
      {"--nodes 1 --top 0", "--top: expected a whole number in [1, 1000], got 0"},
      {"--nodes 1 --gap 0.7", "--gap: expected a fraction in [0, 0.5], got 0.7"},
      {"--nodes 1 --gap -0.01", "--gap: expected a fraction in [0, 0.5], got -0.01"},
      {"--nodes 1 --families zero3,bogus", "--families: expected a comma-separated list of families from: dp, zero1"},
      {"--nodes 1 --tokens -5", "--tokens: expected a token count in (0, 1e18]"},
      {"--nodes 1 --grid-kgco2-per-kwh 50", "--grid-kgco2-per-kwh: expected a carbon intensity in [0, 10]"},
      {"--nodes 1 --gpus 4", "--gpus: expected either --nodes or --gpus, not both"},
      {"--nodes 1 --seq 4096", "--seq: expected a sequence length in [1, 1024]"},
      {"--nodes 1 --precision bf16-mixed", "--precision: expected numerics the V100-SXM3-32GB of dgx2 has a peak for"},
      {"", "--nodes: expected --nodes N, --nodes A..B or --gpus G"},
  };
  for (const auto& [flags, message] : cases) {
    const auto r = test::run_trainsim("plan --model gpt2-1.5b --hw dgx2 " + flags + " --no-cache -o " + out);
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << flags << ": " << r.err;
    EXPECT_FALSE(fs::exists(out)) << flags;
  }
  const auto cache = test::run_trainsim("plan --model gpt2-1.5b --hw dgx2 --nodes 1 --cache /proc/version/x");
  EXPECT_EQ(cache.exit_code, 2);
  EXPECT_NE(cache.err.find("--cache: expected a directory trainsim can create or write"), std::string::npos) << cache.err;
  const auto model = test::run_trainsim("plan --model gpt-9z --hw dgx2 --nodes 1 --no-cache");
  EXPECT_EQ(model.exit_code, 2);
  EXPECT_NE(model.err.find("--model"), std::string::npos) << model.err;
}

TEST(CompareCli, FamiliesSideBySideWithCharts) {
  test::ScratchDir dir;
  const auto r = test::run_trainsim("compare --model gpt2-1.5b --hw dgx2 --gpus 2 --global-batch 8 --families dp,zero3,zero-offload,gpipe "
                                    "--quiet --format json --charts " + dir.path().string() + cache_flag(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 4u);
  EXPECT_EQ(j["rows"][0]["family"], "dp");
  for (const auto& row : j["rows"]) EXPECT_TRUE(!row["best"].is_null() || !row["why_not"].is_null());
  EXPECT_EQ(j["rows"][1]["best"]["family"], "zero3");
  for (const char* chart : {"compare-step-time.svg", "compare-memory.svg"}) {
    const std::string svg = test::read_file((dir.path() / chart).string());
    EXPECT_EQ(svg.rfind("<svg", 0), 0u) << chart;
    EXPECT_NE(svg.find("zero-offload"), std::string::npos) << chart;
  }
}

TEST(CompareCli, StrategyFilesAndTheirErrors) {
  test::ScratchDir dir;
  const std::string a = dir.write("a.json", R"({"schema_version": 1, "zero": 2, "recompute": "full"})");
  const std::string b = dir.write("b.json", R"({"schema_version": 1, "pp": 2, "schedule": "gpipe", "recompute": "full"})");
  const auto r = test::run_trainsim("compare --model gpt2-1.5b --hw dgx2 --gpus 2 --global-batch 8 --strategies " + a + "," + b +
                                    " --quiet" + cache_flag(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("a.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpipe"), std::string::npos) << r.out;
  const std::string bad = dir.write("bad.json", R"({"schema_version": 1, "zero": 3, "pp": 2})");
  const auto e = test::run_trainsim("compare --model gpt2-1.5b --hw dgx2 --gpus 2 --strategies " + a + "," + bad + " --no-cache");
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_NE(e.err.find("bad.json: zero: expected ZeRO stage 0 or 1 with pipeline parallelism"), std::string::npos) << e.err;
  const auto both = test::run_trainsim("compare --model gpt2-1.5b --hw dgx2 --gpus 2 --strategies " + a + " --families dp --no-cache");
  EXPECT_EQ(both.exit_code, 2);
  const auto range = test::run_trainsim("compare --model gpt2-1.5b --hw dgx2 --nodes 1..2 --no-cache");
  EXPECT_EQ(range.exit_code, 2);
  EXPECT_NE(range.err.find("--nodes: expected one node count for compare"), std::string::npos) << range.err;
}

// A ranked strategy is written as a strategy file that replays it: settings the search never
// varies (an uneven stage split, Hydra's shards, the training stack) come back when a file set
// them.
TEST(CompareCli, RankedStrategyKeepsWhatItsFileSet) {
  test::ScratchDir dir;
  const std::string pipe = dir.write("pipe.json", R"({"schema_version": 1, "pp": 2, "first_stage_layers": 20, "micro_batch": 1})");
  const std::string hydra = dir.write("hydra.json", R"({"schema_version": 1, "schedule": "hydra", "shards": 6, "recompute": "full"})");
  const auto r = test::run_trainsim("compare --model gpt2-1.5b --hw dgx2 --gpus 2 --global-batch 8 --strategies " + pipe + "," +
                                    hydra + " --format json --quiet --no-cache");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& first = j.at("rows").at(0).at("best").at("strategy");
  EXPECT_EQ(first.at("first_stage_layers"), 20) << first.dump();
  const auto& second = j.at("rows").at(1).at("best").at("strategy");
  EXPECT_EQ(second.at("shards"), 6) << second.dump();
  EXPECT_EQ(second.at("schedule"), "hydra");
}

}  // namespace
}  // namespace trainsim
