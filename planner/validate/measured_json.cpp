#include "measured_json.hpp"

#include <nlohmann/json.hpp>

#include "input_file.hpp"

namespace trainsim::planner {
namespace {

// nlohmann's SAX events, keeping only the top-level keys asked about: nothing is built, so a
// document of any shape costs its text and a nesting stack.
class TopLevelKeys {
 public:
  using json = nlohmann::json;

  bool null() { return scalar(nullptr); }
  bool boolean(bool) { return scalar(nullptr); }
  bool number_integer(json::number_integer_t) { return scalar(nullptr); }
  bool number_unsigned(json::number_unsigned_t) { return scalar(nullptr); }
  bool number_float(json::number_float_t, const json::string_t&) { return scalar(nullptr); }
  bool string(json::string_t& v) { return scalar(&v); }
  bool binary(json::binary_t&) { return scalar(nullptr); }
  bool start_object(std::size_t) { return open(true); }
  bool start_array(std::size_t) { return open(false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    if (depth_ == 1) {
      if (k == "traceEvents") found_.trace = true;
      kind_next_ = k == "kind";
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    found_.json = false;
    return false;
  }

  MeasuredFileKind found() const { return found_; }
  bool root_object() const { return root_object_; }

 private:
  bool scalar(const json::string_t* s) {
    if (depth_ == 1 && kind_next_ && s != nullptr) found_.kind = *s;
    if (depth_ == 1) kind_next_ = false;
    return true;
  }
  bool open(bool object) {
    if (depth_ == 0) root_object_ = object;
    if (depth_ == 1) kind_next_ = false;
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }

  std::size_t depth_ = 0;
  bool root_object_ = false, kind_next_ = false;
  MeasuredFileKind found_;
};

}  // namespace

JsonDocument parse_measured_json(const std::string& path) {
  return parse_json_text(read_input_file(path), path, MEASURED_JSON_LIMITS);
}

MeasuredFileKind measured_file_kind(std::string_view text) {
  TopLevelKeys keys;
  nlohmann::json::sax_parse(text.begin(), text.end(), &keys, nlohmann::detail::input_format_t::json, /*strict=*/true,
                            /*ignore_comments=*/false);
  MeasuredFileKind found = keys.found();
  if (!keys.root_object()) {
    found.trace = false;
    found.kind.reset();
  }
  return found;
}

}  // namespace trainsim::planner
