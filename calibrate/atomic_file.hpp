#pragma once
// trainsim-calibrate's outputs in --out, through the shared OutputSet
// (hwprofiles/io/output_files.hpp): every file is checked before any is written, written to a fresh
// temporary beside its target, synced, and all are renamed into place together at the end, so an
// interrupted or failed run leaves no partial results, and two runs into one --out leave each
// file whole (from one run or the other).

#include <string>
#include <utility>
#include <vector>

namespace trainsim::calibrate {

// Checks --out before anything is measured: an existing directory (a symbolic link to one is
// resolved here, once), or a missing path whose nearest existing ancestor is a directory this
// user can write (it is created only when the results are written). The files `names` inside an
// existing --out must be absent or regular files (see OutputSet). Throws UsageError naming
// --out. Returns the directory as an absolute path, resolved when it exists.
std::string check_out_dir(const std::string& dir, const std::vector<std::string>& names);

// Creates `dir` if missing and writes every (file name, text) inside it, all or none. A refused
// target is a UsageError naming --out; a failed write is a CalibrationError. Directories created
// here are removed again when nothing could be written.
void write_out_dir(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace trainsim::calibrate
