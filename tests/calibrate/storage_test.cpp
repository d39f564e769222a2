// The storage benchmark writes only inside the directory it was given, removes its files on
// every exit path (destruction, SIGINT), and catches data that is not what was written.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "async_io.hpp"
#include "errors.hpp"
#include "run_binary.hpp"
#include "scratch_dir.hpp"
#include "storage_bench.hpp"

namespace trainsim::calibrate {
namespace {

using test::TempDir;
namespace fs = std::filesystem;

// O_DIRECT needs a filesystem that supports it (tmpfs does not): skip where the temp dir lacks it.
bool direct_io_supported(const TempDir& dir) {
  const std::string probe = dir.str() + "/probe";
  const int fd = ::open(probe.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0600);
  if (fd >= 0) ::close(fd);
  ::unlink(probe.c_str());
  return fd >= 0;
}

TEST(ScratchDir, RefusesNamesThatLeaveTheDirectory) {
  TempDir parent;
  fs::create_directories(parent.path() / "inner");
  ScratchDir dir((parent.path() / "inner").string());
  for (const char* name : {"../escape", "/tmp/escape", "a/b", "..", ".", "", "sub/../../escape"}) {
    EXPECT_THROW(dir.create(name), CalibrationError) << name;
  }
  EXPECT_FALSE(fs::exists(parent.path() / "escape"));
  EXPECT_TRUE(fs::is_empty(parent.path() / "inner"));
}

TEST(ScratchDir, NeverFollowsOrOverwritesALink) {
  TempDir outside, inside;
  const fs::path target = outside.path() / "precious";
  std::ofstream(target) << "keep me";
  fs::create_symlink(target, inside.path() / "link");
  ScratchDir dir(inside.str());
  EXPECT_THROW(dir.create("link"), CalibrationError);
  EXPECT_EQ(test::slurp(target.string()), "keep me");
}

TEST(ScratchDir, RejectsAMissingDirectoryOrAFileAsUsageErrors) {
  TempDir parent;
  std::ofstream(parent.path() / "file") << "x";
  EXPECT_THROW(ScratchDir((parent.path() / "missing").string()), UsageError);
  EXPECT_THROW(ScratchDir((parent.path() / "file").string()), UsageError);
  try {
    ScratchDir((parent.path() / "missing").string());
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--storage-dir"), std::string::npos) << e.what();
  }
}

TEST(ScratchDir, FilesAreRemovedWhenReleased) {
  TempDir parent;
  ScratchDir dir(parent.str());
  {
    ScratchFile a = dir.create(dir.unique_name("a"));
    ScratchFile b = dir.create(dir.unique_name("b"));
    EXPECT_TRUE(fs::exists(a.path()));
    EXPECT_EQ(fs::path(a.path()).parent_path(), fs::canonical(parent.path()));
  }
  EXPECT_TRUE(parent.empty());
}

TEST(ScratchDir, FilesAreRemovedOnInterrupt) {
  TempDir parent;
  const std::string path = parent.str();
  EXPECT_EXIT(
      {
        ScratchDir dir(path);
        ScratchFile f = dir.create(dir.unique_name("interrupted"));
        std::raise(SIGINT);
      },
      ::testing::KilledBySignal(SIGINT), "");
  EXPECT_TRUE(parent.empty()) << "a temporary file survived SIGINT";
}

TEST(StorageBench, TransfersCheckWhatTheyReadWithBothBackends) {
  TempDir parent;
  if (!direct_io_supported(parent)) GTEST_SKIP() << "the temp directory's filesystem has no O_DIRECT";
  for (const char* backend : {"io_uring", "libaio"}) {
    std::unique_ptr<AsyncIo> io;
    try {
      io = open_async_io(4, backend);
    } catch (const CalibrationError& e) {
      std::cout << "[  SKIPPED ] " << backend << ": " << e.what() << "\n";
      continue;
    }
    ScratchDir dir(parent.str());
    ScratchFile f = create_pattern_file(dir, 8u << 20, backend);
    AlignedBuffers buffers(4, 256u << 10);
    Cursor cursor{8u << 20, 0};
    EXPECT_GT(sequential_transfer(*io, f.fd(), false, 256u << 10, 4, 8u << 20, cursor, buffers), 0.0);
    // Corrupt one sector behind the benchmark's back: the next read of it must fail the check.
    std::vector<char> junk(SECTOR_BYTES, 'x');
    const int fd = ::open(f.path().c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), 1 << 20), static_cast<ssize_t>(junk.size()));
    ASSERT_EQ(::fsync(fd), 0);
    ::close(fd);
    Cursor again{8u << 20, 0};
    EXPECT_THROW(sequential_transfer(*io, f.fd(), false, 256u << 10, 4, 8u << 20, again, buffers), CalibrationError)
        << backend;
  }
}

// An AsyncIo that completes everything it was given at the next wait(), all in one batch, the way
// libaio often returns a whole queue at once. A wait() with nothing submitted would block a real
// backend forever; here it throws a logic_error, so a lost request fails the test instead of hanging it.
class BatchingIo : public AsyncIo {
 public:
  std::string_view backend() const override { return "batching-fake"; }
  void prepare(bool write, int fd, void* buffer, std::size_t bytes, off_t offset, std::uint64_t tag) override {
    prepared_.push_back({write, fd, buffer, bytes, offset, tag});
  }
  void submit() override {
    for (const auto& r : prepared_) {
      const ssize_t n = r.write ? ::pwrite(r.fd, r.buffer, r.bytes, r.offset) : ::pread(r.fd, r.buffer, r.bytes, r.offset);
      done_.push_back({r.tag, static_cast<long>(n)});
    }
    prepared_.clear();
  }
  void wait(std::vector<IoCompletion>& out) override {
    if (done_.empty()) throw std::logic_error("wait() with no request in flight: a prepared request was never submitted");
    out.insert(out.end(), done_.begin(), done_.end());
    done_.clear();
  }

