// What trainsim says about what the user gave (issue 43, item 5): echoed values escaped (a NUL, an
// ANSI escape, a newline) and cut (a 5 MB key), one message per error; "did you mean" for names,
// flags and subcommands; and an unwritable HOME costs only the results cache.
#include "cli_cases.hpp"

namespace trainsim::test {
namespace {

TEST(Messages, EscapeCutAndSuggest) {
  ScratchDir dir;
  const std::string d = dir.path().string();
  nlohmann::json p = read_source_json("hwprofiles/dgx2.json");
  p[std::string("bad\0key", 7)] = 1;
  dir.write("nul_key.json", p.dump());
  p = read_source_json("hwprofiles/dgx2.json");
  p[std::string(5000000, 'k')] = 1;
  dir.write("long_key.json", p.dump());
  std::string dup = "{\"" + std::string(5000000, 'k') + "\": 1, \"" + std::string(5000000, 'k') + "\": 2}";
  dir.write("dup_long_key.json", dup);
  const std::vector<Case> cases = {
      {"a NUL inside a key", "memory --model gpt2-1.5b --hw {dir}/nul_key.json",
       "{dir}/nul_key.json: bad\\x00key: expected one of the known keys"},
      {"a 5 MB key", "memory --model gpt2-1.5b --hw {dir}/long_key.json",
       "{dir}/long_key.json: " + std::string(512, 'k') + "... (5000000 bytes): expected one of the known keys"},
      {"a 5 MB key given twice", "memory --model gpt2-1.5b --hw {dir}/dup_long_key.json",
       "{dir}/dup_long_key.json: " + std::string(512, 'k') + "... (5000000 bytes): expected each key once in an object, got \"" +
           std::string(80, 'k') + "... (5000000 bytes)\" twice: at line 1, column 2 (value 1) and again at line 1, column 5000009"},
      {"a built-in model misspelt", "memory --model gpt3-175",
       "--model: expected a built-in model (\"bert-large\""},
      {"a built-in model misspelt: the suggestion", "memory --model gpt3-175", "got \"gpt3-175\" (did you mean \"gpt3-175b\"?)"},
      {"a built-in cluster misspelt", "memory --model gpt2-1.5b --hw dgx-2", "got \"dgx-2\" (did you mean \"dgx2\"?)"},
      {"a flag misspelt", "memory --model gpt2-1.5b --tpp 2", "for --tpp did you mean --tp?"},
      {"a subcommand misspelt", "memroy --model gpt2-1.5b", "for memroy did you mean memory?"},
      {"a flag's value misspelt", "memory --model gpt2-1.5b --offload-params nvm",
       "--offload-params: expected one of \"none\", \"cpu\", \"nvme\", got \"nvm\" (did you mean \"nvme\"?)"},
      {"a stack misspelt", "plan --model gpt2-1.5b --hw dgx2 --nodes 1 --stack megatrn",
       "--stack: expected one of \"idealized\", \"megatron\", \"deepspeed\""},
      {"a stack misspelt: the suggestion", "plan --model gpt2-1.5b --hw dgx2 --nodes 1 --stack megatrn",
       "got \"megatrn\" (did you mean \"megatron\"?)"},
      {"an objective misspelt", "plan --model gpt2-1.5b --hw dgx2 --nodes 1 --objective energi",
       "--objective: expected one of \"time\", \"cost\", \"energy\", got \"energi\" (did you mean \"energy\"?)"},
      {"a Megatron-LM argument misspelt", "memory --model gpt2-1.5b --megatron-args \"--recompute-granulrity full\"",
       "--megatron-args: --recompute-granulrity: expected a Megatron-LM argument trainsim knows (see workloads/README.md: "
       "Megatron-LM arguments), got the unknown argument \"--recompute-granulrity\" (did you mean \"--recompute-granularity\"?)"},
      {"a Megatron-LM argument unknown", "memory --model gpt2-1.5b --megatron-args \"--moe-router-topk 2\"",
       "got the unknown argument \"--moe-router-topk\"\n"},
      {"an explicit --cache that cannot be created", "plan --model gpt2-1.5b --hw dgx2 --nodes 1 --quiet --cache /proc/trainsim-no/cache",
       "--cache: expected a directory trainsim can create or write for its results cache, got \"/proc/trainsim-no/cache\""},
  };
  expect_refused(cases, d);

  // A profile name with an ANSI escape and a newline: printed escaped in the answer.
  p = read_source_json("hwprofiles/dgx2.json");
  p["name"] = "evil\x1b[31m\nname";
  dir.write("ansi.json", p.dump());
  auto r = run_trainsim("memory --model gpt2-1.5b --hw " + d + "/ansi.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("evil\\x1b[31m\\nname"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;

  // No HOME to cache in: plan answers without the cache, with one warning.
  r = run_command("env -u XDG_CACHE_HOME HOME=/proc/trainsim-no-home " + std::string(TRAINSIM_BINARY) +
                        " plan --model gpt2-1.5b --hw dgx2 --nodes 1 --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
  const std::string warning =
      "trainsim: warning: running without the results cache: --cache (default): expected a directory trainsim can create or "
      "write for its results cache, got \"/proc/trainsim-no-home/.cache/trainsim\"";
  EXPECT_EQ(r.err.rfind(warning, 0), 0u) << r.err;
  EXPECT_EQ(r.err.find("warning", warning.size()), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainsim::test
