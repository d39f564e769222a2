#pragma once
// Inputs and output checks of the NCCL benchmark. Rank r's input element i is
// (r + 1) * (i % 13 + 1): small integers, so every sum NCCL forms in fp32 is exact and each
// output element has one right value, computed on the device and compared.

#include <cuda_runtime.h>

#include <cstddef>

namespace trainsim::calibrate {

enum class Collective { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, SEND_RECV };

void nccl_fill_input(float* data, std::size_t count, int rank, cudaStream_t s);
// Wrong elements in rank `rank`'s output of `out_count` floats; `chunk` is the per-rank element
// count of all-gather and reduce-scatter. Synchronizes the stream.
std::size_t nccl_count_wrong(Collective op, const float* out, std::size_t out_count, std::size_t chunk, int rank,
                             int ranks, cudaStream_t s);

}  // namespace trainsim::calibrate
