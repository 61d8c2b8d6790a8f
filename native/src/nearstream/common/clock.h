// The two clocks of the broker, its client and its tools.
//
// Monotonic (CLOCK_MONOTONIC, the clock of std::chrono::steady_clock): never steps when the
// system time is set, and is the same for every process of the machine, so it may be shared
// through memory (push heartbeats). Use it for deadlines, timeouts and elapsed times. Its epoch
// is arbitrary (boot): never persist it or send it to another machine.
//
// Wall (CLOCK_REALTIME, the clock of std::chrono::system_clock): milliseconds since the Unix
// epoch, and may step. Use it for timestamps that are stored or compared with those of producers
// and consumers: chunk timestamps, retention by age, LookupTimestamp, log lines.
#pragma once

#include <time.h>

#include <cstdint>

namespace nearstream {

inline uint64_t MonotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline int64_t MonotonicNowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

inline int64_t WallNowMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace nearstream
