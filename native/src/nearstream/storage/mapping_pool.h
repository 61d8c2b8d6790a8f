// Mappings of dropped segments kept for reuse. A fresh anonymous mapping page-faults on every
// first touch (2048 faults per 8 MiB segment); under retention a broker drops and creates
// segments at its append rate, so reusing dropped ones keeps the append path fault-free.
//
// Retention's passes share the maintenance thread with the `async` fsyncs, so one pass may drop
// a second's worth of segments at once. With a fixed pool of 256 MiB a broker appending
// 300 MB/s unmapped half of what it dropped and faulted its next segments in afresh (~60 000
// faults a second). So the pool keeps whatever is dropped, up to kMaxBytes, and gives back what
// nobody took for kIdleMs: memory a deleted stream or a slower producer no longer needs still
// returns to the system, seconds later. Reused newest first, so that what demand no longer
// needs is what ages. Pooled memory never exceeds what the dropped segments held a moment
// before, so it does not raise the broker's peak.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

#include "nearstream/common/mutex.h"
#include "nearstream/common/thread_annotations.h"

namespace nearstream::storage {

class MappingPool {
 public:
  static constexpr size_t kMaxBytes = size_t{2} << 30;
  static constexpr int64_t kIdleMs = 10000;

  // The process's pool (never destroyed: segments may outlive main).
  static MappingPool& Get();

  // A mapping of exactly `capacity` bytes, or null when none is pooled.
  void* Take(uint32_t capacity) NS_EXCLUDES(mu_);
  // Keeps `data` (dropped at `now_ms`, monotonic); false when the pool is full and the caller
  // must unmap it.
  bool Give(void* data, uint32_t capacity, int64_t now_ms) NS_EXCLUDES(mu_);
  // Unmaps what was given kIdleMs or more before `now_ms` and not taken since; returns the bytes.
  size_t ReleaseIdle(int64_t now_ms) NS_EXCLUDES(mu_);
  size_t bytes() const NS_EXCLUDES(mu_);

 private:
  struct Mapping {
    void* data;
    uint32_t capacity;
    int64_t given_ms;
  };
  mutable Mutex mu_;
  std::deque<Mapping> free_ NS_GUARDED_BY(mu_);  // oldest first
  size_t bytes_ NS_GUARDED_BY(mu_) = 0;
};

}  // namespace nearstream::storage
