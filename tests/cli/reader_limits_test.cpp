// The readers of what a run measured (issue 43, items 1, 2 and 4): profiler traces, allocator
// records and measured-run directories are read under stated limits (decoded bytes, events,
// elements, depth, a value's size), their numbers range-checked, their files regular ones and their
// directory walks bounded; each breach is exit 2 naming the file and the limit or the key, never an
// internal error, a crash, a hang or a run that exhausts the machine.
#include <sys/stat.h>
#include <unistd.h>

#include "cli_cases.hpp"
#include "gzip_text.hpp"

namespace trainsim::test {
namespace {

// Issue 43, item 1: the trace and allocator-record readers bound what they unpack, the events and
// elements they hold and the nesting, each an exit-2 error naming the file and the limit, quickly.
TEST(ReaderLimits, TraceGzipBombsAndHugeDocumentsStopAtAStatedLimit) {
  ScratchDir dir;
  const std::string d = dir.path().string();
  const std::string mib_of_spaces(std::size_t{1} << 20, ' ');
  // 1100 MiB of spaces in a 1 MB file (the issue's was 5 GB in 4.9 MB).
  dir.write("spaces.trace.json.gz", gzipped("{\"traceEvents\": [", mib_of_spaces, 1100, "]}"));
  // 9 Mi events that are empty arrays, 27 MB unpacked.
  std::string empties;
  for (int i = 0; i < 349525; ++i) empties += "[],";
  dir.write("empties.trace.json.gz", gzipped("{\"traceEvents\": [", empties, 27, "[]]}"));
  // An event nested 100 deep.
  dir.write("deep.trace.json.gz", gzipped("{\"traceEvents\": [", std::string(100, '[') + std::string(100, ']'), 1, "]}"));
  // A kernel name of 17 MiB.
  dir.write("long_name.trace.json.gz",
            gzipped("{\"traceEvents\": [{\"name\": \"", std::string(std::size_t{1} << 20, 'x'), 17, "\"}]}"));
  const std::string gpt2 = " --model gpt2-1.5b";
  const std::vector<Case> cases = {
      {"1100 MiB of spaces", "validate --no-trace --measured {dir}/spaces.trace.json.gz" + gpt2,
       "{dir}/spaces.trace.json.gz: (file): expected a readable profiler trace (Chrome trace JSON, optionally gzipped) of at "
       "most 1024 MiB once unpacked, got more"},
      {"9 Mi empty events", "validate --no-trace --measured {dir}/empties.trace.json.gz" + gpt2,
       "{dir}/empties.trace.json.gz: traceEvents: expected at most 8388608 trace events (the limit on events), got more"},
      {"an event nested 100 deep", "validate --no-trace --measured {dir}/deep.trace.json.gz" + gpt2,
       "{dir}/deep.trace.json.gz: traceEvents[0]: expected objects and arrays nested at most 64 deep (the limit on depth), "
       "got deeper nesting at byte "},
      {"a 17 MiB kernel name", "validate --no-trace --measured {dir}/long_name.trace.json.gz" + gpt2,
       "{dir}/long_name.trace.json.gz: (document): expected strings and numbers of at most 16 MiB each (the limit on a value's "
       "size), got a longer one ending past byte 16777244 of the unpacked text"},
  };
  expect_refused(cases, d);
}

TEST(ReaderLimits, AllocatorRecordsStopAtTheirLimitsOnValues) {
  ScratchDir dir;
  const std::string d = dir.path().string();
  // A record whose provenance holds 21 Mi numbers, 42 MB unpacked.
  std::string zeros;
  for (int i = 0; i < (1 << 20); ++i) zeros += "0,";
  dir.write("zeros.allocator.rank0.json.gz", gzipped("{\"schema_version\": 1, \"provenance\": [", zeros, 21, "0]}"));
  // A record of 2.25 Mi small objects, 36 MB unpacked, that would build about 1.1 GB.
  std::string objects;
  for (int i = 0; i < (1 << 16); ++i) objects += "{\"a\":{\"b\":[1]}},";
  dir.write("objects.allocator.rank0.json.gz", gzipped("{\"schema_version\": 1, \"provenance\": [", objects, 36, "0]}"));
  // The issue's shape: 300 MiB of "[]," (its was 600 MB in 583 KB, and built 7 GB).
  std::string empties;
  for (int i = 0; i < (1 << 20); ++i) empties += "[],";
  dir.write("empties.allocator.rank0.json.gz", gzipped("{\"schema_version\": 1, \"provenance\": [", empties, 100, "[]]}"));
  const std::vector<Case> cases = {
      {"21 Mi values in an allocator record", "validate --allocator-record {dir}/zeros.allocator.rank0.json.gz",
       "{dir}/zeros.allocator.rank0.json.gz: provenance[20971517]: expected at most 20971520 JSON values in the document "
       "(the limit on elements), got more (at line 1, column "},
      {"2.25 Mi small objects in an allocator record", "validate --allocator-record {dir}/objects.allocator.rank0.json.gz",
       ": expected at most 1024 MiB of JSON values once built in memory (the limit on the document's size), got more (at line 1, "
       "column "},
      {"300 MiB of empty arrays in an allocator record", "validate --allocator-record {dir}/empties.allocator.rank0.json.gz",
       "{dir}/empties.allocator.rank0.json.gz: (file): expected a readable allocator record (trainsim.allocator_trace JSON, "
       "optionally gzipped) of at most 256 MiB once unpacked, got more"},
  };
  expect_refused(cases, d, 10.0);  // 21 Mi values parsed take 3 s
}

// Issue 43, "Build": the measured-run reader, its sidecars and a directory's sniffing of what each
// .json holds read under stated limits too: a measured run or sidecar of 16 MiB once built 490 MB.
TEST(ReaderLimits, MeasuredRunsAndSidecarsStopAtTheirLimitsOnValues) {
  ScratchDir dir;
  const std::string d = dir.path().string();
  std::string zeros;
  for (int i = 0; i < 1100000; ++i) zeros += "0,";
  std::string objects;
  for (int i = 0; i < 300000; ++i) objects += "{\"a\":{}},";
  dir.write("run_values.json", "{\"schema_version\": 1, \"kind\": \"trainsim.measured_run\", \"provenance\": [" + zeros + "0]}");
  dir.write("run_objects.json", "{\"schema_version\": 1, \"kind\": \"trainsim.measured_run\", \"provenance\": [" + objects + "0]}");
  dir.write("side_values.json", "{\"schema_version\": 1, \"kind\": \"trainsim.trace_sidecar\", \"x\": [" + zeros + "0]}");
  dir.write("trace.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}]})");
  const std::vector<Case> cases = {
      {"1.1 M values in a measured run", "validate --no-trace --measured {dir}/run_values.json",
       "{dir}/run_values.json: provenance[1048572]: expected at most 1048576 JSON values in the document (the limit on "
       "elements), got more (at line 1, column "},
      {"300 K small objects in a measured run", "validate --no-trace --measured {dir}/run_objects.json",
       ": expected at most 64 MiB of JSON values once built in memory (the limit on the document's size), got more (at line 1, "
       "column "},
      {"1.1 M values in a sidecar", "validate --no-trace --measured {dir}/trace.json --sidecar {dir}/side_values.json",
       "{dir}/side_values.json: x[1048572]: expected at most 1048576 JSON values in the document (the limit on elements)"},
  };
  expect_refused(cases, d);

  // In a directory of runs, a large document that is no measured run is looked at, not built: skipped.
  std::filesystem::create_directories(dir.path() / "runs");
  dir.write("runs/other.json", "{\"kind\": \"something.else\", \"x\": [" + zeros + "0]}");
  expect_refused({{"a directory holding only another document", "validate --no-trace --measured {dir}/runs",
                   "{dir}/runs: (directory): expected a directory holding measured-run JSON files"}},
                 d);

  // A plain profiler trace of more values than a measured run may hold is streamed by its own reader.
  std::string events;
  for (int i = 0; i < 200000; ++i) {
    events += R"({"ph": "X", "cat": "kernel", "name": "k", "ts": )" + std::to_string(i) + R"(, "dur": 1},)";
  }
  dir.write("big.json", "{\"traceEvents\": [" + events + R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 1}]})");
  const CommandResult r = run_trainsim("validate --no-trace --measured " + d + "/big.json --model gpt2-1.5b --hw dgx2");
  EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
  EXPECT_NE(r.out.find("step_time"), std::string::npos) << r.out.substr(0, 2000);
}

