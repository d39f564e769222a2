#pragma once
// `trainsim memory`: the memory model's answer for a request, as JSON (public API), a table for
// people and CSV for spreadsheets.

#include <nlohmann/json.hpp>
#include <string>

#include "feasibility.hpp"
#include "memory_model.hpp"
#include "request.hpp"

namespace trainsim::planner {

inline constexpr int MEMORY_SCHEMA_VERSION = 1;

struct MemoryAnswer {
  Request request;
  wl::MemoryEstimate estimate;
  MemoryFit fit;
  bool fits() const { return !request.infeasible_reason && fit.fits(); }
};

MemoryAnswer answer_memory(Request request);

nlohmann::ordered_json memory_json(const MemoryAnswer& a);
std::string memory_table(const MemoryAnswer& a);
std::string memory_csv(const MemoryAnswer& a);

}  // namespace trainsim::planner
