#include "nearstream/common/clock.h"

#include <gtest/gtest.h>

#include <chrono>

namespace nearstream {
namespace {

int64_t ChronoMs(std::chrono::nanoseconds since_epoch) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count();
}

// The helpers read the clocks std::chrono's steady_clock and system_clock read, in the units
// their names say.
TEST(ClockTest, ReadsTheClocksOfSteadyAndSystemClock) {
  const int64_t steady_before = ChronoMs(std::chrono::steady_clock::now().time_since_epoch());
  const uint64_t ns = MonotonicNowNs();
  const int64_t ms = MonotonicNowMs();
  const int64_t steady_after = ChronoMs(std::chrono::steady_clock::now().time_since_epoch());
  EXPECT_LE(steady_before, static_cast<int64_t>(ns / 1000000));
  EXPECT_LE(static_cast<int64_t>(ns / 1000000), ms);
  EXPECT_LE(ms, steady_after);

  const int64_t wall_before = ChronoMs(std::chrono::system_clock::now().time_since_epoch());
  const int64_t wall = WallNowMs();
  const int64_t wall_after = ChronoMs(std::chrono::system_clock::now().time_since_epoch());
  EXPECT_LE(wall_before, wall);
  EXPECT_LE(wall, wall_after);
  EXPECT_GT(wall, int64_t{1577836800000});  // after 2020-01-01: milliseconds since 1970
}

TEST(ClockTest, MonotonicNeverGoesBack) {
  uint64_t last = MonotonicNowNs();
  for (int i = 0; i < 10000; ++i) {
    const uint64_t now = MonotonicNowNs();
    ASSERT_GE(now, last);
    last = now;
  }
}

}  // namespace
}  // namespace nearstream
