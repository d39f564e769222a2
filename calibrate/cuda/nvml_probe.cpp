#include "nvml_probe.hpp"

#include <dlfcn.h>

namespace trainsim::calibrate {
namespace {

// The few NVML entry points used, declared from the NVML API reference (nvml.h is not part of
// the CUDA toolkit here): every function returns nvmlReturn_t (0 = NVML_SUCCESS); a device
// handle is an opaque pointer; nvmlEnableState_t 1 = enabled; nvmlIntNvLinkDeviceType_t
// 0 = GPU, 1 = IBM NPU, 2 = NVSwitch, 0xff = unknown.
using NvmlDevice = void*;
using InitFn = int (*)();
using ShutdownFn = int (*)();
using DriverVersionFn = int (*)(char*, unsigned);
using HandleByBusIdFn = int (*)(const char*, NvmlDevice*);
using LinkStateFn = int (*)(NvmlDevice, unsigned, int*);
using RemoteTypeFn = int (*)(NvmlDevice, unsigned, int*);
constexpr unsigned MAX_NVLINKS = 18;  // NVML_NVLINK_MAX_LINKS on Hopper

template <class Fn>
Fn symbol(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

}  // namespace

NvmlFacts probe_nvml(const std::string& pci_bus_id) {
  NvmlFacts facts;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    facts.error = "libnvidia-ml.so.1 not found";
    return facts;
  }
  auto init = symbol<InitFn>(lib, "nvmlInit_v2");
  auto shutdown = symbol<ShutdownFn>(lib, "nvmlShutdown");
  auto driver = symbol<DriverVersionFn>(lib, "nvmlSystemGetDriverVersion");
  auto by_bus = symbol<HandleByBusIdFn>(lib, "nvmlDeviceGetHandleByPciBusId_v2");
  auto link_state = symbol<LinkStateFn>(lib, "nvmlDeviceGetNvLinkState");
  auto remote_type = symbol<RemoteTypeFn>(lib, "nvmlDeviceGetNvLinkRemoteDeviceType");
  if (init == nullptr || shutdown == nullptr || init() != 0) {
    facts.error = "nvmlInit failed";
    dlclose(lib);
    return facts;
  }
  char version[96] = {};
  if (driver != nullptr && driver(version, sizeof(version)) == 0) facts.driver_version = version;
  NvmlDevice dev = nullptr;
  if (by_bus != nullptr && link_state != nullptr && by_bus(pci_bus_id.c_str(), &dev) == 0) {
    int active = 0;
    int kind = -1;
    for (unsigned link = 0; link < MAX_NVLINKS; ++link) {
      int state = 0;
      if (link_state(dev, link, &state) != 0 || state != 1) continue;
      ++active;
      int t = -1;
      if (kind == -1 && remote_type != nullptr && remote_type(dev, link, &t) == 0) kind = t;
    }
    facts.active_nvlinks = active;
    facts.remote = active == 0 ? "none" : kind == 2 ? "switch" : kind == 0 ? "gpu" : "unknown";
  } else {
    facts.error = "NVML could not find the device " + pci_bus_id;
  }
  shutdown();
  dlclose(lib);
  return facts;
}

}  // namespace trainsim::calibrate
