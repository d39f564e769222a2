#pragma once
// A strategy's identity: one canonical text naming every field (the same text on every machine
// and build), and a stable 64-bit hash of it. The planner keys its results cache, breaks ranking
// ties and deduplicates work with these; std::hash would do none of that across processes.

#include <cstdint>
#include <string>
#include <string_view>

#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::wl {

// "gpus=16 nodes=1 dp=16 tp=1 pp=1 vpp=1 ... buffers=5e+08,..." : every field, fixed order,
// numbers printed exactly (doubles with 17 significant digits).
std::string canonical_text(const Strategy& s);
// Every field of a model that changes what is computed (names and origins do not).
std::string canonical_text(const ModelSpec& m);

// FNV-1a, 64 bits (Fowler, Noll, Vo): simple, fixed and independent of the standard library.
std::uint64_t fnv1a64(std::string_view text, std::uint64_t seed = 14695981039346656037ULL);
std::uint64_t stable_hash(const Strategy& s);

// 16 lower-case hex digits.
std::string hex64(std::uint64_t v);

}  // namespace trainsim::wl
