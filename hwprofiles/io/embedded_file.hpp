#pragma once
// A data file compiled into the binary (see trainsim_embed_files in the top-level CMakeLists.txt).

#include <span>
#include <string_view>

namespace trainsim {

struct EmbeddedFile {
  std::string_view name;  // file name without its .json extension: the built-in name users type
  std::string_view text;
};

}  // namespace trainsim
