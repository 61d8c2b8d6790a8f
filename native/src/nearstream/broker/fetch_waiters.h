// Long-poll fetches that found nothing wait here instead of occupying a worker (with --workers 1
// a blocked worker would stall the broker). An append to the stream, the deadline, or the
// stream's deletion sends the request back to its worker's queue.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "nearstream/broker/request.h"
#include "nearstream/storage/stream.h"

namespace nearstream::broker {

class FetchWaiters {
 public:
  // Re-queues a request on the worker that owns its connection.
  using RequeueFn = std::function<void(Request)>;
  explicit FetchWaiters(RequeueFn requeue) : requeue_(std::move(requeue)) {}

  // Parks `req` until `stream` sees an append after generation `seen`. Returns false (and leaves
  // `req` untouched) when an append already happened, so the caller retries at once.
  bool Park(Request& req, std::shared_ptr<storage::Stream> stream, uint64_t seen);

  // Sends `req` straight back to its worker's queue.
  void Requeue(Request req) { requeue_(std::move(req)); }

  // Called after appends to `stream`: re-queues its waiters. Cheap when nobody waits.
  void Wake(const storage::Stream* stream);

  // Re-queues (with wait_over set) every waiter whose deadline passed or whose connection closed.
  void ExpireDue(int64_t now_ms);
  // The nearest deadline, or -1 when nobody waits.
  int64_t NextDeadline();
  size_t size();

  uint64_t expired_total() const { return expired_.load(std::memory_order_relaxed); }

 private:
  struct Parked {
    Request req;
    std::shared_ptr<storage::Stream> stream;
  };

  RequeueFn requeue_;
  std::mutex mu_;
  std::vector<Parked> parked_;  // GUARDED_BY(mu_)
  std::atomic<size_t> count_{0};
  std::atomic<uint64_t> expired_{0};
};

}  // namespace nearstream::broker
