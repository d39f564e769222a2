// ZeRO-Infinity's storage tier of the reference step (calibrate/reference/storage_states.*): Adam
// streamed through an O_DIRECT file gives bit for bit what the same CPU-Adam gives in memory,
// over chunks that do not divide the parameter count, for several steps; bytes are counted.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <vector>

#include "errors.hpp"
#include "reference/storage_states.hpp"
#include "run_binary.hpp"

namespace trainsim::calibrate {
namespace {

bool direct_io_supported(const test::TempDir& dir) {
  const std::string probe = dir.str() + "/probe";
  const int fd = ::open(probe.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0600);
  if (fd < 0) return false;
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

TEST(ReferenceStorage, AdamThroughStorageEqualsAdamInMemory) {
  test::TempDir dir;
  if (!direct_io_supported(dir)) GTEST_SKIP() << "the temp directory's filesystem has no O_DIRECT";
  const std::size_t n = 5 * 1024 + 300, chunk = 1024;
  std::vector<float> master(n), m(n, 0.0f), v(n, 0.0f), grad(n);
  for (std::size_t i = 0; i < n; ++i) master[i] = 0.01f * static_cast<float>(i % 97) - 0.3f;
  std::vector<std::uint16_t> half_mem(n), half_disk(n);
  ref::StorageStates states(dir.str(), n, chunk, 4);
  states.initialize([&](std::size_t first, std::size_t count, float* out) {
    for (std::size_t i = 0; i < count; ++i) out[i] = master[first + i];
  });
  ThreadPool pool(3);
  AdamHyper h;
  h.lr = 1e-2f;
  h.beta2 = 0.95f;
  for (int step = 1; step <= 3; ++step) {
    for (std::size_t i = 0; i < n; ++i) grad[i] = 0.001f * static_cast<float>((i * 7 + step * 13) % 31) - 0.015f;
    h.step = step;
    AdamTensors t{master.data(), grad.data(), m.data(), v.data(), half_mem.data(), n};
    adam_step(h, t, HalfType::BF16, best_isa(), pool);
    states.adam_step(h, grad.data(), half_disk.data(), pool);
  }
  std::vector<float> back(n);
  states.read_master(back.data());
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(back[i], master[i]) << "element " << i;
    ASSERT_EQ(half_disk[i], half_mem[i]) << "element " << i;
  }
  // 6 chunks of 12 KiB, read and written once per step (the first write is the initialization).
  EXPECT_DOUBLE_EQ(states.bytes_read, 3.0 * 6 * chunk * 12);
  EXPECT_DOUBLE_EQ(states.bytes_written, 4.0 * 6 * chunk * 12);
}

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The probe (--storage-probe-chunks) streams chunks through adam_step's read/write pattern and
// writes back what it read: the file is the same byte for byte, its counts are whole chunks, its
// time is the wall time of its I/O, and a later Adam step still equals Adam in memory.
TEST(ReferenceStorage, ProbeStreamLeavesTheStatesByteIdentical) {
  test::TempDir dir;
  if (!direct_io_supported(dir)) GTEST_SKIP() << "the temp directory's filesystem has no O_DIRECT";
  const std::size_t n = 5 * 1024 + 300, chunk = 1024, chunk_bytes = chunk * 12;
  std::vector<float> master(n), m(n, 0.0f), v(n, 0.0f), grad(n);
  for (std::size_t i = 0; i < n; ++i) master[i] = 0.02f * static_cast<float>(i % 89) - 0.7f;
  std::vector<std::uint16_t> half_mem(n), half_disk(n);
  ref::StorageStates states(dir.str(), n, chunk, 4);
  ASSERT_EQ(states.chunk_count(), 6u);
  states.initialize([&](std::size_t first, std::size_t count, float* out) {
    for (std::size_t i = 0; i < count; ++i) out[i] = master[first + i];
  });
  ThreadPool pool(2);
  AdamHyper h;
  h.lr = 1e-2f;
  auto step = [&](int s) {
    for (std::size_t i = 0; i < n; ++i) grad[i] = 0.001f * static_cast<float>((i * 5 + s * 11) % 29) - 0.014f;
    h.step = s;
    AdamTensors t{master.data(), grad.data(), m.data(), v.data(), half_mem.data(), n};
    adam_step(h, t, HalfType::BF16, best_isa(), pool);
    states.adam_step(h, grad.data(), half_disk.data(), pool);
  };
  step(1);  // moments non-zero: every third of each chunk holds something distinct
  const std::vector<char> before = file_bytes(states.file_path());
  ASSERT_EQ(before.size(), 6 * chunk_bytes);
  const double r0 = states.bytes_read, w0 = states.bytes_written, io0 = states.io_wait_s;
  for (std::size_t probe_chunks : {std::size_t{3}, std::size_t{1}, std::size_t{6}}) {
    const double r = states.bytes_read, w = states.bytes_written;
    const auto t0 = std::chrono::steady_clock::now();
    const ref::StorageProbe p = states.probe_stream(probe_chunks);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_DOUBLE_EQ(p.bytes_read, static_cast<double>(probe_chunks * chunk_bytes)) << probe_chunks;
    EXPECT_DOUBLE_EQ(p.bytes_written, static_cast<double>(probe_chunks * chunk_bytes)) << probe_chunks;
    EXPECT_DOUBLE_EQ(states.bytes_read - r, p.bytes_read);
    EXPECT_DOUBLE_EQ(states.bytes_written - w, p.bytes_written);
    EXPECT_GT(p.seconds, 0.0);
    EXPECT_LE(p.seconds, wall);
    EXPECT_EQ(file_bytes(states.file_path()), before) << "after a probe of " << probe_chunks << " chunks";
  }
  EXPECT_DOUBLE_EQ(states.bytes_read - r0, 10.0 * chunk_bytes);
  EXPECT_DOUBLE_EQ(states.bytes_written - w0, 10.0 * chunk_bytes);
  EXPECT_EQ(states.io_wait_s, io0) << "a probe is not a step's wait";
  step(2);
  std::vector<float> back(n);
  states.read_master(back.data());
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(back[i], master[i]) << "element " << i;
    ASSERT_EQ(half_disk[i], half_mem[i]) << "element " << i;
  }
  EXPECT_THROW(states.probe_stream(0), CalibrationError);
  EXPECT_THROW(states.probe_stream(7), CalibrationError);
}

TEST(ReferenceStorage, RefusesAQueueTooShallowForAChunk) {
  test::TempDir dir;
  if (!direct_io_supported(dir)) GTEST_SKIP() << "the temp directory's filesystem has no O_DIRECT";
  // 4 Mi parameters x 12 bytes = 48 MiB = 6 requests of 8 MiB; read and write in flight need 12.
  EXPECT_THROW({ ref::StorageStates states(dir.str(), 100, std::size_t{4} << 20, 8); }, CalibrationError);
}

}  // namespace
}  // namespace trainsim::calibrate
