// The inbox of one worker thread. Producers (the dispatcher, long-poll wake-ups) push; the worker
// drains everything at once. The condition variable is signalled only when the worker sleeps, so
// a busy worker costs producers no syscall.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>

#include "nearstream/broker/request.h"

namespace nearstream::broker {

class WorkQueue {
 public:
  void Push(Request r) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(r));
      wake = sleeping_;
    }
    if (wake) cv_.notify_one();
  }

  // Blocks until work arrives or Stop(); moves all queued requests into `out`. Returns false
  // when stopped and empty.
  bool PopAll(std::deque<Request>* out) {
    std::unique_lock<std::mutex> lock(mu_);
    while (queue_.empty() && !stopped_) {
      sleeping_ = true;
      cv_.wait(lock);
      sleeping_ = false;
    }
    out->swap(queue_);
    return !out->empty();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
  }

  size_t depth() {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Request> queue_;  // GUARDED_BY(mu_)
  bool sleeping_ = false;
  bool stopped_ = false;
};

}  // namespace nearstream::broker
