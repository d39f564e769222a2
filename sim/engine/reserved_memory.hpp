#pragma once
// What PyTorch's caching allocator would reserve for a simulated GPU's memory events: the replay's
// allocate and free events, in time order, each allocation one request to the allocator model
// (caching_allocator.hpp) on the stream of the op that makes it. Checked against the measured rows'
// `max_memory_reserved` by `trainsim validate` (reports/validation/report.md, peak_reserved rows).
//
// The replay's events stand for groups of tensors (a layer's saved activations of one micro-batch,
// a gathered unit), not for single tensors, so the allocator sees fewer, larger requests than
// PyTorch's does; and a free names only its class and bytes. A free is matched to the latest live
// allocation of its class with the same bytes; without one it returns that class's latest
// allocations until its bytes are covered, and what the last one had beyond them stays allocated as a
// new request on the stream the last one was requested on (a group freed in parts).

#include <vector>

#include "task_graph.hpp"

namespace trainsim::sim {

struct AllocatorEvent {
  double time = 0;
  double bytes = 0;  // + allocate, - free
  MemClass cls = MemClass::PARAMS;
  Stream stream = Stream::COMPUTE;
};

// The reserved peak in bytes. Events apply in the allocated timeline's order (applies_before,
// memory_timeline.hpp).
double caching_allocator_reserved_peak(std::vector<AllocatorEvent> events);

}  // namespace trainsim::sim
