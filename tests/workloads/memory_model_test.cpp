#include "memory_model.hpp"

#include <gtest/gtest.h>

#include "model_loader.hpp"
#include "model_params.hpp"
#include "printed_digits.hpp"

namespace trainsim::wl {
namespace {

Strategy data_parallel(int gpus, int zero) {
  Strategy s;
  s.gpus = gpus;
  s.dp = gpus;
  s.zero_stage = zero;
  s.micro_batch = 1;
  s.global_batch = gpus;
  return s;
}

TEST(Placement, ZeroInfinityNvmeKeepsEveryModelStateOnStorage) {
  const ModelSpec m = builtin_model("megatron-1t");
  Strategy s = data_parallel(16, 3);
  s.seq = 2048;
  s.offload_params = OffloadTarget::NVME;
  s.offload_optimizer = OffloadTarget::NVME;
  const MemoryEstimate est = estimate_memory(m, s, 16);
  const StageMemory& st = est.stages[0];
  EXPECT_EQ(st.params_at.gpu + st.grads_at.gpu + st.optimizer_at.gpu, 0.0);
  EXPECT_DOUBLE_EQ(st.nvme_bytes(), st.model_states_bytes());
  // 16 ranks on one node: the node's NVMe holds the whole model's 16 bytes per parameter
  // (plus at most 16 bytes of partition padding per rank).
  EXPECT_NEAR(est.peak_node.nvme_bytes, 16.0 * total_params(m), 16.0 * 16);
}

TEST(Placement, ZeroOffloadMovesGradientsAndOptimizerToTheHost) {
  const ModelSpec m = builtin_model("gpt-13b");
  Strategy s = data_parallel(1, 2);
  s.seq = 1024;
  s.offload_optimizer = OffloadTarget::CPU;
  const MemoryEstimate est = estimate_memory(m, s, 1);
  const StageMemory& st = est.stages[0];
  EXPECT_DOUBLE_EQ(st.params_at.gpu, 2.0 * total_params(m));  // fp16 parameters stay on the GPU
  EXPECT_DOUBLE_EQ(st.grads_at.cpu + st.optimizer_at.cpu, 14.0 * total_params(m));
}

TEST(Buffers, ZeroInfinityWorkingMemoryMatchesItsTable) {
  // ZeRO-Infinity Table 1 (seeds), "Working Mem. per GPU, Model State" in GiB: fp16 parameters
  // and gradients of the largest operator, 4 bytes per parameter.
  const std::pair<const char*, const char*> rows[] = {
      {"zinf-0.1t", "1.95"}, {"zinf-0.5t", "6.25"}, {"zinf-1t", "9.77"}, {"zinf-10t", "64.00"}, {"zinf-100t", "400.00"}};
  for (const auto& [name, printed] : rows) {
    const double gib = 4.0 * largest_operator_params(builtin_model(name)) / 1073741824.0;
    EXPECT_TRUE(test::agrees_to_printed_digit(gib, printed)) << name << ": " << gib << " vs " << printed;
  }
}

TEST(Buffers, ZeroThreeGathersTwoConsecutiveUnits) {
  const ModelSpec m = builtin_model("megatron-1t");
  Strategy s = data_parallel(16, 3);
  s.seq = 2048;
  const StageMemory st = estimate_memory(m, s, 16).stages[0];
  // The MLP input (norm + 25600 x 102400 weights + bias) beside the MLP output (102400 x 25600 + bias).
  const double mlp_in = 2 * 25600.0 + 25600.0 * 102400 + 102400, mlp_out = 102400.0 * 25600 + 25600;
  EXPECT_DOUBLE_EQ(st.buffers.gathered_params_bytes, 2.0 * (mlp_in + mlp_out));
  EXPECT_DOUBLE_EQ(st.buffers.comm_bucket_bytes, 2.0 * 5e8);
  // GPT-2 1.5B: the last MLP output beside the head, which re-gathers the tied embedding.
  const StageMemory small = estimate_memory(builtin_model("gpt2-1.5b"), s, 16).stages[0];
  const double head = 2 * 1600.0 + 50257.0 * 1600, last_mlp_out = 6400.0 * 1600 + 1600;
  EXPECT_DOUBLE_EQ(small.buffers.gathered_params_bytes, 2.0 * (head + last_mlp_out));
}

TEST(Buffers, PipeDreamStashesOneWeightVersionPerInFlightMicroBatch) {
  const ModelSpec m = builtin_model("gpt3-175b");
  Strategy s;
  s.gpus = 8;
  s.pp = 8;
  s.dp = 1;
  s.seq = 2048;
  s.micro_batch = 1;
  s.global_batch = 16;
  s.schedule = Schedule::PIPEDREAM;
  // Stage 1 holds 12 of the 96 layers, each 12 h^2 + 13 h = 1,812,099,072 parameters at h = 12288:
  // 21,745,188,864 parameters, one fp16 version 43,490,377,728 bytes. Under PipeDream's weight
  // stashing (Narayanan et al. 2019) stage 1 of 8 keeps p - i = 7 versions, 6 beyond the current one:
  // 260,942,266,368 bytes; 2BW keeps 2, one beyond.
  const double version = 43490377728.0;
  const MemoryEstimate pd = estimate_memory(m, s, 8);
  EXPECT_DOUBLE_EQ(pd.stages[1].params_at.gpu, version);
  EXPECT_DOUBLE_EQ(pd.stages[1].buffers.weight_stash_bytes, 260942266368.0);  // 7 versions
  s.schedule = Schedule::TWO_BW;
  const MemoryEstimate bw = estimate_memory(m, s, 8);
  EXPECT_DOUBLE_EQ(bw.stages[1].buffers.weight_stash_bytes, version);  // 2 versions
  s.schedule = Schedule::ONE_F_ONE_B;
  EXPECT_EQ(estimate_memory(m, s, 8).stages[1].buffers.weight_stash_bytes, 0.0);
}

TEST(Activations, CheckpointOffloadMovesEveryCheckpointAndKeepsTwoLayersOfBuffers) {
  const ModelSpec m = builtin_model("megatron-1t");
  Strategy s = data_parallel(16, 3);
  s.seq = 2048;
  s.recompute = Recompute::FULL;
  s.offload_activations = ActivationOffload::CPU;
  const ActivationMemory a = estimate_memory(m, s, 16).stages[0].activations;
  const double sbh = 2048.0 * 25600;
  const double checkpoint = 2 * sbh;  // 2sbh per layer
  EXPECT_DOUBLE_EQ(a.checkpoint_bytes, 128 * checkpoint);
  EXPECT_DOUBLE_EQ(a.at.cpu, 128 * checkpoint);  // all on the host at the end of the forward
  // Outside the layers (Korthikanti et al. Sec. 4.3): the embedding's dropout mask, sbh, and the
  // output layer norm's input and output, 2sbh each: 5sbh. Beside them on the GPU, two layers'
  // checkpoints as the write-out and prefetch buffers: 9sbh.
  EXPECT_DOUBLE_EQ(a.stored_bytes, 5 * sbh);
  EXPECT_DOUBLE_EQ(a.at.gpu, 9 * sbh);
  EXPECT_DOUBLE_EQ(a.working_bytes, 2048.0 * 25600 * (34 + 5 * 160 * 2048.0 / 25600));
}

TEST(PerNode, StagesOnDifferentNodesAreSummedSeparately) {
  const ModelSpec m = builtin_model("gpt3-175b");
  Strategy s;
  s.gpus = 16;
  s.pp = 2;
  s.dp = 8;
  s.zero_stage = 1;
  s.offload_optimizer = OffloadTarget::CPU;
  s.seq = 2048;
  s.micro_batch = 1;
  s.global_batch = 16;
  const MemoryEstimate est = estimate_memory(m, s, 8);
  // Node 0 holds stage 0's eight ranks, node 1 stage 1's; the larger one is reported. Worked by
  // hand: a layer is 12h^2 + 13h = 1,812,099,072 parameters at h = 12288 (QKV, projection and the
  // two MLP products with their biases, two LayerNorms); stage 0 holds 48 layers, the word embedding
  // (50257 x 12288 = 617,558,016) and the positions (2048 x 12288 = 25,165,824): 87,623,479,296,
  // more than stage 1's 48 layers, final norm and tied head. Each of its ranks keeps on the host its
  // eighth of the fp32 optimizer states (12 bytes a parameter, ZeRO Sec. 3.1) and of the fp16
  // gradients (2 bytes, ZeRO-Offload Sec. 4.1): 14 x 87,623,479,296 / 8 bytes, eight ranks a node.
  const double stage0_params = 87623479296.0;
  EXPECT_DOUBLE_EQ(est.peak_node.cpu_bytes, 8 * 14 * stage0_params / 8);
  EXPECT_EQ(est.peak_node_index, 0);
  EXPECT_DOUBLE_EQ(est.stages[0].params_on_rank, stage0_params);
}

}  // namespace
}  // namespace trainsim::wl
