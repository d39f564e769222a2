#include "result_cache.hpp"

#include <elf.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>

#include "config_error.hpp"
#include "input_file.hpp"
#include "output_files.hpp"
#include "profile_loader.hpp"
#include "result_json.hpp"
#include "strict_json.hpp"
#include "strategy_identity.hpp"

#ifndef TRAINSIM_VERSION
#define TRAINSIM_VERSION "unknown"
#endif

namespace trainsim::planner {
namespace {

constexpr int CACHE_SCHEMA_VERSION = 2;  // 2: entries carry a checksum

// An entry is a few kilobytes (a walks file, a group's bounds: some hundred); anything larger is not
// one of ours, and is never read whole.
constexpr std::size_t MAX_ENTRY_BYTES = 64 << 20;

// 128 bits over the key and the stored value (as nlohmann dumps it parsed: keys sorted, numbers
// as they round-trip), so that an entry edited by hand or damaged on disk is told from one written.
std::string checksum(const std::string& key_text, const nlohmann::json& value) {
  const std::string text = key_text + "\n" + value.dump();
  return wl::hex64(wl::fnv1a64(text)) + wl::hex64(wl::fnv1a64(text, 0x84222325cbf29ce4ULL));
}

// An entry not used, said once per file on stderr (threads may find several at once).
void say_not_used(const std::string& path, const std::string& why) {
  static std::mutex lock;
  const std::lock_guard<std::mutex> hold(lock);
  std::cerr << "trainsim: warning: results cache entry " << path << " not used (" << why << "): worked out again\n";
}

// What makes a cached result impossible for its strategy, if anything: a step that is not a
// positive finite time, one below the bound the sweep proved for it, tokens/s that do not match
// the step, peaks that are not bytes.
std::optional<std::string> inconsistency(const sim::SimResult& r, const wl::Strategy& s, double lower_bound_s) {
  if (!r.simulated) return std::nullopt;
  if (!std::isfinite(r.step_time_s) || r.step_time_s <= 0) return fmt::format("step_time_s {} is not a positive time", r.step_time_s);
  if (r.step_time_s < lower_bound_s * (1 - 1e-9)) {
    return fmt::format("step_time_s {} is below its proven lower bound {}", r.step_time_s, lower_bound_s);
  }
  const double tokens = static_cast<double>(s.global_batch) * static_cast<double>(s.seq);
  if (!std::isfinite(r.tokens_per_s) || std::fabs(r.tokens_per_s * r.step_time_s - tokens) > 1e-6 * tokens) {
    return fmt::format("tokens_per_s {} does not match {} tokens in a step of {} s", r.tokens_per_s, tokens, r.step_time_s);
  }
  for (double bytes : {r.peak_memory_bytes, r.peak_reserved_bytes, r.host_peak_bytes, r.storage_peak_bytes}) {
    if (!std::isfinite(bytes) || bytes < 0) return fmt::format("a peak of {} bytes", bytes);
  }
  return std::nullopt;
}

// The GNU build ID the linker writes into the executable (a hash of its contents; Debian's
// toolchain writes one by default), read from the loaded program's notes: no file to read.
// Empty where there is none.
std::string gnu_build_id() {
  std::string id;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) -> int {
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const char* at = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
          const char* end = at + ph.p_memsz;
          while (at + sizeof(ElfW(Nhdr)) <= end) {
            const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(at);
            const char* name = at + sizeof(ElfW(Nhdr));
            const char* desc = name + ((note->n_namesz + 3) & ~3U);
            if (desc + note->n_descsz > end) break;
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
              auto& text = *static_cast<std::string*>(out);
              for (std::size_t b = 0; b < note->n_descsz; ++b) text += fmt::format("{:02x}", static_cast<unsigned char>(desc[b]));
              return 1;
            }
            at = desc + ((note->n_descsz + 3) & ~3U);
          }
        }
        return 1;  // the first object is the program itself: look no further
      },
      &id);
  return id;
}

// The build ID, else a hash of the running executable's file (99 MB with debug information:
// a tenth of a second, a fifth of a one-node plan).
std::string executable_hash() {
  if (std::string id = gnu_build_id(); !id.empty()) return id;
  std::ifstream in("/proc/self/exe", std::ios::binary);
  if (!in) return "unknown";
  std::uint64_t h = 14695981039346656037ULL;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    h = wl::fnv1a64(std::string_view(buffer, static_cast<std::size_t>(in.gcount())), h);
  }
  return wl::hex64(h);
}

// mkdir -p; returns the errno of the first failure, 0 on success.
int make_directories(const std::string& path) {
  std::string prefix;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    prefix = path.substr(0, pos);
    if (prefix.empty()) continue;
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) return errno;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno;
  return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

}  // namespace

const std::string& tool_build_id() {
  static const std::string id = std::string("trainsim ") + TRAINSIM_VERSION + " (build " + executable_hash() + ")";
  return id;
}

ResultCache::ResultCache(std::string dir, std::string flag) : dir_(std::move(dir)), flag_(std::move(flag)) {
  if (dir_.empty()) return;
  if (const int err = make_directories(dir_); err != 0) {
    throw ConfigError(flag_, flag_, "a directory trainsim can create or write for its results cache",
                      "\"" + dir_ + "\" (" + std::strerror(err) + ")");
  }
  if (::access(dir_.c_str(), W_OK) != 0) {
    throw ConfigError(flag_, flag_, "a directory this user can write", "\"" + dir_ + "\" (" + std::strerror(errno) + ")");
  }
}

