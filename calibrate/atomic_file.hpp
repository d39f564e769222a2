#pragma once
// Output files appear whole or not at all: each is written to "<name>.tmp-trainsim" beside its
// final path and renamed over it once complete, so an interrupted run leaves no partial results.

#include <string>
#include <vector>

namespace trainsim::calibrate {

// Writes `text` to `path` atomically. Throws CalibrationError on any I/O failure.
void write_file_atomically(const std::string& path, const std::string& text);

// Several files that must all be written or none: each goes to its temporary name first, and the
// renames happen only after every write succeeded.
class AtomicFileSet {
 public:
  AtomicFileSet() = default;
  AtomicFileSet(const AtomicFileSet&) = delete;
  AtomicFileSet& operator=(const AtomicFileSet&) = delete;
  ~AtomicFileSet();  // removes temporaries that were never committed

  void stage(const std::string& path, const std::string& text);
  void commit();

 private:
  struct Staged {
    std::string final_path;
    std::string temp_path;
    int slot;
  };
  std::vector<Staged> staged_;
};

}  // namespace trainsim::calibrate
