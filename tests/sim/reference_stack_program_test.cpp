// The data-parallel program of the trainsim-reference stack replays what the reference step does
// (workloads/stacks/training_stacks.md, "trainsim-reference"; calibrate/cuda/ref_param_store.cpp,
// calibrate/reference/storage_states.hpp), where DeepSpeed's ZeRO-3 / ZeRO-Infinity differ: one
// all-gather per whole layer instead of per submodule, one reduce-scatter per unit instead of
// buckets, the host fetch on the collective stream, and only master weights and moments through
// storage (the gradients stay in host memory).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>

#include "cost_model.hpp"
#include "data_parallel_program.hpp"
#include "memory_model.hpp"
#include "model_loader.hpp"
#include "model_params.hpp"
#include "profile_loader.hpp"

namespace trainsim::sim {
namespace {

wl::ModelSpec l24() {
  return wl::load_model_file(std::string(TRAINSIM_SOURCE_DIR) +
                             "/reports/validation/reference/h200x2/h200x2_ref-zero3_L24-h1024_mb4x2.model.json");
}

wl::Strategy infinity_on_storage(wl::StackKind stack) {
  wl::Strategy s;
  s.gpus = 2;
  s.dp = 2;
  s.zero_stage = 3;
  s.micro_batch = 4;
  s.global_batch = 16;
  s.seq = 2048;
  s.offload_params = wl::OffloadTarget::CPU;
  s.offload_optimizer = wl::OffloadTarget::NVME;
  s.stack.kind = stack;
  return s;
}

ProgramSet program(const wl::ModelSpec& m, const wl::Strategy& s) {
  const hw::ClusterProfile p = hw::builtin_profile("h200x4-measured");
  const CostModel costs(p, m.numerics, s.stack);
  return build_data_parallel_program(m, s, costs, wl::estimate_memory(m, s, 4), 4);
}

struct Seen {
  int grads_to_storage = 0, gathers = 0, reduce_scatters = 0, fetches_on_collective_stream = 0, fetches = 0;
  double storage_read_bytes = 0;
};

Seen look(const ProgramSet& ps) {
  Seen v;
  for (const Instruction& in : ps.stages.at(0).instructions) {
    const std::string_view n = in.name;
    if (n == "nvme_write_grads") ++v.grads_to_storage;
    if (n == "nvme_read_optimizer") v.storage_read_bytes += in.bytes;
    if (n == "gather_params") ++v.gathers;
    if (n == "reduce_grads") ++v.reduce_scatters;
    if (n == "h2d_params") {
      ++v.fetches;
      if (in.stream == Stream::COMM) ++v.fetches_on_collective_stream;
    }
  }
  return v;
}

TEST(ReferenceStackProgram, StatesOnlyThroughStorageWholeLayersAndFetchesInOrderWithCollectives) {
  const wl::ModelSpec m = l24();
  const Seen ref = look(program(m, infinity_on_storage(wl::StackKind::TRAINSIM_REFERENCE)));
  const Seen ds = look(program(m, infinity_on_storage(wl::StackKind::DEEPSPEED)));
  // Master weights and both moments (12 bytes per parameter of the rank's shard) are read, in
  // whole chunks of 4 Mi parameters (StorageStates: the file is laid out in whole chunks, the last
  // one read whole too: the measured row's bytes_storage_read, 43 x 48 MiB per rank); no gradient
  // is written to storage. DeepSpeed writes every gradient partition and reads it back.
  const double shard = static_cast<double>(wl::total_params(m)) / 2;
  const double chunk = 4.0 * 1024 * 1024;
  EXPECT_EQ(ref.grads_to_storage, 0);
  EXPECT_DOUBLE_EQ(ref.storage_read_bytes, std::ceil(shard / chunk) * chunk * 12);
  EXPECT_DOUBLE_EQ(ref.storage_read_bytes, 43.0 * 48 * 1024 * 1024);
  EXPECT_GT(ds.grads_to_storage, 0);
  EXPECT_NEAR(ds.storage_read_bytes / (16 * shard), 1.0, 0.01);
  // Whole layers: per micro-batch at most one gather per unit and pass (24 layers, embedding and
  // head, forward and backward, 2 micro-batches); DeepSpeed's four submodules per layer need more.
  EXPECT_LE(ref.gathers, 2 * 2 * (24 + 2));
  EXPECT_GT(ds.gathers, 2 * 2 * (24 + 2));
  // One reduce-scatter per unit, not per bucket of several layers.
  EXPECT_GE(ref.reduce_scatters, 24 + 2);
  EXPECT_LT(ds.reduce_scatters, 24);
  EXPECT_GT(ref.fetches, 0);
  EXPECT_EQ(ref.fetches_on_collective_stream, ref.fetches);
  EXPECT_EQ(ds.fetches_on_collective_stream, 0);
}

// Under --recompute layer the reference acquires each layer once for its recompute and backward
// (calibrate/cuda/ref_model.cpp): as many gathers as without recompute, each gathered layer freed
// once, after the backward. DeepSpeed gathers again for the recompute.
TEST(ReferenceStackProgram, RecomputeUsesTheBackwardsGather) {
  const wl::ModelSpec m = l24();
  wl::Strategy s = infinity_on_storage(wl::StackKind::TRAINSIM_REFERENCE);
  s.offload_params = wl::OffloadTarget::NONE;
  s.offload_optimizer = wl::OffloadTarget::NONE;
  const int plain = look(program(m, s)).gathers;
  s.recompute = wl::Recompute::FULL;
  const ProgramSet ref = program(m, s);
  EXPECT_EQ(look(ref).gathers, plain);
  double gathered = 0, peak = 0;
  for (const Instruction& in : ref.stages.at(0).instructions) {
    for (const MemEffect& e : in.memory) {
      if (e.cls == MemClass::GATHERED) gathered += e.bytes;
    }
    peak = std::max(peak, gathered);
  }
  EXPECT_NEAR(gathered, 0.0, 1.0);
  EXPECT_GT(peak, 0.0);
  s.stack.kind = wl::StackKind::DEEPSPEED;
  wl::Strategy ds_plain = s;
  ds_plain.recompute = wl::Recompute::NONE;
  EXPECT_GT(look(program(m, s)).gathers, look(program(m, ds_plain)).gathers);
}

// The reference casts each unit's fp32 master shard to bf16 before its all-gather (a fetched
// shard arrives in bf16) and adds each scattered gradient shard into its own, both on the
// collective stream (calibrate/cuda/ref_param_store.cpp, gather_into and grads_done): GPU kernels
// in order with the collectives, beside the compute stream's.
TEST(ReferenceStackProgram, CastsBeforeEachGatherAndAccumulatesAfterEachScatterOnTheCollectiveStream) {
  const wl::ModelSpec m = l24();
  wl::Strategy s = infinity_on_storage(wl::StackKind::TRAINSIM_REFERENCE);
  s.offload_params = wl::OffloadTarget::NONE;
  s.offload_optimizer = wl::OffloadTarget::NONE;
  auto kernels = [](const ProgramSet& ps, std::string_view name) {
    int n = 0;
    for (const Instruction& in : ps.stages.at(0).instructions) {
      if (in.name == name) {
        EXPECT_EQ(in.kind, InstrKind::COMPUTE);
        EXPECT_EQ(in.stream, Stream::COMM);
        EXPECT_GT(in.seconds, 0.0);
        ++n;
      }
    }
    return n;
  };
  const ProgramSet zero3 = program(m, s);
  const Seen v = look(zero3);
  // The reference's step (calibrate/cuda/ref_param_store.cpp, ref_model.cpp, 26 units: the embedding,
  // 24 layers, the final norm) reduce-scatters every unit after its backward in each micro-batch:
  // 2 x 26 = 52. It gathers the two end units once a step (zero_grads) and a layer only where its
  // slot (unit % 2) does not still hold it from the pass before: 24 forward, then 22 in each later
  // pass, 90 layers, 92 gathers.
  EXPECT_EQ(v.reduce_scatters, 52);
  EXPECT_EQ(v.gathers, 92);
  // Its Adam is the reference's kernel over the rank's shard, without a bf16 copy under ZeRO-3: half
  // of the model's 355,919,872 parameters (the count its model file publishes) at 28 bytes each
  // (fp32 weight, gradient and two moments read, weight and moments written), 4,982,878,208 bytes,
  // at h200x4-measured's reference adam curve between its 2,013,265,920-byte (3,567 GB/s) and
  // 8,053,063,680-byte (3,608 GB/s) points, log-interpolated to 3,593.80 GB/s: 1.38652 ms.
  int adams = 0;
  for (const Instruction& in : zero3.stages.at(0).instructions) {
    if (std::string_view(in.name) == "adam") {
      ++adams;
      EXPECT_NEAR(in.seconds, 1.38652e-3, 1e-4 * 1.38652e-3);
    }
  }
  EXPECT_GT(adams, 0);
  EXPECT_EQ(kernels(zero3, "cast_shard"), v.gathers);
  EXPECT_EQ(kernels(zero3, "accumulate_grad_shard"), v.reduce_scatters);
  const ProgramSet infinity = program(m, infinity_on_storage(wl::StackKind::TRAINSIM_REFERENCE));
  EXPECT_EQ(kernels(infinity, "cast_shard"), 0);
  EXPECT_EQ(kernels(infinity, "accumulate_grad_shard"), look(infinity).reduce_scatters);
  s.stack.kind = wl::StackKind::DEEPSPEED;
  const ProgramSet ds = program(m, s);
  EXPECT_EQ(kernels(ds, "cast_shard") + kernels(ds, "accumulate_grad_shard"), 0);
}

// The row h200x2_ref-zero3_L24-h1024_mb4x2 (reports/validation/reference/h200x2/) measured 2,610,950,144
// collective bytes sent by a rank a step (collective_bytes_sent; ParamStore counts n x bytes x
// (world - 1) per collective of n elements a rank: calibrate/cuda/ref_param_store.cpp). Of two ranks
// each sends half of every unit it gathers, one byte an element in bf16, and half of every unit it
// reduce-scatters, two bytes an element in fp32: 90 layer gathers x 12,596,224 (12h^2 + 13h at
// h 1024) + the end units once, 53,610,496 (50304 x 1024 + 2048 x 1024 + 2 x 1024), and two
// micro-batches x 2 x 355,919,872 (the model's parameters) reduce-scattered. A ring all-gather or
// reduce-scatter of a unit's B bytes sends B (n - 1) / n a rank.
TEST(ReferenceStackProgram, SendsTheMeasuredCollectiveBytes) {
  const wl::ModelSpec m = l24();
  wl::Strategy s = infinity_on_storage(wl::StackKind::TRAINSIM_REFERENCE);
  s.offload_params = wl::OffloadTarget::NONE;
  s.offload_optimizer = wl::OffloadTarget::NONE;
  const ProgramSet zero3 = program(m, s);
  double sent = 0;
  for (const Instruction& in : zero3.stages.at(0).instructions) {
    if (in.kind == InstrKind::COLLECTIVE && in.group == GroupKind::DATA) sent += in.bytes * (s.dp - 1) / s.dp;
  }
  EXPECT_DOUBLE_EQ(sent, 90.0 * 12596224 + 53610496 + 2.0 * 2 * 355919872);
  EXPECT_DOUBLE_EQ(sent, 2610950144.0);
}

// ZeRO-Infinity in the reference: every micro-batch's scattered gradients are added into the GPU
// shard, which is copied to the host once, after the last micro-batch, on the collective stream
// (calibrate/cuda/ref_param_store.cpp, grads_done). DeepSpeed offloads every micro-batch's.
TEST(ReferenceStackProgram, CopiesTheGradientShardToTheHostOnceOnTheCollectiveStream) {
  const wl::ModelSpec m = l24();
  wl::Strategy s = infinity_on_storage(wl::StackKind::TRAINSIM_REFERENCE);
  s.offload_optimizer = wl::OffloadTarget::CPU;
  auto copies = [](const ProgramSet& ps, int* on_comm) {
    int n = 0;
    *on_comm = 0;
    for (const Instruction& in : ps.stages.at(0).instructions) {
      if (std::string_view(in.name) != "d2h_grads") continue;
      ++n;
      if (in.stream == Stream::COMM) ++*on_comm;
    }
    return n;
  };
  int on_comm = 0;
  const ProgramSet ref = program(m, s);
  const int ref_copies = copies(ref, &on_comm);
  EXPECT_EQ(ref_copies, look(ref).reduce_scatters / 2);  // 2 micro-batches
  EXPECT_EQ(on_comm, ref_copies);
  s.stack.kind = wl::StackKind::DEEPSPEED;
  const ProgramSet ds = program(m, s);
  EXPECT_EQ(copies(ds, &on_comm), look(ds).reduce_scatters);
  EXPECT_EQ(on_comm, 0);
}

// The optimizer states stream through storage as the reference's StorageStates::adam_step does
// (calibrate/reference/storage_states.cpp, chunks of 4 Mi parameters: calibrate/cuda/ref_param_store.cpp):
// chunk k's read waits for chunk k - 1's read and chunk k - 2's write (issued with chunk k - 1's
// update, after the wait for chunk k - 2's pair); chunk k's update for its read, the previous update
// and chunk k - 1's write. DeepSpeed's one sub-group (sub_group_size 1e9) has one read and one write.
TEST(ReferenceStackProgram, StorageStatesStreamInLockStepChunks) {
  const wl::ModelSpec m = l24();
  const ProgramSet ref = program(m, infinity_on_storage(wl::StackKind::TRAINSIM_REFERENCE));
  const ProgramSet ds = program(m, infinity_on_storage(wl::StackKind::DEEPSPEED));
  auto ids = [](const ProgramSet& ps, std::string_view name) {
    std::vector<int> out;
    const auto& ins = ps.stages.at(0).instructions;
    for (std::size_t i = 0; i < ins.size(); ++i) {
      if (ins[i].name == name) out.push_back(static_cast<int>(i));
    }
    return out;
  };
  const auto reads = ids(ref, "nvme_read_optimizer"), writes = ids(ref, "nvme_write_optimizer");
  std::vector<int> adams;
  for (int i : ids(ref, "cpu_adam")) adams.push_back(i);
  ASSERT_EQ(reads.size(), 43u);  // ceil(177.96 M / 4 Mi)
  ASSERT_EQ(writes.size(), 43u);
  ASSERT_EQ(adams.size(), 43u);
  const auto& ins = ref.stages.at(0).instructions;
  auto after = [&](int op, int dep) {
    const auto& a = ins.at(static_cast<std::size_t>(op)).after;
    return std::find(a.begin(), a.end(), dep) != a.end();
  };
  for (std::size_t k = 1; k < reads.size(); ++k) {
    EXPECT_TRUE(after(reads[k], reads[k - 1])) << k;
    if (k >= 2) {
      EXPECT_TRUE(after(reads[k], writes[k - 2])) << k;
    }
    EXPECT_FALSE(after(reads[k], writes[k - 1])) << k;
    EXPECT_TRUE(after(adams[k], reads[k])) << k;
    EXPECT_TRUE(after(adams[k], writes[k - 1])) << k;
    EXPECT_TRUE(after(writes[k], adams[k])) << k;
  }
  EXPECT_EQ(ids(ds, "nvme_read_optimizer").size(), 1u);
  EXPECT_EQ(ids(ds, "nvme_write_optimizer").size(), 1u);
}


// Host checkpoints (`trainsim-calibrate reference --recompute layer --checkpoints host`, the
// strategy's offload_activations "cpu"): per micro-batch every layer's checkpoint goes out on the
// D2H stream and comes back on the H2D stream, each the reference's fp32 residual [micro_batch,
// seq, hidden] (reference_activations' stored bytes under recompute), as the reference copies x(0)
// .. x(L-1) on its own two copy streams (calibrate/cuda/ref_checkpoints.hpp): the measured row
// h200x2_ref-zero3-ckpthost_L24-h1024_mb4x2 moved 1610612736 bytes each way per step and rank.
TEST(ReferenceStackProgram, HostCheckpointsMoveEachLayersFp32InputOutAndBack) {
  const wl::ModelSpec m = l24();
  wl::Strategy s = infinity_on_storage(wl::StackKind::TRAINSIM_REFERENCE);
  s.offload_params = wl::OffloadTarget::NONE;
  s.offload_optimizer = wl::OffloadTarget::NONE;
  s.recompute = wl::Recompute::FULL;
  s.offload_activations = wl::ActivationOffload::CPU;
  const ProgramSet ps = program(m, s);
  double out = 0, in = 0;
  int outs = 0, ins = 0;
  for (const Instruction& i : ps.stages.at(0).instructions) {
    const std::string_view n = i.name;
    if (n == "checkpoint_out") {
      ++outs;
      out += i.bytes;
      EXPECT_EQ(i.stream, Stream::D2H);
    }
    if (n == "checkpoint_in") {
      ++ins;
      in += i.bytes;
      EXPECT_EQ(i.stream, Stream::H2D);
    }
  }
  const double x_bytes = 4.0 * 4 * 2048 * 1024;  // fp32, micro_batch 4, seq 2048, hidden 1024
  EXPECT_EQ(outs, 24 * 2 * ps.steps);
  EXPECT_EQ(ins, 24 * 2 * ps.steps);
  EXPECT_DOUBLE_EQ(out / ps.steps, 1610612736.0);
  EXPECT_DOUBLE_EQ(in / ps.steps, 24 * 2 * x_bytes);
}

}  // namespace
}  // namespace trainsim::sim
