#include "profiler_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "config_error.hpp"
#include "gzip_file.hpp"
#include "measured_json.hpp"
#include "strict_json.hpp"

namespace trainsim::planner {
namespace {

// The trace is read as a stream (never whole) under stated limits, each an exit-2 error naming the
// file and the limit. Traces of a whole step are tens of MB and some hundred thousand events;
// these allow 20 to 50 times that, and bound the memory a trace can take to a few hundred MB (the
// intervals of 8 Mi events) and the time to a few seconds.
constexpr std::size_t MAX_TRACE_BYTES = std::size_t{1} << 30;  // decoded
constexpr std::size_t MAX_TRACE_EVENTS = std::size_t{8} << 20;
constexpr std::size_t MAX_TRACE_DEPTH = 64;
constexpr std::size_t MAX_EVENT_VALUES = std::size_t{1} << 16;  // in one event, its args included
constexpr std::size_t MAX_KEPT_VALUES = std::size_t{1} << 20;   // in deviceProperties and distributedInfo
constexpr std::size_t MAX_VALUE_BYTES = std::size_t{16} << 20;  // one string or number (kernel names are < 1 KB)
// A GPU event lasts at most a day, and its timestamp (microseconds since some epoch, as CUPTI
// gives it) stays below 1e18: past that a double no longer holds the microsecond.
constexpr double MAX_EVENT_US = 8.64e10;
constexpr double MAX_TIMESTAMP_US = 1e18;

constexpr double MAX_ALLOCATED_BYTES = 16.0 * 1024 * 1024 * 1024 * 1024;

using Interval = std::pair<double, double>;

// An event's ts and dur in microseconds, checked: numbers, finite, a timestamp below 1e18 and a
// duration from 0 to a day; anything else is not a trace of a step (a ts of 1e308 once gave a
// step of "inf s").
template <class Key>
std::pair<double, double> checked_span(const std::string& path, const nlohmann::json& e, const Key& key) {
  for (const char* k : {"ts", "dur"}) {
    if (!e[k].is_number()) throw ConfigError(path, key(k), "a number of microseconds", describe_json(e[k]));
  }
  const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
  if (!std::isfinite(ts) || std::fabs(ts) > MAX_TIMESTAMP_US) {
    throw ConfigError(path, key("ts"), "a finite timestamp below 1e18 microseconds", fmt::format("{}", ts));
  }
  if (!std::isfinite(dur) || dur < 0 || dur > MAX_EVENT_US) {
    throw ConfigError(path, key("dur"), "a duration from 0 to 8.64e10 microseconds (a day)", fmt::format("{}", dur));
  }
  return {ts, dur};
}

double union_length(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  double total = 0, start = 0, end = -std::numeric_limits<double>::infinity();
  for (const auto& [a, b] : v) {
    if (a > end) {
      if (end > start) total += end - start;
      start = a;
      end = b;
    } else {
      end = std::max(end, b);
    }
  }
  if (end > start) total += end - start;
  return total;
}

bool is_nccl(std::string_view name) {
  return name.find("nccl") != std::string_view::npos || name.find("NCCL") != std::string_view::npos;
}

bool contains_lower(std::string_view name, std::string_view lower) {
  if (lower.size() > name.size()) return false;
  for (std::size_t i = 0; i + lower.size() <= name.size(); ++i) {
    std::size_t k = 0;
    while (k < lower.size() && static_cast<char>(std::tolower(static_cast<unsigned char>(name[i + k]))) == lower[k]) ++k;
    if (k == lower.size()) return true;
  }
  return false;
}

}  // namespace

const char* kernel_class(std::string_view name) {
  if (contains_lower(name, "nccl")) return "nccl";
  for (const char* a : {"flash", "fmha", "attention", "sdpa"}) {
    if (contains_lower(name, a)) return "attention";
  }
  if (contains_lower(name, "adam")) return "optimizer";
  if (name.rfind("nvjet", 0) == 0) return "gemm";
  for (const char* g : {"gemm", "cutlass", "xmma", "cublas"}) {
    if (contains_lower(name, g)) return "gemm";
  }
  return "other";
}

namespace {

// What one pass over the trace's events keeps: the GPU intervals, the step's bounds, the peak.
class TraceAccumulator {
 public:
  explicit TraceAccumulator(const std::string& path) : path_(path) {}

