#pragma once
// Reading input files with bounds (placeholder: filled in by the input-hardening work of issue 7).

namespace trainsim {}  // namespace trainsim
