#include "nearstream/push/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

namespace nearstream::push {

Result<FutexWaitResult> FutexWait(uint32_t* word, uint32_t expected,
                                  std::chrono::nanoseconds timeout) {
  if (timeout < std::chrono::nanoseconds::zero()) timeout = std::chrono::nanoseconds::zero();
  const auto ns = timeout.count();
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  // FUTEX_WAIT (not FUTEX_WAIT_PRIVATE): the waker is another process.
  long rc = syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, nullptr, 0);
  if (rc == 0) return FutexWaitResult::kWoken;
  const int err = errno;
  switch (err) {
    case EAGAIN: return FutexWaitResult::kValueChanged;
    case ETIMEDOUT: return FutexWaitResult::kTimedOut;
    case EINTR: return FutexWaitResult::kInterrupted;
    default: return Status::FromErrno(StatusCode::kIoError, "futex wait", err);
  }
}

Result<int> FutexWake(uint32_t* word, int count) {
  long rc = syscall(SYS_futex, word, FUTEX_WAKE, count, nullptr, nullptr, 0);
  if (rc < 0) return Status::FromErrno(StatusCode::kIoError, "futex wake", errno);
  return static_cast<int>(rc);
}

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace nearstream::push