std::string ResultCache::key_text(const Config& c, const sim::SimOptions& options) {
  std::ostringstream k;
  k << "trainsim results cache " << CACHE_SCHEMA_VERSION << "\n"
    << tool_build_id() << "\n"
    << "model " << wl::canonical_text(*c.model) << "\n"
    << "strategy " << wl::canonical_text(c.strategy) << "\n"
    << "options fold_ranks=" << options.fold_ranks << " fold_micro_batches=" << options.fold_micro_batches << "\n"
    << "profile " << hw::profile_to_json(*c.profile).dump() << "\n";
  return k.str();
}

std::string ResultCache::file_name(const std::string& key_text) {
  // 128 bits from two FNV-1a passes with different seeds; the key text inside settles the rest.
  return wl::hex64(wl::fnv1a64(key_text)) + wl::hex64(wl::fnv1a64(key_text, 0x84222325cbf29ce4ULL)) + ".json";
}

std::optional<nlohmann::json> ResultCache::load_entry(const std::string& key_text, const char* field) const {
  if (!enabled()) return std::nullopt;
  const std::string path = dir_ + "/" + file_name(key_text);
  // Through the one input reader: opened without blocking and checked before a byte is read, so a
  // FIFO, a device or a directory put in the cache's place is refused, never waited on or read
  // without end.
  std::optional<std::string> text;
  try {
    text = read_input_file_if_present(path, MAX_ENTRY_BYTES);
  } catch (const ConfigError& e) {
    say_not_used(path, e.got());
    return std::nullopt;
  }
  if (!text) return std::nullopt;  // not cached
  try {
    // The strict parser: its nesting is bounded as every input's is.
    nlohmann::json j = parse_json_text(*text, path).json;
    if (j.at("schema_version").get<int>() != CACHE_SCHEMA_VERSION || j.at("key").get<std::string>() != key_text) {
      return std::nullopt;  // another build's or another key's: a miss, not a fault
    }
    if (j.at("checksum").get<std::string>() != checksum(key_text, j.at(field))) {
      say_not_used(path, "its checksum does not match its contents");
      return std::nullopt;
    }
    return j;
  } catch (const std::exception&) {
    say_not_used(path, "not a trainsim cache entry, or damaged");
    return std::nullopt;
  }
}

void ResultCache::store_entry(const std::string& key_text, const char* kind, const char* field, nlohmann::ordered_json value) const {
  if (!enabled()) return;
  nlohmann::ordered_json j;
  j["schema_version"] = CACHE_SCHEMA_VERSION;
  j["kind"] = kind;
  j["key"] = key_text;
  j["checksum"] = checksum(key_text, nlohmann::json(value));
  j[field] = std::move(value);
  try {
    OutputSet out;
    out.add(flag_, dir_ + "/" + file_name(key_text), j.dump() + "\n");
    out.commit();
  } catch (const std::exception& e) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) std::cerr << "trainsim: warning: results cache not written: " << e.what() << "\n";
  }
}

std::optional<sim::SimResult> ResultCache::load(const std::string& key_text, const wl::Strategy& s, double lower_bound_s) const {
  const std::optional<nlohmann::json> j = load_entry(key_text, "result");
  if (!j) return std::nullopt;
  try {
    sim::SimResult r = result_from_json(j->at("result"));
    if (const std::optional<std::string> why = inconsistency(r, s, lower_bound_s)) {
      say_not_used(dir_ + "/" + file_name(key_text), *why);
      return std::nullopt;
    }
    return r;
  } catch (const std::exception&) {
    say_not_used(dir_ + "/" + file_name(key_text), "not a result trainsim wrote");
    return std::nullopt;
  }
}

void ResultCache::store(const std::string& key_text, const sim::SimResult& r) const {
  store_entry(key_text, "trainsim.cache", "result", result_json(r));
}

std::string ResultCache::walks_key_text(const wl::ModelSpec& m, const hw::ClusterProfile& p, int gpus, std::int64_t global_batch,
                                        std::int64_t seq, const std::string& scope) {
  std::ostringstream k;
  k << "trainsim walks cache " << CACHE_SCHEMA_VERSION << "\n"
    << tool_build_id() << "\n"
    << "model " << wl::canonical_text(m) << "\n"
    << "gpus " << gpus << " global_batch " << global_batch << " seq " << seq << " scope " << scope << "\n"
    << "profile " << hw::profile_to_json(p).dump() << "\n";
  return k.str();
}

std::map<std::string, double> ResultCache::load_walks(const std::string& key_text) const {
  std::map<std::string, double> out;
  const std::optional<nlohmann::json> j = load_entry(key_text, "walks");
  if (!j) return out;
  try {
    for (const auto& [text, bound] : j->at("walks").items()) {
      const double b = bound.get<double>();
      if (!std::isfinite(b)) throw std::runtime_error("a walk bound that is not a finite time");
      out.emplace(text, b);
    }
  } catch (const std::exception&) {
    say_not_used(dir_ + "/" + file_name(key_text), "not the walks trainsim wrote");
    out.clear();
  }
  return out;
}

void ResultCache::store_walks(const std::string& key_text, const std::map<std::string, double>& walks) const {
  nlohmann::ordered_json w = nlohmann::ordered_json::object();
  for (const auto& [text, bound] : walks) w[text] = bound;
  store_entry(key_text, "trainsim.walks", "walks", std::move(w));
}

std::string ResultCache::default_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/trainsim";
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/trainsim";
  return {};
}

}  // namespace trainsim::planner
