// Long-poll fetches that found nothing wait here instead of occupying a worker (with --workers 1
// a blocked worker would stall the broker). An append to one of the fetch's streamlets, the
// deadline, or the stream's deletion sends the request back to its worker's queue.
//
// A parked fetch is indexed under each (stream, streamlet) it reads, so an append wakes the
// fetches of the streamlets it appended to and nothing else, in time proportional to the number
// woken (not to the number parked).
#pragma once

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "nearstream/broker/request.h"
#include "nearstream/common/mutex.h"
#include "nearstream/common/thread_annotations.h"
#include "nearstream/storage/stream.h"

namespace nearstream::broker {

class FetchWaiters {
 public:
  // Re-queues a request on the worker that owns its connection.
  using RequeueFn = std::function<void(Request)>;
  explicit FetchWaiters(RequeueFn requeue) : requeue_(std::move(requeue)) {}

  // A streamlet a fetch reads and its Stream::streamlet_generation() read before reading it.
  struct Watched {
    uint32_t streamlet;
    uint64_t generation;
  };

  // Parks `req` until one of the `watched` streamlets of `stream` sees an append (or the stream
  // is deleted, or the deadline passes). Returns false (and leaves `req` untouched) when that
  // already happened — a watched generation moved on, or the stream is deleted — so the caller
  // retries at once. Streamlets out of range are ignored; duplicates are watched once.
  bool Park(Request& req, std::shared_ptr<storage::Stream> stream, std::vector<Watched> watched)
      NS_EXCLUDES(mu_);

  // Sends `req` straight back to its worker's queue.
  void Requeue(Request req) { requeue_(std::move(req)); }

  // Called after appends to `streamlets` of `stream` (after Stream::NoteAppended(id) for each):
  // re-queues the fetches parked on any of them. Cheap when nobody waits.
  void Wake(const storage::Stream* stream, std::span<const uint32_t> streamlets) NS_EXCLUDES(mu_);
  // Called after `stream` was deleted: re-queues every fetch parked on it (they answer
  // STREAM_NOT_FOUND). Not counted in woken_total().
  void WakeAll(const storage::Stream* stream) NS_EXCLUDES(mu_);

  // Re-queues (with wait_over set) every waiter whose deadline passed or whose connection closed.
  void ExpireDue(int64_t now_ms) NS_EXCLUDES(mu_);
  // The nearest deadline, or -1 when nobody waits.
  int64_t NextDeadline() NS_EXCLUDES(mu_);
  size_t size();

  uint64_t expired_total() const { return expired_.load(std::memory_order_relaxed); }
  // Parked fetches re-queued by Wake (appends), since the start.
  uint64_t woken_total() const { return woken_.load(std::memory_order_relaxed); }

 private:
  struct Key {
    const storage::Stream* stream;
    uint32_t streamlet;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<const void*>()(k.stream) ^
             (static_cast<size_t>(k.streamlet) * 0x9E3779B97F4A7C15ull);
    }
  };
  // Where a waiter sits in the index: the bucket of `key`, at `pos`.
  struct Slot {
    Key key;
    size_t pos;
  };
  struct Waiter {
    Request req;
    std::shared_ptr<storage::Stream> stream;
    std::vector<Slot> slots;  // one per watched streamlet
  };
  using WaiterList = std::list<Waiter>;
  // A bucket entry: the waiter and which of its slots points back here.
  struct Entry {
    WaiterList::iterator waiter;
    uint32_t slot;
  };

  // Unlinks `it` from the index and the list (O(its streamlets)); returns its request.
  Request RemoveLocked(WaiterList::iterator it) NS_REQUIRES(mu_);

  RequeueFn requeue_;
  Mutex mu_;
  WaiterList waiters_ NS_GUARDED_BY(mu_);
  std::unordered_map<Key, std::vector<Entry>, KeyHash> index_
      NS_GUARDED_BY(mu_);  // no empty buckets
  // waiters_.size(), plus one while Park checks the generations (see Park). Written under mu_,
  // read without it by Wake's fast path.
  std::atomic<size_t> count_{0};
  std::atomic<uint64_t> expired_{0};
  std::atomic<uint64_t> woken_{0};
};

}  // namespace nearstream::broker
