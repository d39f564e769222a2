#pragma once
// What every chart kind of svg_plot.hpp shares: text escaping, the opening element and the
// series palette.

#include <cstddef>
#include <string>
#include <string_view>

namespace trainsim::svg::detail {

// Text content made safe for SVG; `quotes` escapes '"' too (the whisker plots always have).
std::string escape(const std::string& s, bool quotes = false);

// The <svg> element and its white background. Width and height come preformatted: each chart
// kind prints its numbers its own way ("760.0", "640") and its committed files keep that.
std::string open_svg(std::string_view width, std::string_view height, int font_size);

// Series colours (matplotlib's tab10), cycling after the first `cycle` of them.
const char* series_color(std::size_t k, std::size_t cycle = 10);

}  // namespace trainsim::svg::detail
