// Parsing JSON text strictly: nlohmann's parser drives our own document builder (its SAX
// interface), which refuses what the default builder accepts silently or dangerously:
// - a key given twice in one object (the default keeps the last: "layers": 96 then 2 quietly
//   trains a 2-layer model); the error names both lines;
// - nesting deeper than MAX_JSON_DEPTH (a 100,000-deep array parsed fine, then crashed the
//   recursive copy that followed);
// - numbers beyond the range of a double ("1e999"), reported at their key path.
// Syntax errors name the line and column.
#include <fmt/format.h>

#include <iterator>
#include <limits>
#include <map>
#include <vector>

#include "input_file.hpp"
#include "strict_json.hpp"

namespace trainsim {
namespace {

using nlohmann::json;

// Line and column (1-based) of a byte offset.
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

// A character iterator that publishes how far the parser has read, so the builder knows where
// each key stands (nlohmann's SAX events carry no position).
class TrackingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackingIterator(const char* p, const char** furthest) : p_(p), furthest_(furthest) {}
  reference operator*() const { return *p_; }
  TrackingIterator& operator++() {
    ++p_;
    if (p_ > *furthest_) *furthest_ = p_;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const TrackingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const TrackingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  const char** furthest_;
};

class StrictBuilder {
 public:
  StrictBuilder(std::string_view text, const std::string& source, const char** furthest, const JsonLimits& limits)
      : text_(text), source_(source), furthest_(furthest), limits_(limits) {}

  json take() { return std::move(root_); }

