#include "nearstream/broker/fetch_waiters.h"

namespace nearstream::broker {

bool FetchWaiters::Park(Request& req, std::shared_ptr<storage::Stream> stream, uint64_t seen) {
  std::lock_guard<std::mutex> lock(mu_);
  // Appends bump the generation before calling Wake (which takes mu_), so checking it under
  // mu_ closes the window between "found nothing" and "parked".
  if (stream->append_generation() != seen) return false;
  parked_.push_back(Parked{std::move(req), std::move(stream)});
  count_.store(parked_.size(), std::memory_order_release);
  return true;
}

void FetchWaiters::Wake(const storage::Stream* stream) {
  if (count_.load(std::memory_order_acquire) == 0) return;
  std::vector<Request> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < parked_.size();) {
      if (parked_[i].stream.get() == stream) {
        ready.push_back(std::move(parked_[i].req));
        parked_[i] = std::move(parked_.back());
        parked_.pop_back();
      } else {
        ++i;
      }
    }
    count_.store(parked_.size(), std::memory_order_release);
  }
  for (auto& r : ready) requeue_(std::move(r));
}

void FetchWaiters::ExpireDue(int64_t now_ms) {
  if (count_.load(std::memory_order_acquire) == 0) return;
  std::vector<Request> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < parked_.size();) {
      Request& r = parked_[i].req;
      if (r.deadline_ms <= now_ms || r.conn->closed()) {
        r.wait_over = true;
        ready.push_back(std::move(r));
        parked_[i] = std::move(parked_.back());
        parked_.pop_back();
      } else {
        ++i;
      }
    }
    count_.store(parked_.size(), std::memory_order_release);
  }
  expired_.fetch_add(ready.size(), std::memory_order_relaxed);
  for (auto& r : ready) requeue_(std::move(r));
}

int64_t FetchWaiters::NextDeadline() {
  if (count_.load(std::memory_order_acquire) == 0) return -1;
  std::lock_guard<std::mutex> lock(mu_);
  int64_t next = -1;
  for (const auto& p : parked_) {
    if (next < 0 || p.req.deadline_ms < next) next = p.req.deadline_ms;
  }
  return next;
}

size_t FetchWaiters::size() { return count_.load(std::memory_order_acquire); }

}  // namespace nearstream::broker
