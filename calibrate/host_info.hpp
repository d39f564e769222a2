#pragma once
// Facts about the host read from the operating system (/proc, /sys, uname, statvfs): recorded
// as provenance and used for the host and storage sections of the written profile.

#include <nlohmann/json.hpp>
#include <string>

namespace trainsim::calibrate {

struct HostInfo {
  std::string hostname;
  std::string cpu_model;
  int logical_cpus = 0;
  int physical_cores = 0;  // distinct (physical id, core id) pairs; = logical CPUs where not reported
  int sockets = 1;
  double memory_GiB = 0;   // MemTotal
  std::string kernel;      // uname -sr
  std::string os;          // PRETTY_NAME of /etc/os-release
  std::string date_utc;    // ISO 8601, when the run started
  std::string date_day;    // YYYY-MM-DD
  bool avx2 = false;
  bool avx512 = false;     // AVX-512 F, BW and VL: what the CPU-Adam kernel needs
};

HostInfo probe_host();

struct StorageDevice {
  std::string kind;        // "nvme", "virtio", "sata_ssd", "hdd" or "unknown"
  std::string device;      // block device name, e.g. "vda", "nvme0n1"
  std::string filesystem;  // from /proc/mounts, e.g. "ext4"
  double capacity_TB = 0;  // size of the filesystem holding the directory, decimal TB
  double free_bytes = 0;
};

// Which block device holds `dir` and what kind it is (from /sys/dev/block and its name).
StorageDevice probe_storage(const std::string& dir);

nlohmann::ordered_json to_json(const HostInfo& h);
nlohmann::ordered_json to_json(const StorageDevice& s);

}  // namespace trainsim::calibrate