// Issue 43, items 3 and 4: a trace's values are numbers of their range, of the type they must be.
TEST(ReaderLimits, TraceValuesOfTheWrongTypeOrRangeAreExit2WithTheirKey) {
  ScratchDir dir;
  const std::string d = dir.path().string();
  auto trace = [&](const char* file, const std::string& event) {
    dir.write(file, R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "sm90_gemm", "ts": 1000, "dur": 80000}, )" +
                        event + "]}");
  };
  trace("step_inf.json", R"({"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#3", "ts": 1e308, "dur": 5})");
  trace("step_dur.json", R"({"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#3", "ts": 0, "dur": 1e300})");
  trace("memory_huge.json", R"({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 5, "args": {"Total Allocated": 1e300}})");
  trace("memory_lots.json", R"({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 5, "args": {"Total Allocated": "lots"}})");
  trace("cat5.json", R"({"ph": "X", "cat": 5, "name": "k", "ts": 1, "dur": 1})");
  trace("ts_x.json", R"({"ph": "X", "cat": "kernel", "name": "k", "ts": "x", "dur": 1})");
  trace("step_ts_x.json", R"({"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": "x", "dur": 1})");
  trace("days_apart.json", R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1e15, "dur": 1})");
  trace("step_days.json", R"({"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": 0, "dur": 8e10}, )"
                          R"({"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#2", "ts": 1e11, "dur": 1})");
  dir.write("no_duration.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 5, "dur": 0}, )"
                                R"({"ph": "X", "cat": "gpu_memcpy", "name": "m", "ts": 5, "dur": 0}]})");
  const std::string gpt2 = " --model gpt2-1.5b";
  const std::vector<Case> cases = {
      {"ProfilerStep at ts 1e308", "validate --no-trace --measured {dir}/step_inf.json" + gpt2,
       "{dir}/step_inf.json: traceEvents[1].ts: expected a finite timestamp below 1e18 microseconds"},
      {"ProfilerStep of dur 1e300", "validate --no-trace --measured {dir}/step_dur.json" + gpt2,
       "{dir}/step_dur.json: traceEvents[1].dur: expected a duration from 0 to 8.64e10 microseconds"},
      {"[memory] of 1e300 bytes", "validate --no-trace --measured {dir}/memory_huge.json" + gpt2,
       "{dir}/memory_huge.json: traceEvents[1].args.Total Allocated: expected a number of bytes from 0 to 16 TiB"},
      {"[memory] of \"lots\"", "validate --no-trace --measured {dir}/memory_lots.json" + gpt2,
       "{dir}/memory_lots.json: traceEvents[1].args.Total Allocated: expected a number of bytes from 0 to 16 TiB "
       "(the memory one GPU holds), got \"lots\""},
      {"cat 5", "validate --no-trace --measured {dir}/cat5.json" + gpt2,
       "{dir}/cat5.json: traceEvents[1].cat: expected a string (the event's category, e.g. \"kernel\"), got 5"},
      {"kernel ts \"x\"", "validate --no-trace --measured {dir}/ts_x.json" + gpt2,
       "{dir}/ts_x.json: traceEvents[1].ts: expected a number of microseconds, got \"x\""},
      {"ProfilerStep ts \"x\"", "validate --no-trace --measured {dir}/step_ts_x.json" + gpt2,
       "{dir}/step_ts_x.json: traceEvents[1].ts: expected a number of microseconds, got \"x\""},
      // Once "step_time 0.0 ms measured, +0.0%, ok": GPU activity of no duration is no step.
      {"GPU events of no duration", "validate --no-trace --measured {dir}/no_duration.json" + gpt2,
       "{dir}/no_duration.json: traceEvents: expected GPU activity that lasts (kernel, copy or memset events with a positive "
       "duration), got 2 GPU events of no duration"},
      // What a trace summary would refuse (a step of at most a day), the trace refuses too.
      {"kernels 31 years apart", "validate --no-trace --measured {dir}/days_apart.json" + gpt2,
       "{dir}/days_apart.json: traceEvents: expected one step: GPU activity and ProfilerStep spans of at most a day (86400 s), "
       "got GPU activity over 999999999.9990009 s"},
      {"ProfilerSteps 28 hours apart", "validate --no-trace --measured {dir}/step_days.json" + gpt2,
       "{dir}/step_days.json: traceEvents: expected one step: GPU activity and ProfilerStep spans of at most a day (86400 s), "
       "got the ProfilerStep span over 100000.000001 s"},
  };
  expect_refused(cases, d);
}

// Issue 43, item 4: walking a directory of measured runs or allocator records, a symlink loop, a
// subdirectory this user may not read and a tree nested past the open-file limit (one descriptor
// per level) are each exit 2 naming the path, not an internal error.
TEST(ReaderLimits, DirectoryWalksStopAtLoopsUnreadableAndDeepDirectories) {
  ScratchDir dir;
  const std::string d = dir.path().string();
  namespace fs = std::filesystem;
  for (const char* kind : {"measured", "records"}) {
    fs::create_directories(dir.path() / kind / "loop");
    fs::create_symlink("self.json", dir.path() / kind / "loop" / "self.json");
    fs::create_symlink("x.allocator.rank0.json.gz", dir.path() / kind / "loop" / "x.allocator.rank0.json.gz");
    fs::path deep = dir.path() / kind / "deep";
    for (int i = 0; i < 40; ++i) deep /= "d";
    fs::create_directories(deep);
    fs::create_directories(dir.path() / kind / "locked" / "inner");
    fs::permissions(dir.path() / kind / "locked" / "inner", fs::perms::none);
  }
  // Root reads any directory: the unreadable cases run as nobody where this test runs as root.
  const std::string as_user = ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                                  fs::perms::others_exec);
  const std::vector<Case> cases = {
      {"a symlink loop among measured runs", "validate --no-trace --measured {dir}/measured/loop",
       "{dir}/measured/loop/self.json: (file): expected a readable measured-run file or directory, got Too many levels of "
       "symbolic links"},
      {"measured runs nested 40 deep", "validate --no-trace --measured {dir}/measured/deep",
       "/d/d/d: (directory): expected directories nested at most 32 deep under {dir}/measured/deep, got deeper"},
      // Once skipped in silence: a record named as one is read, or refused.
      {"a symlink loop among allocator records", "validate --allocator-record {dir}/records/loop",
       "{dir}/records/loop/x.allocator.rank0.json.gz: (file): expected a readable allocator record, got Too many levels of "
       "symbolic links"},
      {"allocator records nested 40 deep", "validate --allocator-record {dir}/records/deep",
       "/d/d/d: (directory): expected directories nested at most 32 deep under {dir}/records/deep, got deeper"},
  };
  expect_refused(cases, d);
  for (const char* kind : {"measured", "records"}) {
    const std::string flag = std::string(kind) == "measured" ? "--no-trace --measured " : "--allocator-record ";
    const CommandResult r =
        run_command(as_user + TRAINSIM_BINARY + " validate " + flag + d + "/" + kind + "/locked");
    EXPECT_EQ(r.exit_code, 2) << kind << ": " << r.err;
    EXPECT_NE(r.err.find(d + "/" + kind + "/locked/inner: (directory): expected a readable directory of "), std::string::npos)
        << kind << ": " << r.err;
    EXPECT_NE(r.err.find("got Permission denied"), std::string::npos) << kind << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << kind;
  }
  for (const char* kind : {"measured", "records"}) fs::permissions(dir.path() / kind / "locked" / "inner", fs::perms::owner_all);
}

