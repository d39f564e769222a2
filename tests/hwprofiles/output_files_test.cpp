// OutputSet (hwprofiles/io/output_files.hpp): every output checked before any is written, written
// through fresh temporaries that nothing planted can redirect, renamed together, and cleaned up on
// errors and interrupts; and the interrupt registry it shares with trainsim-calibrate and the
// simulator.
#include "output_files.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>

#include "config_error.hpp"
#include "test_support.hpp"

namespace trainsim {
namespace {

namespace fs = std::filesystem;
using test::read_file;

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// A character device node of this test's own (the null device's numbers) inside `dir`, so that a
// writer that wrongly replaces devices replaces nothing the machine needs (run as root, such a
// writer turns /dev/null into a regular file). Empty when this user may not create device nodes.
std::string private_device(const fs::path& dir) {
  const fs::path p = dir / "device";
  if (::mknod(p.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) return "";
  return p.string();
}

// The ConfigError message of `set.check()`, or "" when it passes.
std::string check_error(OutputSet& set) {
  try {
    set.check();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(OutputSet, WritesEveryOutputAndLeavesNoTemporary) {
  test::ScratchDir dir;
  OutputSet set;
  set.add("-o", (dir.path() / "a.txt").string(), "alpha\n");
  set.add("--trace", (dir.path() / "b.json").string(), "{}");
  set.commit();
  EXPECT_EQ(read_file((dir.path() / "a.txt").string()), "alpha\n");
  EXPECT_EQ(read_file((dir.path() / "b.json").string()), "{}");
  EXPECT_EQ(listing(dir.path()), (std::set<std::string>{"a.txt", "b.json"}));
}

TEST(OutputSet, ReplacesAnExistingRegularFileWhole) {
  test::ScratchDir dir;
  const std::string path = dir.write("a.txt", std::string(10000, 'x'));
  OutputSet set;
  set.add("-o", path, "short");
  set.commit();
  EXPECT_EQ(read_file(path), "short");
}

TEST(OutputSet, ChecksEveryOutputBeforeWritingAny) {
  test::ScratchDir dir;
  OutputSet set;
  set.add("--trace", (dir.path() / "good.json").string(), "{}");
  set.add("-o/--output", (dir.path() / "nodir" / "x.txt").string(), "text");
  EXPECT_THROW(set.commit(), ConfigError);
  EXPECT_TRUE(listing(dir.path()).empty()) << "an output was written although another one was refused";
}

TEST(OutputSet, AMissingDirectoryNamesTheFlagAndTheDirectory) {
  test::ScratchDir dir;
  const std::string path = (dir.path() / "nodir" / "x.json").string();
  OutputSet set;
  set.add("--trace", path, "{}");
  const std::string message = check_error(set);
  EXPECT_EQ(message, "--trace: expected a path in an existing directory, got \"" + path + "\" (no directory " +
                         (dir.path() / "nodir").string() + ")");
  OutputSet relative;
  relative.add("--trace", "nodir-that-does-not-exist/x.json", "{}");
  EXPECT_EQ(check_error(relative),
            "--trace: expected a path in an existing directory, got \"nodir-that-does-not-exist/x.json\" "
            "(no directory nodir-that-does-not-exist)");
  OutputSet under_file;
  under_file.add("--trace", dir.write("file", "x") + "/x.json", "{}");
  EXPECT_NE(check_error(under_file).find("is not a directory"), std::string::npos) << check_error(under_file);
}

TEST(OutputSet, RefusesEveryTargetThatIsNotARegularFile) {
  test::ScratchDir dir;
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directory(dir.path() / "subdir");
  fs::create_symlink(dir.path() / "subdir", dir.path() / "link-to-dir");
  fs::create_symlink(fifo, dir.path() / "link-to-fifo");
  fs::create_symlink(dir.path() / "nothing", dir.path() / "dangling");
  fs::create_symlink("/dev/null", dir.path() / "link-to-null");
  const std::string device = private_device(dir.path());
  std::vector<std::pair<std::string, std::string>> cases{
      {fifo.string(), "a FIFO"},
      {(dir.path() / "subdir").string(), "a directory"},
      {(dir.path() / "subdir").string() + "/", "a directory"},
      {(dir.path() / "link-to-dir").string(), "a symbolic link to a directory"},
      {(dir.path() / "link-to-fifo").string(), "a symbolic link to a FIFO"},
      {(dir.path() / "link-to-null").string(), "a symbolic link to a character device"},
      {(dir.path() / "dangling").string(), "a symbolic link to nothing"},
  };
  if (!device.empty()) cases.emplace_back(device, "a character device");
  for (const auto& [path, kind] : cases) {
    OutputSet set;
    set.add("-o/--output", path, "text", "leave out -o to write to standard output");
    const std::string message = check_error(set);
    EXPECT_EQ(message.rfind("-o/--output: expected a regular file or the name of a new one, got \"" + path + "\"", 0), 0u)
        << message;
    EXPECT_NE(message.find(kind), std::string::npos) << path << ": " << message;
    EXPECT_THROW(set.commit(), ConfigError) << path;
  }
  if (!device.empty()) {
    EXPECT_TRUE(fs::is_character_file(device)) << "the device was replaced";
  }
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(fs::is_symlink(dir.path() / "dangling"));
  EXPECT_FALSE(fs::exists(dir.path() / "nothing"));
  EXPECT_TRUE(fs::is_empty(dir.path() / "subdir"));
}

TEST(OutputSet, TheHintComesWithARefusedTarget) {
  test::ScratchDir dir;
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  OutputSet set;
  set.add("-o/--output", fifo.string(), "text", "leave out -o to write to standard output");
  EXPECT_NE(check_error(set).find("leave out -o to write to standard output"), std::string::npos) << check_error(set);
}

TEST(OutputSet, ALinkToARegularFileIsReplacedNeverWrittenThrough) {
  test::ScratchDir dir, elsewhere;
  const std::string precious = elsewhere.write("precious", "keep me");
  fs::create_symlink(precious, dir.path() / "out.txt");
  OutputSet set;
  set.add("-o", (dir.path() / "out.txt").string(), "new");
  set.commit();
  EXPECT_EQ(read_file(precious), "keep me");
  EXPECT_FALSE(fs::is_symlink(dir.path() / "out.txt"));
  EXPECT_EQ(read_file((dir.path() / "out.txt").string()), "new");
}

TEST(OutputSet, APlantedLinkAtAnyTemporaryNameIsNeverFollowed) {
  // A plain writer uses "<out>.tmp-trainsim" and opens it with O_TRUNC, following a link there.
  test::ScratchDir dir, elsewhere;
  const std::string precious = elsewhere.write("precious", "keep me");
  const fs::path out = dir.path() / "out.json";
  for (const std::string planted : {"out.json.tmp-trainsim", ".out.json.trainsim-XXXXXX", ".out.json.tmp"}) {
    fs::create_symlink(precious, dir.path() / planted);
  }
  OutputSet set;
  set.add("--trace", out.string(), "{\"fresh\": true}");
  set.commit();
  EXPECT_EQ(read_file(precious), "keep me");
  EXPECT_EQ(read_file(out.string()), "{\"fresh\": true}");
  EXPECT_EQ(listing(dir.path()).size(), 4u);
}

TEST(OutputSet, TwoOutputsNamingTheSameFileAreAnError) {
  test::ScratchDir dir;
  const fs::path d = dir.path();
  fs::create_directory(d / "sub");
  fs::create_directory_symlink(d, d / "self");
  const std::string existing = dir.write("existing.json", "old");
  fs::create_symlink(existing, d / "soft.json");
  fs::create_hard_link(existing, d / "hard.json");
  const std::vector<std::pair<std::string, std::string>> pairs{
      {(d / "same.json").string(), (d / "same.json").string()},
      {(d / "same.json").string(), (d / "." / "same.json").string()},
      {(d / "same.json").string(), (d / "sub" / ".." / "same.json").string()},
      {(d / "same.json").string(), (d / "self" / "same.json").string()},
      {existing, (d / "soft.json").string()},
      {existing, (d / "hard.json").string()},
  };
  for (const auto& [a, b] : pairs) {
    OutputSet set;
    set.add("-o/--output", a, "A");
    set.add("--trace", b, "B");
    const std::string message = check_error(set);
    EXPECT_EQ(message.rfind("--trace: expected a different file from -o/--output's", 0), 0u) << a << " / " << b << ": " << message;
    EXPECT_NE(message.find("the same file"), std::string::npos) << message;
    EXPECT_THROW(set.commit(), ConfigError);
  }
  EXPECT_EQ(listing(d), (std::set<std::string>{"sub", "self", "existing.json", "soft.json", "hard.json"}));
  EXPECT_EQ(read_file(existing), "old");
}

TEST(OutputSet, AnEmptyPathIsRefused) {
  OutputSet set;
  set.add("--trace", "", "{}");
  EXPECT_EQ(check_error(set), "--trace: expected a file path, got an empty path");
}

TEST(OutputSet, AnUnwritableDirectoryIsRefusedAtCheckTime) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into any directory";
  test::ScratchDir dir;
  fs::create_directory(dir.path() / "ro");
  fs::permissions(dir.path() / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  OutputSet set;
  set.add("-o", (dir.path() / "ro" / "x").string(), "x");
  EXPECT_NE(check_error(set).find("a directory this user can write"), std::string::npos) << check_error(set);
  fs::permissions(dir.path() / "ro", fs::perms::owner_all);
}

TEST(OutputSet, PrepareShowsNothingAtTheTargetsAndTheDestructorRemovesItsTemporaries) {
  test::ScratchDir dir;
  {
    OutputSet set;
    set.add("-o", (dir.path() / "a.txt").string(), "alpha");
    set.add("-o", (dir.path() / "b.txt").string(), "beta");
    set.prepare();
    const auto temps = set.temporary_paths();
    ASSERT_EQ(temps.size(), 2u);
    for (const auto& t : temps) {
      EXPECT_TRUE(fs::is_regular_file(t)) << t;
      EXPECT_EQ(fs::path(t).parent_path(), fs::canonical(dir.path()));
      EXPECT_EQ(fs::path(t).filename().string().rfind(".", 0), 0u) << "temporaries are hidden: " << t;
    }
    EXPECT_FALSE(fs::exists(dir.path() / "a.txt"));
    EXPECT_FALSE(fs::exists(dir.path() / "b.txt"));
  }
  EXPECT_TRUE(listing(dir.path()).empty());
}

TEST(OutputSet, AnInterruptRemovesTheTemporaries) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    test::ScratchDir dir;
    const std::string a = (dir.path() / "a.txt").string();
    EXPECT_EXIT(
        {
          install_cleanup_signal_handlers();
          OutputSet set;
          set.add("-o", a, std::string(1 << 20, 'a'));
          set.prepare();
          if (set.temporary_paths().size() != 1 || !fs::exists(set.temporary_paths()[0])) std::_Exit(7);
          std::raise(sig);
          std::_Exit(8);
        },
        ::testing::KilledBySignal(sig), "");
    EXPECT_TRUE(listing(dir.path()).empty()) << "a temporary survived signal " << sig;
  }
}

TEST(OutputSet, ConcurrentWritersOfOneTargetLeaveOneCompleteFile) {
  // Four processes write the same target at once, each its own 1 MiB of one letter, several
  // times: the file is always one writer's text, whole.
  test::ScratchDir dir;
  const std::string target = (dir.path() / "same.json").string();
  std::vector<pid_t> children;
  for (char letter : {'a', 'b', 'c', 'd'}) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        for (int round = 0; round < 3; ++round) {
          OutputSet set;
          set.add("--trace", target, std::string(1 << 20, letter));
          set.commit();
        }
      } catch (...) {
        std::_Exit(1);
      }
      std::_Exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer failed";
  }
  const std::string text = read_file(target);
  ASSERT_EQ(text.size(), std::size_t{1} << 20);
  EXPECT_EQ(text.find_first_not_of(text[0]), std::string::npos) << "a mixture of writers";
  EXPECT_EQ(listing(dir.path()), (std::set<std::string>{"same.json"}));
}

TEST(CleanupRegistry, RemovesRegisteredFilesOnlyWhileRegistered) {
  test::ScratchDir dir;
  const std::string a = dir.write("a", "x"), b = dir.write("b", "y");
  const int slot_a = register_cleanup_path(a);
  const int slot_b = register_cleanup_path(b);
  ASSERT_GE(slot_a, 0);
  ASSERT_GE(slot_b, 0);
  unregister_cleanup_path(slot_b);
  remove_registered_files();
  unregister_cleanup_path(slot_a);
  EXPECT_FALSE(fs::exists(a));
  EXPECT_TRUE(fs::exists(b));
  EXPECT_EQ(register_cleanup_path(""), -1);
  EXPECT_EQ(register_cleanup_path(std::string(5000, 'x')), -1);
}

TEST(CleanupRegistry, AnInterruptKillsAndReapsARegisteredChild) {
  test::ScratchDir dir;
  const std::string pid_file = (dir.path() / "pid").string();
  EXPECT_EXIT(
      {
        install_cleanup_signal_handlers();
        const pid_t child = ::fork();
        if (child == 0) {
          ::pause();
          std::_Exit(0);
        }
        std::ofstream(pid_file) << child;
        register_cleanup_child(child);
        std::raise(SIGTERM);
        std::_Exit(8);
      },
      ::testing::KilledBySignal(SIGTERM), "");
  const pid_t child = std::stoi(read_file(pid_file));
  // Reaped by the handler, so not even a zombie is left (its parent is gone as well).
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = ::kill(child, 0) != 0 && errno == ESRCH;
    if (!gone) ::usleep(10000);
  }
  EXPECT_TRUE(gone) << "the registered child " << child << " outlived the interrupted parent";
}

TEST(CleanupRegistry, AResetChildForgetsItsParentsFiles) {
  test::ScratchDir dir;
  const std::string a = dir.write("a", "x");
  const int slot = register_cleanup_path(a);
  ASSERT_GE(slot, 0);
  EXPECT_EXIT(
      {
        install_cleanup_signal_handlers();
        reset_cleanup_in_child();
        remove_registered_files();
        std::raise(SIGTERM);  // the default action again: no handler runs
        std::_Exit(8);
      },
      ::testing::KilledBySignal(SIGTERM), "");
  EXPECT_TRUE(fs::exists(a)) << "a forked child removed its parent's file";
  unregister_cleanup_path(slot);
}

TEST(CleanupRegistry, AnIgnoredSignalStaysIgnored) {
  EXPECT_EXIT(
      {
        reset_cleanup_in_child();
        std::signal(SIGHUP, SIG_IGN);  // as nohup leaves it
        install_cleanup_signal_handlers();
        std::raise(SIGHUP);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace trainsim
