#include "families.hpp"

#include "config_error.hpp"

namespace trainsim::planner {
namespace {

using wl::OffloadTarget;
using wl::Schedule;

bool no_offload(const wl::Strategy& s) {
  return s.offload_params == OffloadTarget::NONE && s.offload_optimizer == OffloadTarget::NONE && !s.l2l;
}
bool data_parallel(const wl::Strategy& s) { return s.pp == 1 && s.schedule != Schedule::HYDRA; }
bool pipeline(const wl::Strategy& s, Schedule k) { return s.pp > 1 && s.schedule == k; }

}  // namespace

const std::vector<Family>& families() {
  // Names as the papers call them: ZeRO (Rajbhandari et al. 2020), ZeRO-Offload (Ren et al.
  // 2021), ZeRO-Infinity (Rajbhandari et al. 2021), L2L (Pudipeddi et al. 2020), GPipe (Huang et
  // al. 2019), PipeDream (Narayanan et al. 2019), PipeDream-2BW and PipeDream-Flush (1F1B,
  // Narayanan et al. 2021a), Megatron-LM 3D (Narayanan et al. 2021b), Hydra (Nagrecha and Kumar 2021).
  static const std::vector<Family> list = {
      {"dp", "plain data parallelism (every rank holds the whole model's states), with tp",
       [](const wl::Strategy& s) { return data_parallel(s) && s.zero_stage == 0 && no_offload(s); }},
      {"zero1", "ZeRO stage 1: optimizer states partitioned, no pipeline, no offload",
       [](const wl::Strategy& s) { return data_parallel(s) && s.zero_stage == 1 && no_offload(s); }},
      {"zero2", "ZeRO stage 2: optimizer states and gradients partitioned",
       [](const wl::Strategy& s) { return data_parallel(s) && s.zero_stage == 2 && no_offload(s); }},
      {"zero3", "ZeRO stage 3: all model states partitioned, parameters gathered per submodule",
       [](const wl::Strategy& s) { return data_parallel(s) && s.zero_stage == 3 && no_offload(s); }},
      {"zero-offload", "ZeRO-Offload: optimizer states and step on the CPU, parameters on the GPU",
       [](const wl::Strategy& s) {
         return data_parallel(s) && s.offload_optimizer == OffloadTarget::CPU && s.offload_params == OffloadTarget::NONE;
       }},
      {"zero-infinity-cpu", "ZeRO-Infinity with parameters (and optimizer states) in host memory",
       [](const wl::Strategy& s) {
         return data_parallel(s) && s.offload_params == OffloadTarget::CPU && s.offload_optimizer != OffloadTarget::NVME;
       }},
      {"zero-infinity-nvme", "ZeRO-Infinity with parameters or optimizer states on NVMe",
       [](const wl::Strategy& s) {
         return data_parallel(s) && (s.offload_params == OffloadTarget::NVME || s.offload_optimizer == OffloadTarget::NVME);
       }},
      {"l2l", "L2L: one layer on the GPU at a time, model states in host memory",
       [](const wl::Strategy& s) { return s.l2l; }},
      {"hydra", "Hydra: the whole model on each GPU, shard by shard, spilled through host memory",
       [](const wl::Strategy& s) { return s.schedule == Schedule::HYDRA; }, Schedule::HYDRA},
      {"megatron-3d", "Megatron-LM: tensor x pipeline (1F1B or interleaved) x data parallelism",
       [](const wl::Strategy& s) {
         return s.tp > 1 && (pipeline(s, Schedule::ONE_F_ONE_B) || pipeline(s, Schedule::INTERLEAVED));
       }},
      {"gpipe", "GPipe: all forwards, then all backwards, flush",
       [](const wl::Strategy& s) { return pipeline(s, Schedule::GPIPE); }, Schedule::GPIPE},
      {"1f1b", "PipeDream-Flush (1F1B): one forward, one backward, flush",
       [](const wl::Strategy& s) { return pipeline(s, Schedule::ONE_F_ONE_B); }, Schedule::ONE_F_ONE_B},
      {"interleaved", "interleaved 1F1B: several model chunks per GPU",
       [](const wl::Strategy& s) { return pipeline(s, Schedule::INTERLEAVED); }, Schedule::INTERLEAVED},
      {"pipedream", "PipeDream: 1F1B without a flush, a weight version per micro-batch in flight",
       [](const wl::Strategy& s) { return pipeline(s, Schedule::PIPEDREAM); }, Schedule::PIPEDREAM},
      {"2bw", "PipeDream-2BW: two weight versions, an update every batch, no flush",
       [](const wl::Strategy& s) { return pipeline(s, Schedule::TWO_BW); }, Schedule::TWO_BW},
  };
  return list;
}

std::vector<const Family*> parse_families(const std::string& list, const std::string& flag) {
  std::string valid;
  for (const Family& f : families()) valid += (valid.empty() ? "" : ", ") + std::string(f.name);
  std::vector<const Family*> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    const std::string name = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const Family* found = nullptr;
    for (const Family& f : families()) {
      if (f.name == name) found = &f;
    }
    if (found == nullptr) {
      throw ConfigError(flag, flag, "a comma-separated list of families from: " + valid, "\"" + name + "\"");
    }
    for (const Family* f : out) {
      if (f == found) throw ConfigError(flag, flag, "each family once", "\"" + name + "\" twice");
    }
    out.push_back(found);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string_view family_of(const wl::Strategy& s) {
  for (const Family& f : families()) {
    if (f.contains(s)) return f.name;
  }
  return "other";
}

}  // namespace trainsim::planner