 private:
  struct Request {
    bool write;
    int fd;
    void* buffer;
    std::size_t bytes;
    off_t offset;
    std::uint64_t tag;
  };
  std::vector<Request> prepared_;
  std::vector<IoCompletion> done_;
};

// A failed check in the middle of a batch of completions: the requests re-issued for the earlier
// completions of that batch must still be submitted and waited for, and the check's error returned.
TEST(StorageBench, AFailedCheckMidBatchStillDrainsWhatWasReissued) {
  TempDir dir;
  const std::size_t block = 4 * SECTOR_BYTES, total = 16 * block;
  const std::string path = dir.str() + "/pattern";
  const int fd = ::open(path.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  std::vector<char> content(total);
  stamp_sectors(content.data(), total, 0);
  ASSERT_EQ(::pwrite(fd, content.data(), total, 0), static_cast<ssize_t>(total));
  // The second block of the first batch of four is corrupt; the first block completes before it
  // in the same batch and is re-issued.
  std::vector<char> junk(SECTOR_BYTES, 'x');
  ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), static_cast<off_t>(block)), static_cast<ssize_t>(junk.size()));
  BatchingIo io;
  AlignedBuffers buffers(4, block);
  Cursor cursor{total, 0};
  try {
    sequential_transfer(io, fd, false, block, 4, total, cursor, buffers);
    ADD_FAILURE() << "the corrupt sector was not caught";
  } catch (const CalibrationError& e) {
    EXPECT_NE(std::string(e.what()).find("storage read check failed"), std::string::npos) << e.what();
  }
  ::close(fd);
}

TEST(StorageBench, SmallSweepMeasuresAndLeavesNothingBehind) {
  TempDir parent;
  if (!direct_io_supported(parent)) GTEST_SKIP() << "the temp directory's filesystem has no O_DIRECT";
  StorageConfig c;
  c.block_bytes = {128u << 10, 1u << 20};
  c.depths = {1, 4};
  c.file_bytes = 16u << 20;
  c.sample_seconds = 0.01;
  c.samples = 2;
  c.mixed.chunk_bytes = 1u << 20;
  c.mixed.request_bytes = 256u << 10;
  c.mixed.file_bytes = 8u << 20;
  c.mixed.sample_seconds = 0.01;
  c.mixed.samples = 2;
  Results results(false);
  {
    ScratchDir dir(parent.str());
    run_storage_bench(c, dir, results);
  }
  EXPECT_EQ(results.select("storage", "write").size(), 4u);
  EXPECT_EQ(results.select("storage", "read").size(), 4u);
  EXPECT_EQ(results.select("storage_mixed", "combined").size(), 2u);
  for (const auto& m : results.all()) EXPECT_GT(m.stats.median, 0.0);
  EXPECT_TRUE(parent.empty());
}

// Reads and writes in flight together (the reference's pattern): per stream count, what each
// direction and both moved; each round waits for its read and its write, so they move as much.
TEST(StorageBench, MixedReadsAndWritesInFlightTogether) {
  TempDir parent;
  if (!direct_io_supported(parent)) GTEST_SKIP() << "the temp directory's filesystem has no O_DIRECT";
  MixedStorageConfig c;
  c.chunk_bytes = 1u << 20;
  c.request_bytes = 256u << 10;
  c.file_bytes = 4u << 20;  // wraps: more rounds than the file holds chunks
  c.streams = {1, 2};
  c.sample_seconds = 0.02;
  c.samples = 3;
  Results results(false);
  {
    ScratchDir dir(parent.str());
    run_mixed_storage_bench(c, dir, results);
  }
  const auto read = results.select("storage_mixed", "read");
  const auto write = results.select("storage_mixed", "write");
  const auto combined = results.select("storage_mixed", "combined");
  ASSERT_EQ(read.size(), 2u);
  ASSERT_EQ(write.size(), 2u);
  ASSERT_EQ(combined.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(param_number(read[i]->params, "streams"), static_cast<double>(i + 1));
    EXPECT_EQ(param_number(read[i]->params, "depth"), 8.0);  // a chunk read and a chunk written, 4 requests each
    EXPECT_GT(read[i]->stats.median, 0.0);
    EXPECT_DOUBLE_EQ(read[i]->stats.median, write[i]->stats.median);
    EXPECT_NEAR(combined[i]->stats.median, 2 * read[i]->stats.median, 1e-9 * combined[i]->stats.median);
    const double share = param_number(read[i]->params, "reads_done_share");
    EXPECT_GT(share, 0.0);
    EXPECT_LE(share, 1.0);
    EXPECT_EQ(read[i]->stats.n, 3);
  }
  EXPECT_TRUE(parent.empty());
}

TEST(StorageBench, MixedRejectsAChunkThatIsNotWholeSectors) {
  TempDir parent;
  MixedStorageConfig c;
  c.chunk_bytes = 1000;
  Results results(false);
  ScratchDir dir(parent.str());
  EXPECT_THROW(run_mixed_storage_bench(c, dir, results), CalibrationError);
}

}  // namespace
}  // namespace trainsim::calibrate
