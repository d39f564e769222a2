#pragma once
// A calibration section broken one way, for the strict loaders' bad-input tests: how it is broken,
// the key path the ConfigError must name, and a part of what it must say it expected.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "config_error.hpp"

namespace trainsim::test {

struct BadSectionCase {
  const char* what;
  void (*mutate)(nlohmann::json&);
  const char* key_path;
  const char* message_part;
};

// Breaks a copy of `section` as `c` says, hands it to `load` (which puts it in a profile.json and
// loads it), and checks the ConfigError names the file, the key and the expectation.
template <class Load>
void expect_bad_section(nlohmann::json section, const BadSectionCase& c, Load load) {
  c.mutate(section);
  try {
    load(section);
    FAIL() << c.what << ": expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("profile.json"), std::string::npos) << e.what();
    EXPECT_EQ(e.key_path(), c.key_path) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.message_part), std::string::npos) << e.what();
  }
}

}  // namespace trainsim::test
