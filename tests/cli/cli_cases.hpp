#pragma once
// Shared by the CLI tests of bad input (hardening_test.cpp, reader_limits_test.cpp,
// framework_arguments_test.cpp, messages_test.cpp): a case is a command line and the message it
// must be refused with; each must exit 2, print nothing on stdout, say that message on stderr (one
// message, not megabytes, and no NUL), and do so quickly: in CPU seconds, which a machine shared
// with other builds does not stretch as it stretches the wall clock.

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <string>
#include <vector>

#include "test_support.hpp"

namespace trainsim::test {

struct Case {
  const char* name;
  std::string args;     // {dir} is the scratch directory with the fixtures
  std::string message;  // expected on stderr
};

inline std::string expand(std::string s, const std::string& dir) {
  for (auto pos = s.find("{dir}"); pos != std::string::npos; pos = s.find("{dir}")) s.replace(pos, 5, dir);
  return s;
}

// CPU seconds (user and system) that the finished children of this process have used.
inline double children_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

// The sanitizer build (TRAINSIM_SANITIZE, which defines __SANITIZE_ADDRESS__) instruments every
// access: its trainsim reads a large input several times slower (21 Mi JSON values: 3 s of CPU, 21 s).
#ifdef __SANITIZE_ADDRESS__
inline constexpr double CPU_SLOWDOWN = 10;
#else
inline constexpr double CPU_SLOWDOWN = 1;
#endif

// `max_cpu_seconds`: refused before anything is allocated or simulated for long.
inline void expect_refused(const std::vector<Case>& cases, const std::string& dir, double max_cpu_seconds = 5.0) {
  max_cpu_seconds *= CPU_SLOWDOWN;
  for (const auto& c : cases) {
    const double start = children_cpu_seconds();
    const CommandResult r = run_trainsim(expand(c.args, dir));
    const double seconds = children_cpu_seconds() - start;
    const std::string expected = expand(c.message, dir);
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.err.substr(0, 2000);
    EXPECT_NE(r.err.find(expected), std::string::npos) << c.name << ":\n  expected: " << expected.substr(0, 2000)
                                                        << "\n  got: " << r.err.substr(0, 2000);
    EXPECT_TRUE(r.out.empty()) << c.name;
    EXPECT_LT(r.err.size(), 4096u) << c.name;
    EXPECT_EQ(r.err.find('\0'), std::string::npos) << c.name;
    EXPECT_LT(seconds, max_cpu_seconds) << c.name;
  }
}

}  // namespace trainsim::test
