#pragma once
// One thread per rank for the reference step's multi-GPU modes. When a rank throws, every NCCL
// communicator is aborted (ncclCommAbort, which ends the operations in flight), so the ranks
// blocked in a collective or a send/recv with the failed one return with an error instead of
// waiting forever; the first rank's error is rethrown. (Without the abort, one failing rank leaves
// the others blocked in NCCL for good.)

#include <nccl.h>

#include <barrier>
#include <functional>
#include <vector>

#include "ref_worker.hpp"

namespace trainsim::calibrate::ref {

std::vector<RankOutcome> run_on_threads(int world, std::vector<ncclComm_t>& comms,
                                        const std::function<RankOutcome(int, std::barrier<>&)>& fn);

}  // namespace trainsim::calibrate::ref
