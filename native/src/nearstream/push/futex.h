// Shared (inter-process) futex wait and wake on a 32-bit word of a MAP_SHARED mapping, and the
// doorbell/waiter-flag protocol built on them (docs/shm-layout.md, "Doorbells").
//
// The futexes are never FUTEX_PRIVATE_FLAG: the sleeper and the waker live in different processes
// (broker and TaskManager), which the kernel matches by the mapped file's inode and offset.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "nearstream/common/status.h"

namespace nearstream::push {

enum class FutexWaitResult {
  kWoken,         // woken by FUTEX_WAKE (or spuriously): re-check the condition
  kValueChanged,  // *word != expected when the kernel looked (EAGAIN)
  kTimedOut,
  kInterrupted,  // EINTR
};

// Sleeps while *word == expected, at most `timeout` (CLOCK_MONOTONIC, relative). Only errors
// other than EAGAIN/ETIMEDOUT/EINTR fail, with errno's text (kIoError).
Result<FutexWaitResult> FutexWait(uint32_t* word, uint32_t expected,
                                  std::chrono::nanoseconds timeout);

// Wakes up to `count` sleepers of `word`; returns how many were woken.
Result<int> FutexWake(uint32_t* word, int count);

// How a doorbell wait ended, for the metrics of the push path (spins vs futex sleeps).
struct WaitOutcome {
  bool ready = false;   // the condition held when the wait returned
  uint32_t sleeps = 0;  // futex waits issued (0: satisfied while spinning)
};

// The sleeper's half of the doorbell protocol: spins `spins` times on `ready()`, then announces
// itself in `*waiting_flag`, re-checks, and futex-waits on `*doorbell` until ready() or the
// timeout; clears the flag before returning. One sleeper per flag. `ready` must only read memory
// that the waker writes before it rings (see RingDoorbell).
template <typename Ready>
Result<WaitOutcome> AwaitDoorbell(uint32_t* doorbell, uint32_t* waiting_flag, Ready&& ready,
                                  int spins, std::chrono::nanoseconds timeout);

// The waker's half: bumps `*doorbell` and issues FUTEX_WAKE only when `*waiting_flag` is set. Call
// after the release store that makes the sleeper's condition true. No syscall when nobody sleeps.
inline Status RingDoorbell(uint32_t* doorbell, uint32_t* waiting_flag) {
  // Both seq_cst (no fences: they are what ThreadSanitizer cannot model). See AwaitDoorbell.
  std::atomic_ref<uint32_t>(*doorbell).fetch_add(1, std::memory_order_seq_cst);
  if (std::atomic_ref<uint32_t>(*waiting_flag).load(std::memory_order_seq_cst) == 0) {
    return Status::Ok();
  }
  Result<int> woken = FutexWake(doorbell, INT32_MAX);
  return woken.status();
}

void CpuRelax();

// ---- implementation ----

template <typename Ready>
Result<WaitOutcome> AwaitDoorbell(uint32_t* doorbell, uint32_t* waiting_flag, Ready&& ready,
                                  int spins, std::chrono::nanoseconds timeout) {
  WaitOutcome out;
  for (int i = 0; i < spins; ++i) {
    if (ready()) {
      out.ready = true;
      return out;
    }
    CpuRelax();
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::atomic_ref<uint32_t> bell(*doorbell);
  std::atomic_ref<uint32_t> flag(*waiting_flag);
  for (;;) {
    // Dekker-style, all four accesses seq_cst. The waker bumps the bell, then loads the flag;
    // we store the flag, then load the bell. If the waker's flag load came first in the single
    // total order, its bump precedes our bell load, so `seen` includes it and (release/acquire
    // through the bell) ready() sees its condition. Otherwise the waker sees the flag and wakes
    // us; a bump after our bell load makes FUTEX_WAIT return at once (value changed).
    flag.store(1, std::memory_order_seq_cst);
    const uint32_t seen = bell.load(std::memory_order_seq_cst);
    if (ready()) {
      out.ready = true;
      break;
    }
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds::zero()) break;
    ++out.sleeps;
    Result<FutexWaitResult> r = FutexWait(doorbell, seen, left);
    if (!r.ok()) {
      flag.store(0, std::memory_order_relaxed);
      return r.status();
    }
  }
  flag.store(0, std::memory_order_relaxed);
  return out;
}

}  // namespace nearstream::push