// Issue 43, item 2: every file trainsim reads is opened without blocking and refused unless it is a
// regular file, before a byte is read: a FIFO never waits for a writer, /dev/zero is never read.
TEST(ReaderLimits, NonRegularInputsAreRefusedWithoutWaiting) {
  ScratchDir dir;
  const std::string d = dir.path().string();
  ASSERT_EQ(::mkfifo((dir.path() / "fifo.json").c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo((dir.path() / "fifo.trace.json.gz").c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", dir.path() / "zero.allocator.rank0.json.gz");
  dir.write("trace.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}]})");
  const std::string regular = "expected a readable regular file of at most 16 MiB, got a FIFO (named pipe)";
  const std::vector<Case> cases = {
      {"a FIFO as a gzipped trace", "validate --no-trace --measured {dir}/fifo.trace.json.gz --model gpt2-1.5b",
       "--measured: expected a measured-run JSON, a profiler trace or a directory, got \"{dir}/fifo.trace.json.gz\" (not a "
       "regular file)"},
      {"a FIFO as the sidecar", "validate --no-trace --measured {dir}/trace.json --sidecar {dir}/fifo.json",
       "{dir}/fifo.json: (file): " + regular},
      {"/dev/zero as an allocator record", "validate --allocator-record {dir}/zero.allocator.rank0.json.gz",
       "{dir}/zero.allocator.rank0.json.gz: (file): expected a readable allocator record (trainsim.allocator_trace JSON, "
       "optionally gzipped), got a character device"},
      {"a FIFO as the known gaps", "validate --no-trace --measured {dir}/trace.json --model gpt2-1.5b --known-gaps {dir}/fifo.json",
       "{dir}/fifo.json: (file): " + regular},
  };
  expect_refused(cases, d);

  // Inside a directory, an entry named as an input is read, not skipped in silence.
  std::filesystem::create_directories(dir.path() / "runs");
  std::filesystem::create_directories(dir.path() / "records");
  ASSERT_EQ(::mkfifo((dir.path() / "runs" / "run.json").c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo((dir.path() / "records" / "x.allocator.rank0.json.gz").c_str(), 0600), 0);
  const std::vector<Case> in_directories = {
      {"a FIFO among measured runs", "validate --no-trace --measured {dir}/runs", "{dir}/runs/run.json: (file): " + regular},
      {"a FIFO among allocator records", "validate --allocator-record {dir}/records",
       "{dir}/records/x.allocator.rank0.json.gz: (file): expected a readable allocator record (trainsim.allocator_trace JSON, "
       "optionally gzipped), got a FIFO (named pipe)"},
  };
  expect_refused(in_directories, d);
}

}  // namespace
}  // namespace trainsim::test
