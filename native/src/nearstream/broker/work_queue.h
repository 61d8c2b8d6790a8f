// The inbox of one worker thread. Producers (the dispatcher, long-poll wake-ups) push; the worker
// drains everything at once. The worker is woken only when it sleeps, so a busy worker costs
// producers no syscall: by a condition variable (PopAll), or, for a worker that sleeps in
// epoll_wait on sockets of its own as well, by an eventfd (PrepareToSleep, Awake).
#pragma once

#include <unistd.h>

#include <deque>

#include "nearstream/broker/request.h"
#include "nearstream/common/mutex.h"
#include "nearstream/common/thread_annotations.h"

namespace nearstream::broker {

class WorkQueue {
 public:
  WorkQueue() = default;
  // Wakes its worker by writing `wake_fd` (an eventfd the worker polls; not owned) instead.
  explicit WorkQueue(int wake_fd) : wake_fd_(wake_fd) {}

  void Push(Request r) NS_EXCLUDES(mu_) {
    bool wake;
    {
      MutexLock lock(&mu_);
      queue_.push_back(std::move(r));
      wake = sleeping_;
      sleeping_ = false;  // one wake-up is enough
    }
    if (wake) Wake();
  }

  // Blocks until work arrives or Stop(); moves all queued requests into `out`. Returns false
  // when stopped and empty.
  bool PopAll(std::deque<Request>* out) NS_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    while (queue_.empty() && !stopped_) {
      sleeping_ = true;
      cv_.Wait(&mu_);
      sleeping_ = false;
    }
    out->swap(queue_);
    return !out->empty();
  }

  // For a worker woken by the eventfd: true when it may sleep now (nothing queued, not stopped);
  // a Push from then on writes the eventfd. Awake() after the wait.
  bool PrepareToSleep() NS_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (!queue_.empty() || stopped_) return false;
    sleeping_ = true;
    return true;
  }
  void Awake() NS_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    sleeping_ = false;
  }
  bool stopped() NS_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return stopped_;
  }

  // Moves all queued requests into `out` without waiting; false when there were none.
  bool TryPopAll(std::deque<Request>* out) NS_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    out->swap(queue_);
    return !out->empty();
  }

  void Stop() NS_EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      stopped_ = true;
    }
    Wake();
  }

  size_t depth() NS_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return queue_.size();
  }

 private:
  void Wake() {
    if (wake_fd_ < 0) {
      cv_.SignalAll();
      return;
    }
    const uint64_t one = 1;
    ssize_t ignored = ::write(wake_fd_, &one, sizeof(one));
    (void)ignored;
  }

  const int wake_fd_ = -1;
  Mutex mu_;
  CondVar cv_;
  std::deque<Request> queue_ NS_GUARDED_BY(mu_);
  bool sleeping_ NS_GUARDED_BY(mu_) = false;
  bool stopped_ NS_GUARDED_BY(mu_) = false;
};

}  // namespace nearstream::broker
