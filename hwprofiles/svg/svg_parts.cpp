#include "svg_parts.hpp"

#include <array>

namespace trainsim::svg::detail {

std::string escape(const std::string& s, bool quotes) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"' && quotes) out += "&quot;";
    else out += c;
  }
  return out;
}

std::string open_svg(std::string_view width, std::string_view height, int font_size) {
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"";
  svg += width;
  svg += "\" height=\"";
  svg += height;
  svg += "\" font-family=\"sans-serif\" font-size=\"" + std::to_string(font_size) + "\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  return svg;
}

const char* series_color(std::size_t k, std::size_t cycle) {
  static constexpr std::array<const char*, 10> COLORS{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return COLORS[k % (cycle < COLORS.size() ? cycle : COLORS.size())];
}

}  // namespace trainsim::svg::detail
