#pragma once
// Per-operation GPU time of one extra step of the reference (TRAINSIM_REF_OP_PROFILE=1, rank 0):
// an event after every kernel or GEMM of the compute stream, the interval since the previous event
// charged to the operation's name. Run after the measured steps so it never touches their timing.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cuda_check.hpp"

namespace trainsim::calibrate::ref {

class OpProfile {
 public:
  OpProfile() = default;
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;
  ~OpProfile() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  void mark(const char* name, cudaStream_t s) {
    if (used_ == events_.size()) {
      cudaEvent_t e = nullptr;
      CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    CUDA_CHECK(cudaEventRecord(events_[used_++], s));
    names_.push_back(name);
  }
  // After the stream synchronized: prints each name's total milliseconds, its calls and its share.
  void print(double step_s) const {
    std::map<std::string, std::pair<double, int>> total;
    for (std::size_t i = 1; i < used_; ++i) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i - 1], events_[i]));
      auto& t = total[names_[i]];
      t.first += ms;
      ++t.second;
    }
    std::vector<std::pair<std::string, std::pair<double, int>>> rows(total.begin(), total.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    std::printf("op profile (rank 0, one step of %.1f ms):\n%-24s %10s %6s %6s\n", step_s * 1e3, "op", "ms", "calls", "share");
    for (const auto& [name, t] : rows) {
      std::printf("%-24s %10.3f %6d %5.1f%%\n", name.c_str(), t.first, t.second, 100.0 * t.first * 1e-3 / step_s);
    }
  }

 private:
  std::vector<cudaEvent_t> events_;
  std::vector<const char*> names_;
  std::size_t used_ = 0;
};

}  // namespace trainsim::calibrate::ref