  void add(const nlohmann::json& e, std::size_t i) {
    if (!e.is_object()) return;
    auto key = [&](std::string_view k) { return fmt::format("traceEvents[{}].{}", i, k); };
    if (e.contains("cat") && !e["cat"].is_string()) {
      throw ConfigError(path_, key("cat"), "a string (the event's category, e.g. \"kernel\")", describe_json(e["cat"]));
    }
    const std::string cat = e.value("cat", "");
    const std::string name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    const bool gpu = cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
    if (name.rfind("ProfilerStep#", 0) == 0 && e.contains("ts") && e.contains("dur")) {
      const auto [ts, dur] = checked_span(path_, e, key);
      step_begin_ = std::min(step_begin_, ts);
      step_end_ = std::max(step_end_, ts + dur);
    }
    if (name == "[memory]" && e.contains("args") && e["args"].is_object() && e["args"].contains("Total Allocated")) {
      const nlohmann::json& v = e["args"]["Total Allocated"];
      // Bytes on one GPU: from 0 to 16 TiB, past any GPU's memory (hwprofiles allow 16384 GiB).
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > MAX_ALLOCATED_BYTES) {
        throw ConfigError(path_, key("args.Total Allocated"),
                          "a number of bytes from 0 to 16 TiB (the memory one GPU holds)", describe_json(v));
      }
      peak_ = std::max(peak_, v.get<double>());
    }
    if (!gpu) return;
    if (!e.contains("ts") || !e.contains("dur")) {
      throw ConfigError(path_, key(e.contains("ts") ? "dur" : "ts"), "GPU events with numeric ts and dur (microseconds)",
                        "an event without it");
    }
    const auto [ts, dur] = checked_span(path_, e, key);
    const double a = ts * 1e-6, b = a + dur * 1e-6;
    first_ = std::min(first_, a);
    last_ = std::max(last_, b);
    all_.emplace_back(a, b);
    (cat == "kernel" && is_nccl(name) ? nccl_ : compute_).emplace_back(a, b);
    if (cat != "kernel") {
      t_.copy_s += b - a;
      return;
    }
    ++t_.kernels;
    const std::string_view k = kernel_class(name);
    (k == "nccl"        ? t_.nccl_kernel_s
     : k == "attention" ? t_.attention_kernel_s
     : k == "optimizer" ? t_.optimizer_kernel_s
     : k == "gemm"      ? t_.gemm_kernel_s
                        : t_.other_kernel_s) += b - a;
  }

  TraceSummary finish() {
    if (all_.empty()) {
      throw ConfigError(path_, "traceEvents",
                        "GPU activity (kernel, gpu_memcpy or gpu_memset events: a trace with CUDA activities)", "none");
    }
    // GPU activity of no duration (every event "dur": 0) is no step: its shares would be 0 / 0 and
    // its step time 0, which the validation once compared as "+0.0%, ok".
    if (!(last_ > first_)) {
      throw ConfigError(path_, "traceEvents", "GPU activity that lasts (kernel, copy or memset events with a positive duration)",
                        fmt::format("{} GPU event{} of no duration", all_.size(), all_.size() == 1 ? "" : "s"));
    }
    t_.step_from_profiler_step = step_end_ > step_begin_;
    t_.step_s = t_.step_from_profiler_step ? (step_end_ - step_begin_) * 1e-6 : last_ - first_;
    // A step, and the GPU activity around it, of at most a day, as a trace summary holds them
    // (SPAN_S below): events a day apart are not one step.
    for (const auto& [what, seconds] : {std::pair{"GPU activity", last_ - first_}, std::pair{"the ProfilerStep span", t_.step_s}}) {
      if (seconds > MAX_EVENT_US * 1e-6) {
        throw ConfigError(path_, "traceEvents", "one step: GPU activity and ProfilerStep spans of at most a day (86400 s)",
                          fmt::format("{} over {} s", what, seconds));
      }
    }
    t_.compute_busy_s = union_length(std::move(compute_));
    t_.nccl_busy_s = union_length(std::move(nccl_));
    const double busy = union_length(std::move(all_));
    t_.exposed_communication_s = std::max(0.0, busy - t_.compute_busy_s);
    t_.gpu_span_s = last_ - first_;
    t_.idle_fraction = std::clamp(1.0 - busy / t_.gpu_span_s, 0.0, 1.0);
    t_.no_compute_fraction = std::clamp(1.0 - t_.compute_busy_s / t_.gpu_span_s, 0.0, 1.0);
    if (peak_ >= 0) t_.peak_allocated_bytes = peak_;
    return t_;
  }

