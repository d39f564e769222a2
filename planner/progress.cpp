#include "progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace trainsim::planner {

Progress::Progress(bool enabled) : enabled_(enabled), start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

Progress::~Progress() {
  std::lock_guard lock(mutex_);
  if (drawn_) std::fputs("\r\033[K", stderr);
}

bool Progress::stderr_is_terminal() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDERR_FILENO) == 1 && (term == nullptr || std::strcmp(term, "dumb") != 0);
}

void Progress::set_label(std::string label) {
  std::lock_guard lock(mutex_);
  label_ = std::move(label);
  draw_locked(true);
}

void Progress::set_remaining(long remaining_at_most) {
  std::lock_guard lock(mutex_);
  remaining_ = remaining_at_most;
  draw_locked(false);
}

void Progress::done_one(bool cached) {
  std::lock_guard lock(mutex_);
  ++done_;
  if (cached) ++cached_;
  if (remaining_ > 0) --remaining_;
  draw_locked(false);
}

void Progress::finish() {
  std::lock_guard lock(mutex_);
  if (drawn_) std::fputs("\r\033[K", stderr);
  drawn_ = false;
}

long Progress::replayed() const {
  std::lock_guard lock(mutex_);
  return done_;
}

long Progress::cached() const {
  std::lock_guard lock(mutex_);
  return cached_;
}

void Progress::draw_locked(bool force) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const long total = done_ + remaining_;
  const double fraction = total > 0 ? static_cast<double>(done_) / static_cast<double>(total) : 0.0;
  constexpr int WIDTH = 24;
  const int filled = static_cast<int>(fraction * WIDTH);
  // The ETA assumes the remaining replays cost what the finished ones did; it is an upper
  // estimate, since the bound usually prunes part of what remains.
  const long fresh = done_ - cached_;
  const std::string eta = fresh > 0 && remaining_ > 0
                              ? fmt::format("ETA <= {:.0f} s", elapsed / static_cast<double>(done_) * static_cast<double>(remaining_))
                              : std::string("ETA --");
  std::fprintf(stderr, "\r\033[K%s [%s%s] %ld replays (%ld cached), at most %ld to go, %s", label_.c_str(),
               std::string(static_cast<std::size_t>(filled), '#').c_str(),
               std::string(static_cast<std::size_t>(WIDTH - filled), '.').c_str(), done_, cached_, remaining_, eta.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace trainsim::planner
