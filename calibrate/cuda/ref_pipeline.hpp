#pragma once
// The reference step's pipeline mode: the GPT's layers split over P GPUs (stage 0 also runs the
// embedding, the last stage the final LayerNorm, the tied head, a copy of the embedding and the
// loss), micro-batches moved between neighbours by NCCL send/recv on the compute stream, in
// GPipe's order (Huang et al. 2019: all forwards, then all backwards) or 1F1B's (PipeDream-Flush,
// Narayanan et al. 2021, as Megatron-LM's forward_backward_pipelining_without_interleaving).
// After the backward the tied embedding's gradients are summed between the first and last
// stage (as Megatron-LM does), then each stage runs Adam on its own parameters.

#include <vector>

#include "ref_worker.hpp"

namespace trainsim::calibrate::ref {

// job.pipeline: 1 GPipe, 2 1F1B; job.grad_accum: micro-batches per step.
std::vector<RankOutcome> run_pipeline(const RankJob& job, int stages);

}  // namespace trainsim::calibrate::ref
