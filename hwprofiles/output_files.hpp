#pragma once
// Writing result files safely (placeholder: filled in by the output-hardening work of issue 7).

namespace trainsim {}  // namespace trainsim
