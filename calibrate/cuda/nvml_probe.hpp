#pragma once
// Facts only NVML knows (the driver's version, the NVLinks and what they connect to), read
// through dlopen so the binary does not need libnvidia-ml where it merely starts.

#include <string>

namespace trainsim::calibrate {

struct NvmlFacts {
  std::string driver_version = "unknown";
  int active_nvlinks = -1;            // -1: NVML unavailable
  std::string remote = "unknown";     // "switch", "gpu", "none", "unknown"
  std::string error;                  // why the facts are unknown
};

NvmlFacts probe_nvml(const std::string& pci_bus_id);

}  // namespace trainsim::calibrate
