#include "result_cache.hpp"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "config_error.hpp"
#include "output_files.hpp"
#include "profile_loader.hpp"
#include "result_json.hpp"
#include "strategy_identity.hpp"

#ifndef TRAINSIM_VERSION
#define TRAINSIM_VERSION "unknown"
#endif

namespace trainsim::planner {
namespace {

constexpr int CACHE_SCHEMA_VERSION = 1;

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

std::optional<nlohmann::json> ResultCache::load_entry(const std::string& key_text) const {
  if (!enabled()) return std::nullopt;
  std::ifstream in(dir_ + "/" + file_name(key_text), std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  try {
    nlohmann::json j = nlohmann::json::parse(text.str());
    if (j.at("schema_version").get<int>() != CACHE_SCHEMA_VERSION || j.at("key").get<std::string>() != key_text) {
      return std::nullopt;
    }
    return j;
  } catch (const std::exception&) {
    return std::nullopt;  // not ours, or damaged: work it out again
  }
}

void ResultCache::store_entry(const std::string& key_text, const char* kind, const char* field, nlohmann::ordered_json value) const {
  if (!enabled()) return;
  nlohmann::ordered_json j;
  j["schema_version"] = CACHE_SCHEMA_VERSION;
  j["kind"] = kind;
  j["key"] = key_text;
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

std::optional<sim::SimResult> ResultCache::load(const std::string& key_text) const {
  const std::optional<nlohmann::json> j = load_entry(key_text);
  if (!j) return std::nullopt;
  try {
    return result_from_json(j->at("result"));
  } catch (const std::exception&) {
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
  const std::optional<nlohmann::json> j = load_entry(key_text);
  if (!j) return out;
  try {
    for (const auto& [text, bound] : j->at("walks").items()) out.emplace(text, bound.get<double>());
  } catch (const std::exception&) {
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
