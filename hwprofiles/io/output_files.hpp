#pragma once
// Writing result files safely, shared by `trainsim` and `trainsim-calibrate`.
//
// The rules (README.md, "Output files"):
// - every output of a command is checked before any is written: its directory exists and is
//   writable; the target is absent or a regular file (a symbolic link to a regular file is
//   replaced, never written through); a directory, device, FIFO, socket or a link to one of
//   them, or a dangling link, is refused; no two outputs name the same file (compared by the
//   directory's device and inode plus the name, and by the target's device and inode when it
//   exists, so "./a", "dir/../a", a hard link and a symbolic link all count as the same file);
// - each output is written to a fresh temporary file beside its target
//   (".<name>.trainsim-XXXXXX", created with O_CREAT|O_EXCL|O_NOFOLLOW, so nothing planted there
//   is ever followed or reused), synced, and only when every temporary is complete are they all
//   renamed into place. rename() is atomic: concurrent writers of one target leave one complete
//   file, never a mixture;
// - temporaries are removed on any error and, through the registry below, on SIGINT, SIGTERM
//   and SIGHUP. Check failures are ConfigError naming the flag (exit 2); a write that fails
//   after the checks passed (disk full, I/O error) is OutputError.

#include <signal.h>
#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace trainsim {

// An output passed its checks but could not be written (disk full, I/O error): not malformed
// input, so not a ConfigError.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A set of files written all together or not at all.
class OutputSet {
 public:
  OutputSet() = default;
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  ~OutputSet();  // removes temporaries that were never renamed into place

  // One output: `flag` names it in messages ("--trace", "-o/--output", "--out"); `hint` is added
  // to the message when the target is not a regular file (e.g. "leave out -o to write to
  // standard output").
  void add(std::string flag, std::string path, std::string text = {}, std::string hint = {});

  // Checks every output and writes nothing. Throws ConfigError naming the first bad one's flag.
  void check();
  // check() again, then writes every output to its temporary and syncs it; nothing is visible
  // at any target yet.
  void prepare();
  // prepare() unless done, then renames every temporary into place (with SIGINT, SIGTERM and
  // SIGHUP held back, so an interrupt lands before the first rename or after the last).
  void commit();

  // The temporaries written by prepare() (absolute paths), for tests.
  std::vector<std::string> temporary_paths() const;

 private:
  struct Entry {
    std::string flag, path, text, hint;
    std::string name;      // the file name inside its directory
    std::string dir_path;  // the directory as resolved at check time (absolute)
    int dir_fd = -1;       // held from check to commit: writes go to the directory that was checked
    dev_t dir_dev = 0;
    ino_t dir_ino = 0;
    bool target_exists = false;
    dev_t target_dev = 0;
    ino_t target_ino = 0;
    std::string temp_name;  // set by prepare()
    int slot = -1;          // its place in the cleanup registry
  };
  void check_one(Entry& e);
  void write_temporary(Entry& e);
  void discard_temporaries() noexcept;
  void close_directories() noexcept;

  std::vector<Entry> entries_;
  bool prepared_ = false;
};

// --- Cleanup on interrupt -----------------------------------------------------------------
// One async-signal-safe registry per process: files to unlink and child processes to kill and
// reap when SIGINT, SIGTERM or SIGHUP arrives. OutputSet registers its temporaries,
// trainsim-calibrate's ScratchDir its scratch files, the simulator (sim/engine/isolation.cpp) its
// forked child.

// Copies `absolute_path` into fixed storage; returns a slot, or -1 when the registry is full or
// the path too long.
int register_cleanup_path(const std::string& absolute_path);
void unregister_cleanup_path(int slot) noexcept;
// Unlinks every registered file now (the signal handler, and tests). Safe to call more than once.
void remove_registered_files() noexcept;

// A child to SIGKILL and reap on interrupt; returns a slot, or -1 when full.
int register_cleanup_child(pid_t pid);
void unregister_cleanup_child(int slot) noexcept;

// Installs SIGINT/SIGTERM/SIGHUP handlers that kill and reap registered children, remove
// registered files, then die of the signal. A signal the process inherited as ignored (nohup, a
// background job) stays ignored. Idempotent.
void install_cleanup_signal_handlers();
// For a command that can answer with what it has found (plan, compare): the first SIGINT or
// SIGTERM only records itself (interrupt_requested() returns it) and the command winds down and
// writes its answer; a second one, or SIGHUP, ends the process as install_cleanup_signal_handlers
// says. Call after install_cleanup_signal_handlers().
void defer_first_interrupt() noexcept;
// The signal a deferred interrupt recorded, or 0.
int interrupt_requested() noexcept;

// In a freshly forked child: forget the parent's registry (without unlinking anything) and give
// the three signals back their dispositions from before install_cleanup_signal_handlers().
void reset_cleanup_in_child() noexcept;

// Holds SIGINT, SIGTERM and SIGHUP back in this thread for its lifetime, so that creating a
// file and registering it (or renaming and unregistering) happen together or not at all.
class HoldInterrupts {
 public:
  HoldInterrupts() noexcept;
  ~HoldInterrupts();
  HoldInterrupts(const HoldInterrupts&) = delete;
  HoldInterrupts& operator=(const HoldInterrupts&) = delete;

 private:
  sigset_t saved_;
};

}  // namespace trainsim
