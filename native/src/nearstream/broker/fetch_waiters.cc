#include "nearstream/broker/fetch_waiters.h"

#include <algorithm>
#include <iterator>

namespace nearstream::broker {

bool FetchWaiters::Park(Request& req, std::shared_ptr<storage::Stream> stream,
                        std::vector<Watched> watched) {
  std::erase_if(watched,
                [&](const Watched& w) { return w.streamlet >= stream->streamlet_count(); });
  // Sorted by streamlet, oldest generation first, so that unique() keeps the oldest of a
  // streamlet read twice.
  std::sort(watched.begin(), watched.end(), [](const Watched& a, const Watched& b) {
    return a.streamlet != b.streamlet ? a.streamlet < b.streamlet : a.generation < b.generation;
  });
  watched.erase(
      std::unique(watched.begin(), watched.end(),
                  [](const Watched& a, const Watched& b) { return a.streamlet == b.streamlet; }),
      watched.end());

  MutexLock lock(&mu_);
  // An append bumps its streamlet's generation and then loads count_ (Wake's fast path); here
  // count_ is raised and then the generations are loaded, all seq_cst. So either this sees the
  // new generation and refuses, or that Wake sees a waiter and takes mu_ after this parks. The
  // same holds for a deletion: MarkDeleted and NoteAppended() come before WakeAll.
  count_.store(waiters_.size() + 1, std::memory_order_seq_cst);
  bool moved_on = stream->deleted();
  for (const Watched& w : watched) {
    moved_on = moved_on || stream->streamlet_generation(w.streamlet) != w.generation;
  }
  if (moved_on) {
    count_.store(waiters_.size(), std::memory_order_seq_cst);
    return false;
  }
  const storage::Stream* key_stream = stream.get();
  waiters_.push_back(Waiter{std::move(req), std::move(stream), {}});
  auto it = std::prev(waiters_.end());
  it->slots.reserve(watched.size());
  for (const Watched& w : watched) {
    Key key{key_stream, w.streamlet};
    std::vector<Entry>& bucket = index_[key];
    it->slots.push_back(Slot{key, bucket.size()});
    bucket.push_back(Entry{it, static_cast<uint32_t>(it->slots.size() - 1)});
  }
  count_.store(waiters_.size(), std::memory_order_seq_cst);
  return true;
}

Request FetchWaiters::RemoveLocked(WaiterList::iterator it) {
  for (const Slot& slot : it->slots) {
    auto b = index_.find(slot.key);
    std::vector<Entry>& bucket = b->second;
    if (slot.pos + 1 != bucket.size()) {
      bucket[slot.pos] = bucket.back();
      const Entry& moved = bucket[slot.pos];
      moved.waiter->slots[moved.slot].pos = slot.pos;
    }
    bucket.pop_back();
    if (bucket.empty()) index_.erase(b);
  }
  Request req = std::move(it->req);
  waiters_.erase(it);
  return req;
}

void FetchWaiters::Wake(const storage::Stream* stream, std::span<const uint32_t> streamlets) {
  if (count_.load(std::memory_order_seq_cst) == 0) return;
  std::vector<Request> ready;
  {
    MutexLock lock(&mu_);
    for (uint32_t id : streamlets) {
      for (auto b = index_.find(Key{stream, id}); b != index_.end();
           b = index_.find(Key{stream, id})) {
        ready.push_back(RemoveLocked(b->second.back().waiter));
      }
    }
    count_.store(waiters_.size(), std::memory_order_seq_cst);
  }
  woken_.fetch_add(ready.size(), std::memory_order_relaxed);
  for (auto& r : ready) requeue_(std::move(r));
}

void FetchWaiters::WakeAll(const storage::Stream* stream) {
  if (count_.load(std::memory_order_seq_cst) == 0) return;
  std::vector<Request> ready;
  {
    MutexLock lock(&mu_);
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      auto next = std::next(it);
      if (it->stream.get() == stream) ready.push_back(RemoveLocked(it));
      it = next;
    }
    count_.store(waiters_.size(), std::memory_order_seq_cst);
  }
  for (auto& r : ready) requeue_(std::move(r));
}

void FetchWaiters::ExpireDue(int64_t now_ms) {
  if (count_.load(std::memory_order_acquire) == 0) return;
  std::vector<Request> ready;
  {
    MutexLock lock(&mu_);
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      auto next = std::next(it);
      Request& r = it->req;
      if (r.deadline_ms <= now_ms || r.conn->closed()) {
        r.wait_over = true;
        ready.push_back(RemoveLocked(it));
      }
      it = next;
    }
    count_.store(waiters_.size(), std::memory_order_seq_cst);
  }
  expired_.fetch_add(ready.size(), std::memory_order_relaxed);
  for (auto& r : ready) requeue_(std::move(r));
}

int64_t FetchWaiters::NextDeadline() {
  if (count_.load(std::memory_order_acquire) == 0) return -1;
  MutexLock lock(&mu_);
  int64_t next = -1;
  for (const auto& w : waiters_) {
    if (next < 0 || w.req.deadline_ms < next) next = w.req.deadline_ms;
  }
  return next;
}

size_t FetchWaiters::size() { return count_.load(std::memory_order_acquire); }

}  // namespace nearstream::broker
