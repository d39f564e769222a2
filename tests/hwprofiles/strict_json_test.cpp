#include "strict_json.hpp"

#include <gtest/gtest.h>

namespace trainsim {
namespace {

StrictObject object_of(const nlohmann::json& j) { return StrictObject(j, "test.json", "gpu"); }

TEST(StrictJson, ReadsTypedValuesAndAcceptsKnownKeys) {
  const nlohmann::json j = {{"hbm_GBps", 900.0}, {"count", 4}, {"name", "v100"}, {"nvlink", true}};
  StrictObject o = object_of(j);
  EXPECT_EQ(o.number("hbm_GBps", positive("GB/s")), 900.0);
  EXPECT_EQ(o.integer("count", 1, 16), 4);
  EXPECT_EQ(o.string("name"), "v100");
  EXPECT_TRUE(o.boolean("nvlink"));
  EXPECT_NO_THROW(o.finish());
}

TEST(StrictJson, UnknownKeyIsAnErrorNamingFileAndPath) {
  const nlohmann::json j = {{"hbm_GBps", 900.0}, {"colour", "green"}};
  StrictObject o = object_of(j);
  o.number("hbm_GBps", positive());
  try {
    o.finish();
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.source(), "test.json");
    EXPECT_EQ(e.key_path(), "gpu.colour");
    EXPECT_NE(std::string(e.what()).find("unknown key \"colour\""), std::string::npos) << e.what();
  }
}

TEST(StrictJson, KeyWithoutUnitGetsItsOwnMessage) {
  const nlohmann::json j = {{"hbm", 900.0}};
  StrictObject o = object_of(j);
  o.optional_number("hbm_GBps", positive());
  try {
    o.finish();
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("a unit in the key name: \"hbm_GBps\""), std::string::npos) << e.what();
  }
}

TEST(StrictJson, KeyWithAnotherUnitGetsItsOwnMessage) {
  const nlohmann::json j = {{"memory_GB", 32.0}};
  StrictObject o = object_of(j);
  o.optional_number("memory_GiB", positive());
  try {
    o.finish();
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("the key \"memory_GiB\" (the unit this schema uses)"), std::string::npos)
        << e.what();
  }
}

TEST(StrictJson, NegativeAndWrongTypedValuesAreRejected) {
  const nlohmann::json j = {{"link_GBps", -3.0}, {"count", "four"}, {"flag", 1}};
  StrictObject o = object_of(j);
  EXPECT_THROW(o.number("link_GBps", positive("GB/s")), ConfigError);
  EXPECT_THROW(o.integer("count", 1, 8), ConfigError);
  EXPECT_THROW(o.boolean("flag"), ConfigError);
  try {
    o.number("link_GBps", positive("GB/s"));
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "test.json: gpu.link_GBps: expected a positive number (GB/s), got -3.0");
  }
}

TEST(StrictJson, MissingKeyNamesWhatWasExpected) {
  const nlohmann::json empty = nlohmann::json::object();  // StrictObject refers to it, never copies
  StrictObject o = object_of(empty);
  try {
    o.number("hbm_GBps", positive("GB/s"));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "test.json: gpu.hbm_GBps: expected a positive number (GB/s), got nothing (the key is missing)");
  }
}

TEST(StrictJson, SyntaxErrorNamesTheFile) {
  try {
    parse_json_text("{\"a\": 1,,}", "broken.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.source(), "broken.json");
    EXPECT_NE(std::string(e.what()).find("valid JSON"), std::string::npos);
  }
}

// Issue 43: echoed values are escaped and cut once, in ConfigError.
TEST(ConfigErrorMessage, EscapesControlCharactersAndCutsLongValues) {
  EXPECT_EQ(printable(std::string("a\0b\x1b[31m\n\t\r\x7f", 12)), "a\\x00b\\x1b[31m\\n\\t\\r\\x7f");
  EXPECT_EQ(printable("r\xc3\xa9sum\xc3\xa9"), "r\xc3\xa9sum\xc3\xa9");  // UTF-8 kept
  EXPECT_EQ(printable(std::string(10, 'x'), 4), "xxxx... (10 bytes)");
  // Never half a character: "é" is two bytes, cut before it.
  EXPECT_EQ(printable("ab\xc3\xa9", 3), "ab... (4 bytes)");
  const ConfigError e(std::string("f\0.json", 7), std::string(1000, 'k'), "a number", std::string("\x1b]0;x\x07", 6));
  EXPECT_EQ(std::string(e.what()), "f\\x00.json: " + std::string(512, 'k') + "... (1000 bytes): expected a number, got \\x1b]0;x\\x07");
  EXPECT_EQ(e.key_path().size(), 1000u);  // the fields keep what was given
}

TEST(ConfigErrorMessage, SuggestsTheClosestNameOnlyWhenClose) {
  const std::vector<std::string_view> names = {"gpt3-175b", "gpt2-1.5b", "bert-large", "dgx2"};
  EXPECT_EQ(closest_name("gpt3-175", names), "gpt3-175b");
  EXPECT_EQ(closest_name("bert-lareg", names), "bert-large");  // a swap counts once
  EXPECT_EQ(closest_name("DGX2", names), "dgx2");
  EXPECT_EQ(closest_name("llama", names), "");
  EXPECT_EQ(closest_name(std::string(1000, 'g'), names), "");
  EXPECT_EQ(did_you_mean("dgx-2", names), " (did you mean \"dgx2\"?)");
  EXPECT_EQ(did_you_mean("zzz", names), "");
}

TEST(StrictJson, ParseStopsAtTheLimitOnValues) {
  EXPECT_NO_THROW(parse_json_text("[1, 2, [3]]", "x.json", 5));
  try {
    parse_json_text("[1, 2, [3, 4]]", "x.json", 5);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "x.json: [2][1]: expected at most 5 JSON values in the document (the limit on elements), got more (at line 1, column 14)");
  }
}

}  // namespace
}  // namespace trainsim
