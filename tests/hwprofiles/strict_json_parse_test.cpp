// The strict parser and the bounded file reader: what the default nlohmann parser accepted
// silently (duplicate keys, any depth) or turned into an internal error (1e999), and what
// reading without bounds did to the machine (/dev/zero, a directory, a FIFO).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "input_file.hpp"
#include "strict_json.hpp"
#include "test_support.hpp"

namespace trainsim {
namespace {

// The ConfigError message of parsing `text`, or "" when it parses.
std::string parse_error(const std::string& text) {
  try {
    parse_json_text(text, "in.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string read_error(const std::string& path) {
  try {
    read_input_file(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(StrictJsonParse, DuplicateKeyIsAnErrorNamingBothOccurrences) {
  EXPECT_EQ(parse_error("{\n  \"architecture\": {\n    \"layers\": 96,\n    \"layers\": 2\n  }\n}"),
            "in.json: architecture.layers: expected each key once in an object, got \"layers\" twice: at line 3, "
            "column 5 (value 96) and again at line 4, column 5");
  // Duplicates in different objects are fine; so is the same key at another level.
  EXPECT_EQ(parse_error(R"({"a": {"x": 1}, "b": {"x": 2}, "x": 3})"), "");
  // Inside arrays of objects too.
  EXPECT_NE(parse_error(R"({"points": [{"bytes": 1, "bytes": 2}]})").find("points[0].bytes: expected each key once"),
            std::string::npos);
}

TEST(StrictJsonParse, NestingDeeperThanTheLimitIsAnError) {
  const auto nested = [](std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_EQ(parse_error(nested(MAX_JSON_DEPTH)), "");
  EXPECT_NE(parse_error(nested(MAX_JSON_DEPTH + 1)).find("expected objects and arrays nested at most 64 deep"),
            std::string::npos);
  // 100,000 levels (a crash before: the recursive copy of the parsed value overflowed the stack).
  const std::string deep = "{\"provenance\": {\"x\": " + nested(100000) + "}}";
  EXPECT_NE(parse_error(deep).find("in.json: provenance.x[0]...: expected objects and arrays nested at most 64 deep"),
            std::string::npos);
}

TEST(StrictJsonParse, NumberBeyondADoubleIsAnErrorAtItsKey) {
  EXPECT_EQ(parse_error(R"({"gpu": {"memory_GiB": 1e999}})"),
            "in.json: gpu.memory_GiB: expected a number within the range of a double (at most about 1.8e308), got "
            "'1e999' on line 1");
  EXPECT_NE(parse_error(R"({"a": [1, -1e400]})").find("in.json: a[1]: expected a number within the range"),
            std::string::npos);
}

TEST(StrictJsonParse, SyntaxErrorNamesLineAndColumn) {
  EXPECT_NE(parse_error("{\n  \"a\": 1,\n}").find("in.json: (document): expected valid JSON, got a syntax error on line 3"),
            std::string::npos);
  EXPECT_NE(parse_error("").find("expected valid JSON"), std::string::npos);
}

TEST(InputFile, RefusesWhatIsNotARegularFileByName) {
  test::ScratchDir dir;
  EXPECT_EQ(read_error(dir.path().string()),
            dir.path().string() + ": (file): expected a readable regular file of at most 16 MiB, got a directory");
  EXPECT_EQ(read_error("/dev/zero"), "/dev/zero: (file): expected a readable regular file of at most 16 MiB, got a character device");
  const std::string fifo = (dir.path() / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Returns at once (no writer is waited for) with its own words.
  EXPECT_NE(read_error(fifo).find("got a FIFO (named pipe)"), std::string::npos);
  EXPECT_NE(read_error((dir.path() / "absent.json").string()).find("got a path that does not exist"), std::string::npos);
}

TEST(InputFile, RefusesFilesLargerThanTheLimitAndReadsTheRest) {
  test::ScratchDir dir;
  const std::string big = dir.write("big.json", std::string(MAX_INPUT_FILE_BYTES + 1, ' '));
  EXPECT_NE(read_error(big).find("got a file of 16.0 MiB"), std::string::npos) << read_error(big);
  const std::string edge = dir.write("edge.json", std::string(MAX_INPUT_FILE_BYTES, 'x'));
  EXPECT_EQ(read_input_file(edge).size(), MAX_INPUT_FILE_BYTES);
  EXPECT_EQ(read_input_file(dir.write("small.json", "{}")), "{}");
}

}  // namespace
}  // namespace trainsim
