#include "atomic_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "config_error.hpp"
#include "errors.hpp"
#include "output_files.hpp"

namespace trainsim::calibrate {
namespace {

namespace fs = std::filesystem;
constexpr const char* FLAG = "--out";

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

std::string kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a directory";
}

UsageError usage_error(const ConfigError& e) { return UsageError(e.key_path(), e.expected(), e.got()); }

// Every file of `files` in `dir`, through one OutputSet; ConfigError becomes UsageError.
void check_or_write(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files, bool write) {
  OutputSet set;
  for (const auto& [name, text] : files) set.add(FLAG, dir + "/" + name, text);
  try {
    if (write) set.commit();
    else set.check();
  } catch (const ConfigError& e) {
    throw usage_error(e);
  } catch (const OutputError& e) {
    throw CalibrationError(e.what());
  }
}

}  // namespace

std::string check_out_dir(const std::string& dir, const std::vector<std::string>& names) {
  const std::string expected = "a directory, or a path where one can be created";
  if (dir.empty()) throw UsageError(FLAG, expected, "an empty path");
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw UsageError(FLAG, expected, quoted(dir) + " (" + kind_of(st.st_mode) + ")");
    if (::access(dir.c_str(), W_OK) != 0) {
      throw UsageError(FLAG, "a directory this user can write", quoted(dir) + " (" + std::strerror(errno) + ")");
    }
    std::error_code ec;
    const std::string resolved = fs::canonical(dir, ec).string();
    if (ec) throw UsageError(FLAG, expected, quoted(dir) + " (" + ec.message() + ")");
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& n : names) files.emplace_back(n, "");
    check_or_write(resolved, files, false);
    return resolved;
  }
  struct stat link {};
  if (::lstat(dir.c_str(), &link) == 0) {
    throw UsageError(FLAG, expected, quoted(dir) + " (a symbolic link to nothing)");
  }
  // Missing: the nearest existing ancestor must be a directory we can write into.
  const fs::path absolute = fs::absolute(dir).lexically_normal();
  fs::path ancestor = absolute;
  while (ancestor.has_parent_path() && ancestor != ancestor.parent_path()) {
    ancestor = ancestor.parent_path();
    if (::stat(ancestor.c_str(), &st) != 0) continue;
    if (!S_ISDIR(st.st_mode)) {
      throw UsageError(FLAG, expected, quoted(dir) + " (" + ancestor.string() + " is " + kind_of(st.st_mode) + ")");
    }
    if (::access(ancestor.c_str(), W_OK) != 0) {
      throw UsageError(FLAG, expected, quoted(dir) + " (cannot create it in " + ancestor.string() + ": " + std::strerror(errno) + ")");
    }
    break;
  }
  std::string out = absolute.string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

void write_out_dir(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files) {
  // The directories this call creates, outermost first, to remove again if nothing is written.
  std::vector<fs::path> created;
  for (fs::path p = fs::path(dir).lexically_normal(); !p.empty() && p != p.parent_path(); p = p.parent_path()) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(p, ec))) break;
    created.insert(created.begin(), p);
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UsageError(FLAG, "a directory that exists or can be created", quoted(dir) + " (" + ec.message() + ")");
  try {
    check_or_write(dir, files, true);
  } catch (...) {
    for (auto it = created.rbegin(); it != created.rend(); ++it) ::rmdir(it->c_str());
    throw;
  }
}

}  // namespace trainsim::calibrate
