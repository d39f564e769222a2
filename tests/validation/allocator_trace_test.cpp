// The caching-allocator model (sim/caching_allocator.hpp) against the allocator's own record of the
// measured rows' configurations (validation call 49, reports/validation/allocator/): every request
// and free PyTorch's caching allocator served from the build to the end of the timed steps, replayed
// through the model from the segments it held at the start, must give the rank's measured
// `max_memory_reserved` over the timed steps within 1% (the call's rule, written before it ran:
// reports/validation/README.md, row 49). The model knows nothing of the records but their requests.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "caching_allocator.hpp"

namespace trainsim::sim {
namespace {

namespace fs = std::filesystem;

constexpr double TOLERANCE = 0.01;

std::string gunzip(const fs::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw std::runtime_error("cannot open " + path.string());
  std::string text;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) text.append(buf, static_cast<std::size_t>(n));
  gzclose(f);
  if (n < 0) throw std::runtime_error("read error in " + path.string());
  return text;
}

struct Replayed {
  double predicted_reserved = 0, measured_reserved = 0;
};

// Replays one record: the starting segments, then each request ("alloc") and each block given back
// ("free_completed": when the allocator may hand it out again, after the streams that used it).
Replayed replay(const nlohmann::json& doc) {
  CachingAllocator a;
  std::map<std::uint64_t, CachingAllocator::BlockId> by_address;
  for (const auto& seg : doc.at("segments_at_start")) {
    std::vector<std::pair<CachingAllocator::Bytes, bool>> blocks;
    std::vector<std::uint64_t> allocated_at;
    std::uint64_t address = seg.at("address");
    for (const auto& b : seg.at("blocks")) {
      blocks.emplace_back(b.at("size").get<std::uint64_t>(), b.at("allocated").get<bool>());
      if (b.at("allocated").get<bool>()) allocated_at.push_back(address);
      address += b.at("size").get<std::uint64_t>();
    }
    const auto ids = a.adopt_segment(seg.at("stream").get<std::int64_t>(), seg.at("segment_type") == "small", blocks);
    for (std::size_t i = 0; i < ids.size(); ++i) by_address[allocated_at[i]] = ids[i];
  }
  const auto& actions = doc.at("actions");
  const auto& ev = doc.at("events");
  const auto& act = ev.at("action");
  const auto& addr = ev.at("addr");
  const auto& size = ev.at("size");
  const auto& stream = ev.at("stream");
  for (std::size_t i = 0; i < act.size(); ++i) {
    const int code = act[i].get<int>();
    if (code < 0) continue;
    const std::string what = actions.at(static_cast<std::size_t>(code));
    const std::uint64_t at = addr[i].get<std::uint64_t>();
    if (what == "alloc") {
      by_address[at] = a.malloc(size[i].get<std::uint64_t>(), stream[i].get<std::int64_t>());
    } else if (what == "free_completed") {
      const auto it = by_address.find(at);
      if (it == by_address.end()) throw std::runtime_error("free_completed of an address never allocated");
      a.free(it->second);
      by_address.erase(it);
    }
  }
  return {static_cast<double>(a.peak_reserved()), doc.at("measured").at("max_memory_reserved_timed").get<double>()};
}

std::vector<fs::path> records() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(TRAINSIM_SOURCE_DIR) / "reports/validation/allocator")) {
    const std::string name = e.path().filename().string();
    if (name.find(".allocator.rank") != std::string::npos && name.ends_with(".json.gz")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(AllocatorTrace, ReplayedRequestsGiveTheMeasuredReservedPeak) {
  const auto files = records();
  ASSERT_EQ(files.size(), 18u) << "validation call 49's records are missing";
  double worst = 0;
  for (const auto& f : files) {
    const Replayed r = replay(nlohmann::json::parse(gunzip(f)));
    const double err = r.predicted_reserved / r.measured_reserved - 1;
    worst = std::max(worst, std::abs(err));
    EXPECT_LE(std::abs(err), TOLERANCE) << f.filename() << ": replayed " << r.predicted_reserved / (1 << 30) << " GiB, measured "
                                        << r.measured_reserved / (1 << 30) << " GiB";
  }
  RecordProperty("worst_abs_error_pct", std::to_string(100 * worst));
}

}  // namespace
}  // namespace trainsim::sim
