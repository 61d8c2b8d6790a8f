// The broker's push subscriptions (docs/protocol.md "Push subscriptions", docs/shm-layout.md):
// PushSubscribe creates a shared-memory region with one ring per source subtask, and push threads
// fill the rings with whole chunks of the rings' splits as Arrow batches.
//
// Threads: request workers call Subscribe/Update/Close/ConnectionClosed; the append path calls
// NotifyAppend; `threads` push threads each serve the subscriptions whose id mod threads is their
// index. A subscription's rings, producers and split positions belong to its push thread alone;
// an update is handed over under the thread's mutex and applied by the thread at its next pass.
//
// A push thread loops: for each ring with a free slot it reads whole chunks of the ring's splits
// (round-robin, from each split's push position) into the slot, publishes it and advances the
// positions past the chunks written. A full ring is skipped. When no ring got a slot in a pass
// (every ring full or idle) the thread sleeps: on the region's release doorbell when a ring is
// full, else on its own in-process bell, at most 50 ms. An append wakes a sleeping thread by
// bumping the word it sleeps on and FUTEX_WAKE; while the threads are busy an append costs one
// load (no syscall). The thread refreshes broker_heartbeat_ns every 50 ms and reclaims a ring
// whose consumer heartbeat is older than the subscription's consumer timeout: the ring is
// re-activated at once for a new consumer and restarts from its splits' current push positions
// (slots published to the dead consumer are not pushed again; the data stays in the segments);
// a ring nobody attached to since is not reclaimed again. A chunk too large for a slot and a
// damaged range (kDataLoss) go out as marker slots (docs/shm-layout.md) in their split's order.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nearstream/common/mutex.h"
#include "nearstream/common/status.h"
#include "nearstream/push/shm_region.h"
#include "nearstream/push/slot_ring.h"
#include "nearstream/push/subscription_spec.h"
#include "nearstream/storage/segment_files.h"
#include "nearstream/storage/stream_store.h"

namespace nearstream::push {

struct PushOptions {
  std::string dir = kDefaultShmDir;  // where region files are created
  int threads = 1;
  uint64_t broker_epoch = 0;
  uint32_t default_consumer_timeout_ms = 10000;  // for a subscribe that sends 0
  // After a pass that published only slots less than half full (its rings are tailing their
  // streamlets), a push thread waits this long before the next pass, so appends accumulate and
  // the next slot carries more of them: without it a tailing thread publishes a slot per append,
  // waking its consumers and being woken by every append, which on a small machine takes the CPU
  // the producers need. 0 = publish at once. Bounds the latency it adds to tailing reads.
  uint32_t linger_us = 1000;
  // The push threads' nice value (0 = as the rest of the broker, up to 19). Delivery can wait
  // (its data is stored; consumers catch up) while appends hold producers' bounded buffers: on a
  // broker whose cores are all busy, a positive value lets appends go first and push threads take
  // the CPU the workers leave. Pull has no such knob: its fetches run on the append workers.
  int nice = 0;
  // Where stream segments live (docs/shm-layout.md, "Segment files"). false: a stream's new
  // segments become files consumers can map from its first binary_view subscription on (older
  // segments' records reach view slots as copies). true: every stream's segments are files from
  // the start, so views never copy - at the price of segment memory living in the push
  // directory (a tmpfs whose size limit it then counts against).
  bool segment_files_always = false;
};

inline constexpr uint32_t kMaxPushLingerUs = 1'000'000;
inline constexpr int kMaxPushNice = 19;

// The geometry bounds of a subscription (INVALID_ARGUMENT outside them) are the
// NS_SHM_MIN_SLOTS_PER_RING ... NS_SHM_MAX_REGION_BYTES macros of shm_layout.h, shared with the
// JNI library and the Java client.

class PushManager {
 public:
  // `store` must outlive the manager.
  PushManager(PushOptions options, storage::StreamStore* store);
  ~PushManager();
  PushManager(const PushManager&) = delete;
  PushManager& operator=(const PushManager&) = delete;

  Status Start();
  // Ends every subscription (region closed and unlinked) and joins the threads. Idempotent.
  void Stop();

