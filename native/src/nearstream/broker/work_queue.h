// The inbox of one worker thread. Producers (the dispatcher, long-poll wake-ups) push; the worker
// drains everything at once. The condition variable is signalled only when the worker sleeps, so
// a busy worker costs producers no syscall.
#pragma once

#include <deque>

#include "nearstream/broker/request.h"
#include "nearstream/common/mutex.h"
#include "nearstream/common/thread_annotations.h"

namespace nearstream::broker {

class WorkQueue {
 public:
  void Push(Request r) NS_EXCLUDES(mu_) {
    bool wake;
    {
      MutexLock lock(&mu_);
      queue_.push_back(std::move(r));
      wake = sleeping_;
    }
    if (wake) cv_.Signal();
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
    cv_.SignalAll();
  }

  size_t depth() NS_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return queue_.size();
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::deque<Request> queue_ NS_GUARDED_BY(mu_);
  bool sleeping_ NS_GUARDED_BY(mu_) = false;
  bool stopped_ NS_GUARDED_BY(mu_) = false;
};

}  // namespace nearstream::broker