 private:
  const std::string& path_;
  std::vector<Interval> compute_, nccl_, all_;
  double first_ = std::numeric_limits<double>::infinity(), last_ = -first_;
  double step_begin_ = first_, step_end_ = -first_;
  double peak_ = -1;
  TraceSummary t_;
};

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The decoded text of a trace as nlohmann's parser reads it: one chunk in memory at a time.
// nlohmann's lexer keeps every character it read since the last token (for its messages): 5 GB of
// spaces between two tokens would be kept whole, and so would a gigabyte-long string. So a run of
// whitespace outside strings reaches the parser as one character (JSON does not tell them apart),
// and a string or number longer than MAX_VALUE_BYTES is refused.
struct ChunkSource {
  BoundedFileReader& reader;
  std::string_view chunk;
  std::size_t pos = 0;
  std::size_t before = 0;  // decoded bytes in the chunks already consumed
  bool in_string = false, escaped = false;
  std::size_t value_bytes = 0;  // of the string or number being read

  bool fill() {
    if (pos < chunk.size()) return true;
    before += chunk.size();
    chunk = reader.next();
    pos = 0;
    return !chunk.empty();
  }
  std::size_t offset() const { return before + pos; }

  // Past the character the parser has just read, to the next one it should see.
  void advance() {
    const char c = chunk[pos++];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      count_value_byte();
      return;
    }
    if (c == '"') {
      in_string = true;
      value_bytes = 0;
    } else if (is_space(c)) {
      while (fill() && is_space(chunk[pos])) ++pos;
      value_bytes = 0;
    } else if (c == '[' || c == ']' || c == '{' || c == '}' || c == ',' || c == ':') {
      value_bytes = 0;
    } else {
      count_value_byte();
    }
  }

  void count_value_byte() {
    if (++value_bytes > MAX_VALUE_BYTES) {
      throw ConfigError(reader.path(), "(document)",
                        fmt::format("strings and numbers of at most {} MiB each (the limit on a value's size)", MAX_VALUE_BYTES >> 20),
                        fmt::format("a longer one ending past byte {} of the unpacked text", offset()));
    }
  }
};

class ChunkIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  ChunkIterator() = default;  // the end
  explicit ChunkIterator(ChunkSource* s) : s_(s) {}
  reference operator*() const { return s_->chunk[s_->pos]; }
  ChunkIterator& operator++() {
    s_->advance();
    return *this;
  }
  ChunkIterator operator++(int) {
    ChunkIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const ChunkIterator& o) const { return at_end() == o.at_end(); }
  bool operator!=(const ChunkIterator& o) const { return !(*this == o); }

 private:
  bool at_end() const { return s_ == nullptr || !s_->fill(); }
  ChunkSource* s_ = nullptr;
};

// A small document builder for the parts of the trace that are kept: one event at a time, and the
// top-level deviceProperties and distributedInfo.
class PartBuilder {
 public:
  void value(nlohmann::json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
    } else if (stack_.back()->is_array()) {
      stack_.back()->push_back(std::move(v));
    } else {
      (*stack_.back())[key_] = std::move(v);
    }
  }
  void open(nlohmann::json container) {
    nlohmann::json* slot = nullptr;
    if (stack_.empty()) {
      root_ = std::move(container);
      slot = &root_;
    } else if (stack_.back()->is_array()) {
      stack_.back()->push_back(std::move(container));
      slot = &stack_.back()->back();
    } else {
      slot = &(*stack_.back())[key_];
      *slot = std::move(container);
    }
    stack_.push_back(slot);
  }
  // True when the outermost container closed: the part is complete.
  bool close() {
    stack_.pop_back();
    return stack_.empty();
  }
  void key(std::string k) { key_ = std::move(k); }
  nlohmann::json take() { return std::move(root_); }

 private:
  nlohmann::json root_;
  std::vector<nlohmann::json*> stack_;
  std::string key_;
};

