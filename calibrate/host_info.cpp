#include "host_info.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

namespace trainsim::calibrate {
namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\n\"");
  const auto e = s.find_last_not_of(" \t\n\"");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return trim(line);
}

}  // namespace

HostInfo probe_host() {
  HostInfo h;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) h.hostname = name;
  h.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());

  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::set<std::pair<std::string, std::string>> cores;
  std::set<std::string> sockets;
  std::string physical_id;
  while (std::getline(cpuinfo, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "model name" && h.cpu_model.empty()) h.cpu_model = value;
    if (key == "physical id") {
      physical_id = value;
      sockets.insert(value);
    }
    if (key == "core id") cores.insert({physical_id, value});
    if (key == "flags" && !h.avx2) {
      const std::string flags = " " + value + " ";
      h.avx2 = flags.find(" avx2 ") != std::string::npos && flags.find(" fma ") != std::string::npos &&
               flags.find(" f16c ") != std::string::npos;
      h.avx512 = flags.find(" avx512f ") != std::string::npos && flags.find(" avx512bw ") != std::string::npos &&
                 flags.find(" avx512vl ") != std::string::npos;
    }
  }
  h.physical_cores = cores.empty() ? h.logical_cpus : static_cast<int>(cores.size());
  h.sockets = sockets.empty() ? 1 : static_cast<int>(sockets.size());

  std::ifstream meminfo("/proc/meminfo");
  while (std::getline(meminfo, line)) {
    if (line.starts_with("MemTotal:")) {
      std::istringstream s(line.substr(9));
      double kib = 0;
      s >> kib;
      h.memory_GiB = kib / (1024.0 * 1024.0);
    }
  }

  utsname u{};
  if (uname(&u) == 0) h.kernel = std::string(u.sysname) + " " + u.release;
  std::ifstream os("/etc/os-release");
  while (std::getline(os, line)) {
    if (line.starts_with("PRETTY_NAME=")) h.os = trim(line.substr(12));
  }

  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  h.date_utc = buf;
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm);
  h.date_day = buf;
  return h;
}

StorageDevice probe_storage(const std::string& dir) {
  StorageDevice s;
  s.kind = "unknown";
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0) {
    // /sys/dev/block/MAJ:MIN is a link into /sys/devices/...; a partition's parent is the disk.
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path link = "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
    fs::path real = fs::canonical(link, ec);
    if (!ec) {
      if (fs::exists(real / "partition")) real = real.parent_path();
      s.device = real.filename().string();
      const std::string rotational = read_first_line((real / "queue" / "rotational").string());
      const std::string real_text = real.string();
      if (s.device.starts_with("nvme")) {
        s.kind = "nvme";
      } else if (s.device.starts_with("vd") || real_text.find("virtio") != std::string::npos) {
        s.kind = "virtio";
      } else if (rotational == "1") {
        s.kind = "hdd";
      } else if (s.device.starts_with("sd")) {
        s.kind = "sata_ssd";
      }
    }
  }
  std::ifstream mounts("/proc/mounts");
  std::string dev, mnt, fstype, rest;
  std::size_t best = 0;
  const std::string canonical = std::filesystem::weakly_canonical(dir).string();
  while (mounts >> dev >> mnt >> fstype && std::getline(mounts, rest)) {
    const bool inside = canonical == mnt || canonical.starts_with(mnt == "/" ? mnt : mnt + "/");
    if (inside && mnt.size() >= best) {
      best = mnt.size();
      s.filesystem = fstype;
    }
  }
  struct statvfs vfs {};
  if (statvfs(dir.c_str(), &vfs) == 0) {
    s.capacity_TB = static_cast<double>(vfs.f_blocks) * static_cast<double>(vfs.f_frsize) / 1e12;
    s.free_bytes = static_cast<double>(vfs.f_bavail) * static_cast<double>(vfs.f_frsize);
  }
  return s;
}

nlohmann::ordered_json to_json(const HostInfo& h) {
  return {{"hostname", h.hostname},         {"cpu", h.cpu_model},       {"logical_cpus", h.logical_cpus},
          {"physical_cores", h.physical_cores}, {"sockets", h.sockets},   {"memory_GiB", h.memory_GiB},
          {"kernel", h.kernel},             {"os", h.os},               {"avx2", h.avx2},
          {"avx512", h.avx512}};
}

nlohmann::ordered_json to_json(const StorageDevice& s) {
  return {{"kind", s.kind},
          {"device", s.device},
          {"filesystem", s.filesystem},
          {"capacity_TB", s.capacity_TB},
          {"free_bytes", s.free_bytes}};
}

}  // namespace trainsim::calibrate
