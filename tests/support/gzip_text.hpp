#pragma once
// Gzipped fixtures for the tests of the bounded readers: a file that unpacks to gigabytes, built
// in a moment from a few gzip members (gzip readers read concatenated members as one stream).

#include <cstddef>
#include <string>

namespace trainsim::test {

// One gzip member holding `text`.
std::string gzip_member(const std::string& text);

// `head`, then `filler` `repeat` times, then `tail`, gzipped: one member each, the filler's
// compressed once and repeated.
std::string gzipped(const std::string& head, const std::string& filler, std::size_t repeat, const std::string& tail);

}  // namespace trainsim::test