  // The subscription belongs to connection `conn_id`.
  Result<Subscribed> Subscribe(uint64_t conn_id, const SubscriptionSpec& spec);
  // Replaces the splits of every ring (`rings` has one entry per ring of the subscription): a
  // split that stays keeps its push position, a new one starts at its start.
  Status Update(uint64_t conn_id, uint64_t subscription_id, const std::vector<RingSpec>& rings);
  Status Close(uint64_t conn_id, uint64_t subscription_id);
  // Ends every subscription of a closed connection.
  void ConnectionClosed(uint64_t conn_id);
  // Ends every subscription of `stream` (one of its streamlets moved to another broker): their
  // regions are marked closed, so their readers fail over and subscribe where the streamlets
  // live now. Returns how many ended.
  size_t EndSubscriptionsOf(const storage::Stream* stream);

  // Called after an append to `stream` (and its NoteAppended): wakes the sleeping push threads
  // that serve the stream. One seq_cst load when no push thread sleeps.
  void NotifyAppend(const storage::Stream* stream);

  // nearstream_push_* values for Stats and /metrics.
  void CollectMetrics(std::vector<std::pair<std::string, uint64_t>>* out) const;

  size_t subscriptions() const;
  const std::string& dir() const { return options_.dir; }
  // How long a push thread spins before it sleeps; 0 when Start found the broker (the thread
  // that called it) confined to one CPU.
  int spins() const { return spins_; }

 private:
  struct Subscription;
  struct Thread;
  struct Split;
  struct Ring;

  void ThreadLoop(Thread* t);
  // One pass over the thread's subscriptions; returns whether any slot was published.
  // `*only_small`: every slot published was less than half full.
  bool ServeOnce(Thread* t, std::vector<std::shared_ptr<Subscription>>& subs, uint64_t now_ns,
                 bool* any_full, bool* only_small);
  // Fills and publishes one slot of `ring` if it has a free slot and data; `*small`: the slot
  // published carries less than half its bytes.
  bool FillRing(Thread* t, Subscription* sub, Ring* ring, bool* small);
  void Sleep(Thread* t, std::vector<std::shared_ptr<Subscription>>& subs);
  // Publishes a marker slot (NS_SHM_SLOT_*) whose one chunk map entry is the given range.
  void PublishMarker(Subscription* sub, Ring* ring, uint8_t* payload, uint32_t flags,
                     uint32_t streamlet, const storage::Position& at, uint32_t bytes,
                     uint32_t records, int64_t first_timestamp_ms);
  void ApplyUpdate(Subscription* sub);
  // Validates rings against the stream; fills the resolved splits of each ring.
  Status ResolveRings(storage::Stream* stream, const std::vector<RingSpec>& rings,
                      std::vector<std::vector<Split>>* out) const;
  void Kick(Thread* t);
  void EndSubscription(const std::shared_ptr<Subscription>& sub);
  Thread* ThreadOf(uint64_t subscription_id) const;

  const PushOptions options_;
  storage::StreamStore* const store_;
  std::vector<std::unique_ptr<Thread>> threads_;
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  int spins_ = kDefaultSpins;  // before a push thread sleeps (Start: 0 on a single CPU)
  // Where the segments of streams with view subscriptions live (docs/shm-layout.md, "Segment
  // files"); made by Start.
  std::shared_ptr<storage::SegmentFiles> segment_files_;

  mutable Mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Subscription>> subs_ NS_GUARDED_BY(mu_);
  uint64_t next_id_ NS_GUARDED_BY(mu_) = 1;

  std::atomic<uint32_t> sleepers_{0};  // push threads inside Sleep()

  std::atomic<uint64_t> subscribe_requests_{0};
  std::atomic<uint64_t> slots_published_{0};
  std::atomic<uint64_t> records_{0};           // rows pushed
  std::atomic<uint64_t> records_filtered_{0};  // records a subscription's filter kept out
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> rings_reclaimed_{0};
  std::atomic<uint64_t> chunks_by_fetch_{0};  // FETCH_CHUNK markers published
  std::atomic<uint64_t> damaged_ranges_{0};   // DAMAGED markers published
  std::atomic<uint64_t> view_slots_{0};       // binary_view slots published
  std::atomic<uint64_t> sleeps_{0};
  std::atomic<uint64_t> lingers_{0};
};

}  // namespace nearstream::push
