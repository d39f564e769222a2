// The replay's memory events through the caching-allocator model (sim/engine/reserved_memory.hpp): each
// event one request on its op's stream, frees matched to allocations by class and bytes. Each case's
// reserved peak follows by hand from the allocator's rules (sim/costs/caching_allocator.hpp); the last one
// checks that a simulated step carries it from the simulating child.
#include "reserved_memory.hpp"

#include <gtest/gtest.h>

#include "memory_model.hpp"
#include "model_loader.hpp"
#include "profile_loader.hpp"
#include "simulator.hpp"
#include "strategy_input.hpp"

namespace trainsim::sim {
namespace {

constexpr double MiB = 1 << 20;
constexpr MemClass ACT = MemClass::ACTIVATIONS;

TEST(ReservedMemory, AMidSizedEventReservesTwentyMiB) {
  EXPECT_EQ(caching_allocator_reserved_peak({{0, 5 * MiB, ACT, Stream::COMPUTE}}), 20 * MiB);
}

TEST(ReservedMemory, AFreeTakesTheAllocationOfItsSizeFirst) {
  // 50 MiB on the compute stream, then 30 on the communication stream; a free of 50 returns the 50
  // (not the latest event, whose remainder would be requested again), so the next 50 on the
  // compute stream fits it.
  EXPECT_EQ(caching_allocator_reserved_peak({{0, 50 * MiB, ACT, Stream::COMPUTE},
                                             {1, 30 * MiB, ACT, Stream::COMM},
                                             {2, -50 * MiB, ACT, Stream::COMPUTE},
                                             {3, 50 * MiB, ACT, Stream::COMPUTE}}),
            80 * MiB);
}

TEST(ReservedMemory, AFreeOfSeveralEventsReturnsEachAndTheirSegmentsStaySeparate) {
  // 30 and 50 freed by one event of 80: two free segments, neither holds 80.
  EXPECT_EQ(caching_allocator_reserved_peak({{0, 30 * MiB, ACT, Stream::COMPUTE},
                                             {1, 50 * MiB, ACT, Stream::COMPUTE},
                                             {2, -80 * MiB, ACT, Stream::COMPUTE},
                                             {3, 80 * MiB, ACT, Stream::COMPUTE}}),
            160 * MiB);
}

TEST(ReservedMemory, APartFreedLeavesTheRestAsARequest) {
  // 100 MiB, 40 of it freed: the 60 left is a new request, served from the freed 100 (split), and a
  // later 40 fits what remains.
  EXPECT_EQ(caching_allocator_reserved_peak({{0, 100 * MiB, ACT, Stream::COMPUTE},
                                             {1, -40 * MiB, ACT, Stream::COMPUTE},
                                             {2, 40 * MiB, ACT, Stream::COMPUTE}}),
            100 * MiB);
}

TEST(ReservedMemory, APartFreedGroupKeepsItsRestOnItsOwnStream) {
  // 100 MiB on the compute stream, 40 of it freed by an op of the communication stream: the 60 left
  // is requested again on the compute stream, where the freed 100 serves it.
  EXPECT_EQ(caching_allocator_reserved_peak({{0, 100 * MiB, ACT, Stream::COMPUTE}, {1, -40 * MiB, ACT, Stream::COMM}}), 100 * MiB);
}

TEST(ReservedMemory, ClassesAreMatchedApart) {
  // Activations on the compute stream, then gathered parameters of the same size on the
  // communication stream; the activations' free returns the activations' block (not the latest
  // event's), so the next activations fit it again.
  EXPECT_EQ(caching_allocator_reserved_peak({{0, 64 * MiB, ACT, Stream::COMPUTE},
                                             {1, 64 * MiB, MemClass::GATHERED, Stream::COMM},
                                             {2, -64 * MiB, ACT, Stream::COMPUTE},
                                             {3, 64 * MiB, ACT, Stream::COMPUTE}}),
            128 * MiB);
}

TEST(ReservedMemory, BlocksFreedOnOneStreamDoNotServeAnother) {
  EXPECT_EQ(caching_allocator_reserved_peak({{0, 64 * MiB, MemClass::GATHERED, Stream::COMM},
                                             {1, -64 * MiB, MemClass::GATHERED, Stream::COMM},
                                             {2, 64 * MiB, ACT, Stream::COMPUTE}}),
            128 * MiB);
}

TEST(ReservedMemory, FreesComeBeforeAllocationsAtOneInstant) {
  EXPECT_EQ(caching_allocator_reserved_peak({{0, 64 * MiB, ACT, Stream::COMPUTE},
                                             {1, 64 * MiB, ACT, Stream::COMPUTE},
                                             {1, -64 * MiB, ACT, Stream::COMPUTE}}),
            64 * MiB);
}

TEST(ReservedMemory, ASimulatedStepCarriesItsReservedPeak) {
  const wl::ModelSpec m = wl::builtin_model("gpt2-1.5b");
  wl::StrategyInput in;
  wl::TrainingStack ddp;
  ddp.kind = wl::StackKind::PYTORCH_DDP;
  in.stack.set(ddp, "t");
  in.precision.set(wl::Numerics::BF16_MIXED, "t");
  in.micro_batch.set(2, "t");
  const wl::ResolvedInputs r = wl::resolve_inputs(in, m, {2, 96, "h200x4-measured"});
  const SimResult s = simulate(r.model, r.strategy, hw::builtin_profile("h200x4-measured"), wl::estimate_memory(r.model, r.strategy, 2));
  ASSERT_TRUE(s.simulated);
  for (const GpuResult& g : s.per_gpu) {
    // Every event is a request of at least its bytes: reserved is at least the allocated peak, and
    // the segments' rounding keeps it within a few MiB per event of it here.
    EXPECT_GE(g.peak_reserved_bytes, g.peak_memory_bytes);
    EXPECT_LT(g.peak_reserved_bytes, 2 * g.peak_memory_bytes);
  }
}

}  // namespace
}  // namespace trainsim::sim

namespace trainsim::sim {
namespace {

// The reserved peak does not grow evenly with the micro-batches (whole segments), so it stays out of
// the fold's linearity test: a PyTorch FSDP2 step of 2048 micro-batches folds with a period of one
// micro-batch, as its work repeats (with the reserved peak in the test it needed four), and carries
// a reserved peak at least its extrapolated allocated one.
TEST(ReservedMemory, ALongStepStillFolds) {
  const wl::ModelSpec m = wl::builtin_model("gpt2-1.5b");
  wl::StrategyInput in;
  wl::TrainingStack fsdp;
  fsdp.kind = wl::StackKind::PYTORCH_FSDP;
  in.stack.set(fsdp, "t");
  in.precision.set(wl::Numerics::BF16_MIXED, "t");
  in.zero.set(3, "t");
  in.micro_batch.set(1, "t");
  in.global_batch.set(2048, "t");
  const wl::ResolvedInputs r = wl::resolve_inputs(in, m, {4, 96, "h200x4-measured"});
  const SimResult s = simulate(r.model, r.strategy, hw::builtin_profile("h200x4-measured"), wl::estimate_memory(r.model, r.strategy, 4));
  ASSERT_TRUE(s.simulated);
  bool folded = false;
  for (const auto& note : s.folding) folded = folded || note.find("each further micro-batch adding the same work") != std::string::npos;
  EXPECT_TRUE(folded) << "no fold with a period of one micro-batch";
  ASSERT_FALSE(s.per_gpu.empty());
  EXPECT_GE(s.per_gpu[0].peak_reserved_bytes, s.per_gpu[0].peak_memory_bytes);
}

}  // namespace
}  // namespace trainsim::sim