  bool null() { return value(json(nullptr)); }
  bool boolean(bool v) { return value(json(v)); }
  bool number_integer(json::number_integer_t v) { return value(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return value(json(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return value(json(v)); }
  bool string(json::string_t& v) { return value(json(std::move(v))); }
  bool binary(json::binary_t& v) { return value(json(json::binary_t(std::move(v)))); }

  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& k) {
    Frame& top = frames_.back();
    // The parser has just read the closing quote: step back to the opening one.
    const std::size_t end = offset();
    const std::size_t here = end >= k.size() + 2 ? end - k.size() - 2 : 0;
    const auto [it, inserted] = top.key_offsets.emplace(k, here);
    if (!inserted) {
      throw ConfigError(source_, path_with(top, k), "each key once in an object",
                        fmt::format("\"{}\" twice: at {} (value {}) and again at {}", printable(k, 80), where(it->second),
                                    describe_json((*top.container)[k]), where(here)));
    }
    count_bytes(KEY_BYTES + heap_bytes(k));
    top.pending_key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception& e) {
    const auto [line, column] = line_column(text_, position > 0 ? position - 1 : 0);
    if (e.id == 406) {  // out_of_range.406: a number that overflows a double
      throw ConfigError(source_, current_path(), "a number within the range of a double (at most about 1.8e308)",
                        fmt::format("{} on line {}", shorten(last_token), line));
    }
    throw ConfigError(source_, "(document)", "valid JSON",
                      fmt::format("a syntax error on line {}, column {} (near {})", line, column,
                                  last_token.empty() ? std::string("the end of the text") : shorten(last_token)));
  }

 private:
  struct Frame {
    json* container;
    std::string path;
    std::map<std::string, std::size_t, std::less<>> key_offsets;  // objects: where each key stands
    std::string pending_key;
  };

  static std::string shorten(const std::string& token) {
    return token.size() > 40 ? "'" + token.substr(0, 37) + "...'" : "'" + token + "'";
  }

  std::string where(std::size_t at) const {
    const auto [line, column] = line_column(text_, at);
    return fmt::format("line {}, column {}", line, column);
  }

  std::size_t offset() const { return static_cast<std::size_t>(*furthest_ - text_.data()); }

  static std::string path_with(const Frame& f, const std::string& key) {
    return f.path.empty() ? key : f.path + "." + key;
  }

  std::string current_path() const {
    if (frames_.empty()) return "(document)";
    const Frame& top = frames_.back();
    if (top.container->is_object()) return path_with(top, top.pending_key);
    return fmt::format("{}[{}]", top.path, top.container->size());
  }

  // Where the next value goes; returns its path.
  json* place(json v, std::string* path) {
    if (frames_.empty()) {
      root_ = std::move(v);
      *path = "";
      return &root_;
    }
    Frame& top = frames_.back();
    if (top.container->is_array()) {
      *path = fmt::format("{}[{}]", top.path, top.container->size());
      top.container->push_back(std::move(v));
      return &top.container->back();
    }
    *path = path_with(top, top.pending_key);
    json& slot = (*top.container)[top.pending_key];
    slot = std::move(v);
    return &slot;
  }

  // What a value takes once built, roughly (libstdc++, glibc malloc: 16 bytes of header per block,
  // sizes rounded up to 16): the json itself, twice for the slack of a growing array; a string or
  // container object on the heap, and a string's characters beyond the small-string buffer; per
  // object key a tree node holding the key and its value.
  static constexpr std::size_t MALLOC_BYTES = 16;
  static constexpr std::size_t VALUE_BYTES = 2 * sizeof(json);
  static constexpr std::size_t KEY_BYTES = 32 + sizeof(std::string) + sizeof(json) + MALLOC_BYTES;
  static std::size_t heap_bytes(const std::string& s) { return s.size() > 15 ? (s.size() + 16) / 16 * 16 + MALLOC_BYTES : 0; }

  void count_value(std::size_t extra_bytes) {
    if (++values_ > limits_.max_values) {
      throw ConfigError(source_, current_path(),
                        fmt::format("at most {} JSON values in the document (the limit on elements)", limits_.max_values),
                        fmt::format("more (at {})", where(offset())));
    }
    count_bytes(VALUE_BYTES + extra_bytes);
  }

  void count_bytes(std::size_t bytes) {
    built_bytes_ += bytes;
    if (built_bytes_ > limits_.max_built_bytes) {
      throw ConfigError(source_, current_path(),
                        fmt::format("at most {} MiB of JSON values once built in memory (the limit on the document's size)",
                                    limits_.max_built_bytes >> 20),
                        fmt::format("more (at {})", where(offset())));
    }
  }

  bool value(json v) {
    count_value(v.is_string() ? sizeof(std::string) + MALLOC_BYTES + heap_bytes(v.get_ref<const std::string&>()) : 0);
    std::string path;
    place(std::move(v), &path);
    return true;
  }

  bool open(json container) {
    if (frames_.size() >= MAX_JSON_DEPTH) {
      // The path of the outermost levels only: the full one would be as long as the nesting.
      throw ConfigError(source_, frames_[std::min<std::size_t>(frames_.size() - 1, 3)].path + "...",
                        fmt::format("objects and arrays nested at most {} deep", MAX_JSON_DEPTH),
                        fmt::format("deeper nesting at {}", where(offset())));
    }
    count_value((container.is_object() ? sizeof(json::object_t) : sizeof(json::array_t)) + MALLOC_BYTES);
    std::string path;
    json* slot = place(std::move(container), &path);
    frames_.push_back(Frame{slot, std::move(path), {}, {}});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  std::string_view text_;
  const std::string& source_;
  const char** furthest_;
  JsonLimits limits_;
  std::size_t values_ = 0, built_bytes_ = 0;
  json root_;
  std::vector<Frame> frames_;
};

}  // namespace

JsonDocument parse_json_text(std::string_view text, std::string source) {
  // Inputs read whole are at most MAX_INPUT_FILE_BYTES: their values are bounded by their size.
  return parse_json_text(text, std::move(source), JsonLimits{});
}

JsonDocument parse_json_text(std::string_view text, std::string source, std::size_t max_values) {
  return parse_json_text(text, std::move(source), JsonLimits{max_values});
}

JsonDocument parse_json_text(std::string_view text, std::string source, const JsonLimits& limits) {
  const char* furthest = text.data();
  StrictBuilder builder(text, source, &furthest, limits);
  TrackingIterator first(text.data(), &furthest), last(text.data() + text.size(), &furthest);
  json::sax_parse(first, last, &builder, nlohmann::detail::input_format_t::json, /*strict=*/true,
                  /*ignore_comments=*/false);
  return {builder.take(), std::move(source)};
}

JsonDocument parse_json_file(const std::string& path) { return parse_json_text(read_input_file(path), path); }

}  // namespace trainsim
