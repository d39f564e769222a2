#pragma once
// The only way trainsim-calibrate creates files for benchmarks: inside one directory the user
// named, by plain file names (no '/', no "..", never following a link), removed when the
// ScratchFile goes away, at exit and on SIGINT/SIGTERM/SIGHUP. This is what lets a user point
// the storage benchmark at a data disk without fearing for anything else on it.

#include <string>
#include <string_view>

#include "output_files.hpp"

namespace trainsim::calibrate {

class ScratchDir;

// An open temporary file inside a ScratchDir. Closing (destruction) unlinks it.
class ScratchFile {
 public:
  ScratchFile(ScratchFile&& other) noexcept;
  ScratchFile& operator=(ScratchFile&&) = delete;
  ScratchFile(const ScratchFile&) = delete;
  ~ScratchFile();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  friend class ScratchDir;
  ScratchFile(int dir_fd, int fd, std::string name, std::string path, int slot);
  int dir_fd_;
  int fd_;
  std::string name_;
  std::string path_;
  int slot_;
};

class ScratchDir {
 public:
  // `flag` names the command-line flag for error messages. Throws UsageError when `dir` is not
  // an existing, writable directory.
  ScratchDir(const std::string& dir, const std::string& flag = "--storage-dir");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  // The directory, resolved through links once at construction.
  const std::string& path() const { return path_; }

  // Creates `name` (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600) inside the directory. Throws
  // CalibrationError for a name that could reach outside it ("../x", "/etc/x", "a/b") and for
  // any existing file or link of that name: nothing outside the directory is ever opened for
  // writing, and nothing already there is overwritten.
  ScratchFile create(std::string_view name, int extra_open_flags = 0);

  // A name unique to this process and call: "trainsim-calibrate-<pid>-<n>-<stem>.tmp".
  std::string unique_name(std::string_view stem);

  // True when `name` is a single path component that stays in the directory.
  static bool is_plain_name(std::string_view name);

 private:
  std::string path_;
  int dir_fd_;
  int counter_ = 0;
};

// The cleanup registry and the SIGINT/SIGTERM/SIGHUP handlers (register_cleanup_path,
// remove_registered_files, install_cleanup_signal_handlers, ...) are the shared ones in
// hwprofiles/io/output_files.hpp: one implementation for scratch files, output temporaries and the
// simulator's child.
using trainsim::install_cleanup_signal_handlers;
using trainsim::register_cleanup_path;
using trainsim::remove_registered_files;
using trainsim::unregister_cleanup_path;

}  // namespace trainsim::calibrate
