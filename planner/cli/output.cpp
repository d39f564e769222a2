#include "output.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "config_error.hpp"

namespace trainsim::cli {

void emit(const OutputFlags& out, const std::string& text) {
  if (out.output.empty()) {
    std::cout << text;
    std::cout.flush();
    return;
  }
  const std::filesystem::path target(out.output);
  const std::filesystem::path temp = target.string() + ".tmp-trainsim";
  {
    std::ofstream file(temp, std::ios::binary | std::ios::trunc);
    if (!file) throw ConfigError(out.output, "--output", "a writable file path", "a path that cannot be written");
    file << text;
    if (!file.flush()) {
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
      throw ConfigError(out.output, "--output", "a writable file path", "a failed write");
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, target, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    throw ConfigError(out.output, "--output", "a writable file path", "a failed rename");
  }
}

}  // namespace trainsim::cli
