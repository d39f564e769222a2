#pragma once
// The one error type for malformed input. Every loader (profiles, models, strategies, DeepSpeed
// and Megatron inputs, command-line flags) reports through it so the message always names the
// source (a file or a flag), the key path inside it and what was expected; the CLI maps it to
// exit code 2. A well-formed configuration that cannot run is not a ConfigError: it is an
// Infeasible answer with its reason.

#include <stdexcept>
#include <string>

namespace trainsim {

class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string source, std::string key_path, std::string expected, std::string got = {});

  const std::string& source() const { return source_; }
  const std::string& key_path() const { return key_path_; }
  const std::string& expected() const { return expected_; }
  const std::string& got() const { return got_; }

 private:
  std::string source_;
  std::string key_path_;
  std::string expected_;
  std::string got_;
};

}  // namespace trainsim