// nlohmann's SAX events for a whole trace, turned into events handed to the accumulator one at a
// time: the document is never built whole (a 583 KB gzip of {"traceEvents":[[],[],...]} once
// built 7 GB of it), and every dimension is bounded: events, nesting, values per event.
class TraceHandler {
 public:
  using json = nlohmann::json;
  TraceHandler(const std::string& path, const ChunkSource& source, TraceAccumulator& acc)
      : path_(path), source_(source), acc_(acc) {}

  bool null() { return scalar(json(nullptr)); }
  bool boolean(bool v) { return scalar(json(v)); }
  bool number_integer(json::number_integer_t v) { return scalar(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return scalar(json(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return scalar(json(v)); }
  bool string(json::string_t& v) { return scalar(json(std::move(v))); }
  bool binary(json::binary_t&) { return scalar(json(nullptr)); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& k) {
    if (part_ != Part::NONE) {
      builder_.key(std::move(k));
    } else if (depth_ == 1) {
      top_key_ = std::move(k);
    }
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    if (e.id == 406) {
      throw ConfigError(path_, event_path(), "numbers within the range of a double (at most about 1.8e308)",
                        fmt::format("a larger one at byte {} of the unpacked text", position));
    }
    throw ConfigError(path_, "(document)", "a Chrome trace JSON document",
                      fmt::format("text that is not JSON (a syntax error at byte {} of the unpacked text)", position));
  }

  bool saw_events() const { return saw_events_; }
  const json& kept(const std::string& key) const {
    static const json none;
    const auto it = kept_.find(key);
    return it == kept_.end() ? none : it->second;
  }

 private:
  enum class Part { NONE, EVENT, KEPT };

  std::string event_path() const {
    return part_ == Part::EVENT ? fmt::format("traceEvents[{}]", events_ - 1) : top_key_.empty() ? "(document)" : top_key_;
  }

  void count_event() {
    if (++events_ > MAX_TRACE_EVENTS) {
      throw ConfigError(path_, "traceEvents", fmt::format("at most {} trace events (the limit on events)", MAX_TRACE_EVENTS),
                        "more");
    }
  }

  void count_value() {
    const std::size_t limit = part_ == Part::EVENT ? MAX_EVENT_VALUES : MAX_KEPT_VALUES;
    if (++part_values_ > limit) {
      throw ConfigError(path_, event_path(), fmt::format("at most {} JSON values in it (the limit on elements)", limit), "more");
    }
  }

  bool scalar(json v) {
    if (part_ != Part::NONE) {
      count_value();
      builder_.value(std::move(v));
    } else if (in_events_ && depth_ == 2) {
      count_event();  // not an object: skipped, but counted
    } else if (depth_ == 0) {
      not_an_object();
    } else if (depth_ == 1 && top_key_ == "traceEvents") {
      saw_events_ = false;  // traceEvents that is not an array
    }
    return true;
  }

  [[noreturn]] void not_an_object() const {
    throw ConfigError(path_, "traceEvents", "an array of trace events (torch.profiler's export_chrome_trace)", "not an object");
  }

  bool open(json container) {
    if (depth_ >= MAX_TRACE_DEPTH) {
      throw ConfigError(path_, event_path(), fmt::format("objects and arrays nested at most {} deep (the limit on depth)", MAX_TRACE_DEPTH),
                        fmt::format("deeper nesting at byte {} of the unpacked text", source_.offset()));
    }
    if (part_ != Part::NONE) {
      count_value();
      builder_.open(std::move(container));
    } else if (depth_ == 0) {
      if (!container.is_object()) not_an_object();
    } else if (depth_ == 1 && top_key_ == "traceEvents") {
      if (container.is_array()) {
        in_events_ = true;
        saw_events_ = true;
      }
    } else if (depth_ == 1 && (top_key_ == "deviceProperties" || top_key_ == "distributedInfo")) {
      start_part(Part::KEPT, std::move(container));
    } else if (in_events_ && depth_ == 2) {
      count_event();
      start_part(Part::EVENT, std::move(container));
    }
    ++depth_;
    return true;
  }

  void start_part(Part part, json container) {
    part_ = part;
    part_values_ = 0;
    count_value();
    builder_.open(std::move(container));
  }

  bool close() {
    --depth_;
    if (part_ != Part::NONE) {
      if (builder_.close()) {
        json done = builder_.take();
        if (part_ == Part::EVENT) {
          acc_.add(done, events_ - 1);
        } else {
          kept_values_ += part_values_;
          if (kept_values_ > MAX_KEPT_VALUES) {
            throw ConfigError(path_, top_key_, fmt::format("at most {} JSON values in it (the limit on elements)", MAX_KEPT_VALUES), "more");
          }
          kept_[top_key_] = std::move(done);
        }
        part_ = Part::NONE;
      }
    } else if (in_events_ && depth_ == 1) {
      in_events_ = false;
    }
    return true;
  }

  const std::string& path_;
  const ChunkSource& source_;
  TraceAccumulator& acc_;
  PartBuilder builder_;
  Part part_ = Part::NONE;
  std::size_t depth_ = 0, events_ = 0, part_values_ = 0, kept_values_ = 0;
  std::string top_key_;
  bool in_events_ = false, saw_events_ = false;
  std::map<std::string, json> kept_;
};

}  // namespace

TraceSummary read_profiler_trace(const std::string& path) {
  BoundedFileReader reader(path, "a readable profiler trace (Chrome trace JSON, optionally gzipped)", MAX_TRACE_BYTES);
  ChunkSource source{reader, {}, 0, 0};
  TraceAccumulator acc(path);
  TraceHandler handler(path, source, acc);
  ChunkIterator first(&source), last;
  nlohmann::json::sax_parse(first, last, &handler, nlohmann::detail::input_format_t::json, /*strict=*/true,
                            /*ignore_comments=*/false);
  if (!handler.saw_events()) {
    throw ConfigError(path, "traceEvents", "an array of trace events (torch.profiler's export_chrome_trace)", "no such array");
  }
  TraceSummary t = acc.finish();
  // What ran it, for the default profile when nothing else says (torch.profiler writes both).
  const nlohmann::json& device = handler.kept("deviceProperties");
  if (device.is_array() && !device.empty() && device[0].is_object() && device[0].contains("name") && device[0]["name"].is_string()) {
    t.gpu = device[0]["name"].get<std::string>();
  }
  const nlohmann::json& dist = handler.kept("distributedInfo");
  if (dist.is_object() && dist.contains("world_size") && dist["world_size"].is_number_integer()) {
    t.world_size = static_cast<int>(std::clamp<std::int64_t>(dist["world_size"].get<std::int64_t>(), 0, 1 << 20));
  }
  return t;
}

namespace {

constexpr const char* TRACE_SUMMARY_KIND = "trainsim.trace_summary";
// A step of at most a day, as a trace's events are (MAX_EVENT_US); the kernel sums may exceed the
// span (overlapping kernels each count), by at most the streams a GPU runs at once.
const NumberRange SPAN_S{0.0, 8.64e4, false, "a number of seconds in (0, 86400]"};
const NumberRange BUSY_S{0.0, 8.64e4, true, "a number of seconds in [0, 86400]"};
const NumberRange SUM_S{0.0, 8.64e6, true, "a number of seconds in [0, 8.64e6]"};
const NumberRange SHARE{0.0, 1.0, true, "a fraction in [0, 1]"};
const NumberRange ALLOCATED{0.0, MAX_ALLOCATED_BYTES, true, "a number of bytes from 0 to 16 TiB (the memory one GPU holds)"};

}  // namespace

nlohmann::ordered_json trace_summary_json(const TraceSummary& t, const std::string& source) {
  nlohmann::ordered_json kernel_s;
  kernel_s["gemm"] = t.gemm_kernel_s;
  kernel_s["attention"] = t.attention_kernel_s;
  kernel_s["other"] = t.other_kernel_s;
  kernel_s["optimizer"] = t.optimizer_kernel_s;
  kernel_s["nccl"] = t.nccl_kernel_s;
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["kind"] = TRACE_SUMMARY_KIND;
  j["source"] = source;
  j["step_s"] = t.step_s;
  j["step_from_profiler_step"] = t.step_from_profiler_step;
  j["gpu_span_s"] = t.gpu_span_s;
  j["compute_busy_s"] = t.compute_busy_s;
  j["nccl_busy_s"] = t.nccl_busy_s;
  j["exposed_communication_s"] = t.exposed_communication_s;
  j["idle_fraction"] = t.idle_fraction;
  j["no_compute_fraction"] = t.no_compute_fraction;
  j["kernels"] = t.kernels;
  j["kernel_s"] = std::move(kernel_s);
  j["copy_s"] = t.copy_s;
  if (t.peak_allocated_bytes) j["peak_allocated_bytes"] = *t.peak_allocated_bytes;
  j["gpu"] = t.gpu;
  j["world_size"] = t.world_size;
  return j;
}

TraceSummary read_trace_summary(const std::string& path) {
  const JsonDocument doc = parse_measured_json(path);
  if (!doc.json.is_object()) {
    throw ConfigError(doc.source, "(document)", "a trace summary (an object of kind \"trainsim.trace_summary\")", describe_json(doc.json));
  }
  StrictObject o(doc.json, doc.source, "");
  const auto version = o.integer("schema_version", 1, 1000);
  if (version != 1) throw ConfigError(doc.source, "schema_version", "schema version 1", std::to_string(version));
  const std::string kind = o.string("kind");
  if (kind != TRACE_SUMMARY_KIND) throw ConfigError(doc.source, "kind", "\"trainsim.trace_summary\"", "\"" + kind + "\"");
  if (o.string("source").empty()) throw ConfigError(doc.source, "source", "the name of the trace it summarizes", "\"\"");
  TraceSummary t;
  t.step_s = o.number("step_s", SPAN_S);
  t.step_from_profiler_step = o.boolean("step_from_profiler_step");
  t.gpu_span_s = o.number("gpu_span_s", SPAN_S);
  t.compute_busy_s = o.number("compute_busy_s", BUSY_S);
  t.nccl_busy_s = o.number("nccl_busy_s", BUSY_S);
  t.exposed_communication_s = o.number("exposed_communication_s", BUSY_S);
  t.idle_fraction = o.number("idle_fraction", SHARE);
  t.no_compute_fraction = o.number("no_compute_fraction", SHARE);
  // A trace with GPU activity has a kernel, copy or memset; read_profiler_trace refuses one without.
  t.kernels = static_cast<std::size_t>(o.integer("kernels", 0, static_cast<std::int64_t>(MAX_TRACE_EVENTS)));
  StrictObject k = o.object("kernel_s");
  t.gemm_kernel_s = k.number("gemm", SUM_S);
  t.attention_kernel_s = k.number("attention", SUM_S);
  t.other_kernel_s = k.number("other", SUM_S);
  t.optimizer_kernel_s = k.number("optimizer", SUM_S);
  t.nccl_kernel_s = k.number("nccl", SUM_S);
  k.finish();
  t.copy_s = o.number("copy_s", SUM_S);
  t.peak_allocated_bytes = o.optional_number("peak_allocated_bytes", ALLOCATED);
  t.gpu = o.string("gpu");
  t.world_size = static_cast<int>(o.integer("world_size", 0, 1 << 20));
  o.finish();
  // What read_profiler_trace derives from the same intervals, so a summary edited by hand that no
  // trace could give is refused: the busy times lie within the span (up to rounding).
  const double slack = 1e-9 * t.gpu_span_s;
  for (const auto& [key, busy] : {std::pair{"compute_busy_s", t.compute_busy_s}, std::pair{"nccl_busy_s", t.nccl_busy_s},
                                  std::pair{"exposed_communication_s", t.exposed_communication_s}}) {
    if (busy > t.gpu_span_s + slack) {
      throw ConfigError(doc.source, key, fmt::format("at most gpu_span_s ({} s): GPU time within the traced span", t.gpu_span_s),
                        fmt::format("{}", busy));
    }
  }
  if (t.kernels == 0 && t.copy_s == 0) {
    throw ConfigError(doc.source, "kernels", "GPU activity (kernels, or copies in copy_s): a trace with CUDA activities", "none");
  }
  return t;
}

}  // namespace trainsim::planner
