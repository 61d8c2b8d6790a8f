#include "nearstream/push/push_manager.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <unordered_set>

#include "nearstream/common/byte_io.h"
#include "nearstream/common/log.h"
#include "nearstream/common/thread_name.h"
#include "nearstream/push/arrow_slot_writer.h"
#include "nearstream/push/futex.h"
#include "nearstream/push/slot_ring.h"
#include "nearstream/push/stale_regions.h"
#include "nearstream/push/update_fold.h"
#include "nearstream/push/view_slot_writer.h"
#include "nearstream/shm_layout.h"
#include "nearstream/storage/chunk.h"

namespace nearstream::push {

using storage::Position;

namespace {

constexpr uint64_t kHeartbeatEveryNs = 50'000'000;  // broker_heartbeat_ns refresh
constexpr auto kSleepTimeout = std::chrono::milliseconds(50);
// When rings of several regions are full the thread can sleep on one doorbell only.
constexpr auto kShortSleepTimeout = std::chrono::milliseconds(5);

// Tells the chunks [first, end) of one split's read which segment file holds them (segment ids
// are unique within a streamlet, and a read's segments are the ones its chunks point into).
void NoteSegmentFiles(const storage::ReadOutcome& read, size_t first,
                      std::vector<SlotChunk>* chunks) {
  const storage::Segment* seg = nullptr;
  for (size_t i = first; i < chunks->size(); ++i) {
    SlotChunk& c = (*chunks)[i];
    if (seg == nullptr || seg->id() != c.position.segment) {
      seg = nullptr;
      for (const auto& s : read.segments) {
        if (s->id() == c.position.segment) seg = s.get();
      }
    }
    if (seg == nullptr || seg->file_number() == 0) continue;
    c.segment_file = seg->file_number();
    c.segment_file_bytes = seg->capacity();
    c.segment_base = seg->data();
  }
}

// Moves into `slot_pins` the segments of `pins` whose files the written chunks point into. The
// chunks of one segment are consecutive, so each file is looked up once.
void PinSegmentFiles(std::vector<std::shared_ptr<const storage::Segment>>& pins,
                     std::span<const SlotChunk> written,
                     std::vector<std::shared_ptr<const storage::Segment>>* slot_pins) {
  uint64_t last = 0;
  for (const SlotChunk& c : written) {
    if (c.segment_file == 0 || c.segment_file == last) continue;
    last = c.segment_file;
    for (auto& seg : pins) {
      if (seg != nullptr && seg->file_number() == c.segment_file) {
        slot_pins->push_back(std::move(seg));  // moved-from: null, never matched again
        break;
      }
    }
  }
}

}  // namespace

struct PushManager::Split {
  uint32_t streamlet = 0;
  storage::Streamlet* s = nullptr;
  Position pos;
  bool failed = false;   // a read error or a corrupt chunk header: the split is not served
  bool restart = false;  // queued update: start at pos even if the split is being pushed
};

struct PushManager::Ring {
  std::unique_ptr<RingProducer> producer;
  // Per slot, the segments whose files the views of its last publication point into: held
  // until the consumer releases the slot (the broker finds it free again), the ring is
  // reclaimed or the subscription ends, so retention cannot hand such a file to a new segment.
  std::vector<std::vector<std::shared_ptr<const storage::Segment>>> slot_pins;
  uint32_t subtask = 0;
  std::vector<Split> splits;
  size_t next = 0;    // round-robin start among the splits
  bool full = false;  // no free slot at the last look
};

struct PushManager::Subscription {
  uint64_t id = 0;
  uint64_t conn_id = 0;
  std::shared_ptr<storage::Stream> stream;
  std::unique_ptr<ShmRegion> region;  // destroyed after the rings' producers
  uint64_t timeout_ns = 0;
  RecordFilter filter;  // fixed for the subscription's life
  uint32_t slot_format = NS_SHM_SLOT_FORMAT_BINARY;
  std::atomic<bool> ended{false};

  // The push thread's alone.
  std::vector<Ring> rings;
  uint64_t seen_generation = 0;

  // Handed over by Update under the serving thread's mutex.
  bool has_pending = false;
  std::vector<uint32_t> pending_subtasks;
  std::vector<std::vector<Split>> pending;
};

struct PushManager::Thread {
  int index = 0;
  std::thread thread;
  Mutex mu;
  std::vector<std::shared_ptr<Subscription>> subs NS_GUARDED_BY(mu);
  std::atomic<bool> dirty{true};  // subs or a pending update changed

  // Sleeping: the word the thread futex-waits on (its own bell or a region's release doorbell).
  Mutex wake_mu;
  uint32_t* sleep_word NS_GUARDED_BY(wake_mu) = nullptr;
  // The streams it serves.
  std::vector<const storage::Stream*> watching NS_GUARDED_BY(wake_mu);
  std::atomic<uint32_t> waiting{0};
  alignas(64) uint32_t bell = 0;
  uint32_t bell_flag = 0;

  std::atomic<uint64_t> busy_ns{0};
  // Scratch of FillRing.
  std::vector<SlotChunk> chunks;
  std::vector<size_t> chunk_split;
  std::vector<std::shared_ptr<const storage::Segment>> pins;
  std::vector<uint8_t> passes;  // the filter's verdicts (WriteArrowSlot)
  struct ReadEnd {
    bool read = false;
    Position next;       // where the split's read stopped
    size_t chunks = 0;   // chunks it read
    size_t written = 0;  // of which went into the slot
  };
  std::vector<ReadEnd> ends;  // per split of the ring being filled
};

PushManager::PushManager(PushOptions options, storage::StreamStore* store)
    : options_(std::move(options)), store_(store) {
  const int n = std::max(1, options_.threads);
  for (int i = 0; i < n; ++i) {
    threads_.push_back(std::make_unique<Thread>());
    threads_.back()->index = i;
  }
}

PushManager::~PushManager() { Stop(); }

Status PushManager::Start() {
  if (options_.threads < 1) return Status::InvalidArgument("--push-threads must be at least 1");
  if (options_.linger_us > kMaxPushLingerUs) {
    return Status::InvalidArgument("--push-linger-us must be at most " +
                                   std::to_string(kMaxPushLingerUs));
  }
  if (options_.nice < 0 || options_.nice > kMaxPushNice) {
    // Negative values need CAP_SYS_NICE and would let delivery starve appends.
    return Status::InvalidArgument("--push-nice must be 0 to " + std::to_string(kMaxPushNice));
  }
  if (started_) return Status::Ok();
  started_ = true;
  // On a broker confined to one CPU, a push thread spinning before it sleeps only keeps that CPU
  // from the workers whose appends it is waiting for.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (::sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) == 1) spins_ = 0;
  // A broker killed before it could unlink its regions left them here; nobody else removes them.
  RemoveRegionsOfDeadBrokers(options_.dir);
  segment_files_ =
      std::make_shared<storage::SegmentFiles>(options_.dir, SegmentFilePrefix(::getpid()));
  if (options_.segment_files_always) store_->UseSegmentFilesForAll(segment_files_);
  for (auto& t : threads_) {
    Thread* raw = t.get();
    t->thread = std::thread([this, raw] { ThreadLoop(raw); });
    NameThread(t->thread, "ns-push-" + std::to_string(t->index));
  }
  return Status::Ok();
}

void PushManager::Stop() {
  if (stopping_.exchange(true)) return;
  for (auto& t : threads_) Kick(t.get());
  for (auto& t : threads_) {
    if (t->thread.joinable()) t->thread.join();
  }
  std::vector<std::shared_ptr<Subscription>> all;
  {
    MutexLock lock(&mu_);
    for (auto& [id, sub] : subs_) all.push_back(sub);
    subs_.clear();
  }
  for (auto& sub : all) EndSubscription(sub);
  // Segments outlive the push manager (their streams do); their memory stays, their names go.
  if (segment_files_ != nullptr) segment_files_->UnlinkAll();
}

PushManager::Thread* PushManager::ThreadOf(uint64_t subscription_id) const {
  return threads_[subscription_id % threads_.size()].get();
}

size_t PushManager::subscriptions() const {
  MutexLock lock(&mu_);
  return subs_.size();
}

// ---- requests (worker threads) ------------------------------------------------------------------

Status PushManager::ResolveRings(storage::Stream* stream, const std::vector<RingSpec>& rings,
                                 std::vector<std::vector<Split>>* out) const {
  std::unordered_set<uint32_t> seen;
  out->clear();
  for (size_t i = 0; i < rings.size(); ++i) {
    std::vector<Split> splits;
    for (const SplitStart& ps : rings[i].splits) {
      storage::Streamlet* s = stream->streamlet(ps.streamlet);
      if (s == nullptr) {
        return Status::StreamletNotFound("stream '" + stream->config().name +
                                         "' has no streamlet " + std::to_string(ps.streamlet) +
                                         " (it has " + std::to_string(stream->streamlet_count()) +
                                         ")");
      }
      if (!seen.insert(ps.streamlet).second) {
        return Status::InvalidArgument("streamlet " + std::to_string(ps.streamlet) +
                                       " is in more than one split of the subscription");
      }
      Split split;
      split.streamlet = ps.streamlet;
      split.s = s;
      split.pos = ps.start;
      splits.push_back(split);
    }
    out->push_back(std::move(splits));
  }
  return Status::Ok();
}

Result<Subscribed> PushManager::Subscribe(uint64_t conn_id, const SubscriptionSpec& spec) {
  subscribe_requests_.fetch_add(1, std::memory_order_relaxed);
  if (stopping_.load(std::memory_order_acquire)) {
    return Status::ShuttingDown("the broker is shutting down");
  }
  RegionGeometry g;
  g.ring_count = static_cast<uint32_t>(spec.rings.size());
  g.slots_per_ring = spec.slots_per_ring;
  g.slot_bytes = spec.slot_bytes;
  if (g.slots_per_ring < NS_SHM_MIN_SLOTS_PER_RING ||
      g.slots_per_ring > NS_SHM_MAX_SLOTS_PER_RING) {
    return Status::InvalidArgument(
        "slots_per_ring must be in " + std::to_string(NS_SHM_MIN_SLOTS_PER_RING) + ".." +
        std::to_string(NS_SHM_MAX_SLOTS_PER_RING) + ", not " + std::to_string(g.slots_per_ring));
  }
  if (g.slot_bytes < NS_SHM_MIN_SLOT_BYTES || g.slot_bytes > NS_SHM_MAX_PUSH_SLOT_BYTES ||
      g.slot_bytes % NS_SHM_BUFFER_ALIGNMENT != 0) {
    return Status::InvalidArgument("slot_bytes must be a multiple of " +
                                   std::to_string(NS_SHM_BUFFER_ALIGNMENT) + " in " +
                                   std::to_string(NS_SHM_MIN_SLOT_BYTES >> 10) + " KiB.." +
                                   std::to_string(NS_SHM_MAX_PUSH_SLOT_BYTES >> 20) + " MiB, not " +
                                   std::to_string(g.slot_bytes));
  }
  if (spec.rings.empty() || spec.rings.size() > NS_SHM_MAX_RINGS) {
    return Status::InvalidArgument("ring_count must be in 1.." + std::to_string(NS_SHM_MAX_RINGS) +
                                   ", not " + std::to_string(spec.rings.size()));
  }
  if (g.region_bytes() > NS_SHM_MAX_REGION_BYTES) {
    return Status::InvalidArgument("the region would take " + std::to_string(g.region_bytes()) +
                                   " bytes, more than " +
                                   std::to_string(NS_SHM_MAX_REGION_BYTES >> 30) + " GiB");
  }
  if (spec.slot_format != NS_SHM_SLOT_FORMAT_BINARY &&
      spec.slot_format != NS_SHM_SLOT_FORMAT_BINARY_VIEW) {
    return Status::InvalidArgument("unknown slot format " + std::to_string(spec.slot_format));
  }
  const bool views = spec.slot_format == NS_SHM_SLOT_FORMAT_BINARY_VIEW;
  if (views && segment_files_ == nullptr) {
    return Status::ShuttingDown("push is not started");
  }
  std::shared_ptr<storage::Stream> stream = store_->Find(spec.stream);
  if (stream == nullptr || stream->deleted()) {
    return Status::StreamNotFound("stream '" + spec.stream + "' does not exist");
  }
  std::vector<std::vector<Split>> splits;
  RETURN_IF_ERROR(ResolveRings(stream.get(), spec.rings, &splits));
  // From here on the stream's new segments are files the consumers can map; older segments'
  // records reach the views as copies.
  if (views) stream->UseSegmentFiles(segment_files_);

  auto sub = std::make_shared<Subscription>();
  {
    MutexLock lock(&mu_);
    sub->id = next_id_++;
  }
  sub->conn_id = conn_id;
  sub->stream = stream;
  sub->filter = spec.filter;
  sub->slot_format = spec.slot_format;
  sub->timeout_ns = uint64_t{spec.consumer_timeout_ms == 0 ? options_.default_consumer_timeout_ms
                                                           : spec.consumer_timeout_ms} *
                    1'000'000;
  ShmRegion::CreateOptions co;
  co.dir = options_.dir;
  co.name = RegionName(::getpid(), sub->id);
  co.geometry = g;
  co.broker_epoch = options_.broker_epoch;
  co.slot_format = spec.slot_format;
  if (views) co.segment_file_prefix = segment_files_->prefix();
  Result<std::unique_ptr<ShmRegion>> region = ShmRegion::Create(co);
  if (!region.ok()) {
    return Status::StorageError("cannot create push region: " + region.status().message());
  }
  sub->region = std::move(*region);
  const uint64_t now = MonotonicNowNs();
  sub->region->SetBrokerHeartbeat(now);
  sub->rings.resize(g.ring_count);
  for (uint32_t i = 0; i < g.ring_count; ++i) {
    Ring& ring = sub->rings[i];
    ring.producer = std::make_unique<RingProducer>(sub->region.get(), i);
    ring.slot_pins.resize(g.slots_per_ring);
    ring.subtask = spec.rings[i].subtask_index;
    ring.splits = std::move(splits[i]);
    ring.producer->Activate(ring.subtask, now);
  }
  Subscribed response;
  response.id = sub->id;
  response.broker_epoch = options_.broker_epoch;
  response.region_path = sub->region->path();
  response.region_bytes = sub->region->size();
  {
    MutexLock lock(&mu_);
    if (stopping_.load(std::memory_order_acquire)) {
      sub->region->MarkClosed();
      (void)sub->region->Unlink();
      return Status::ShuttingDown("the broker is shutting down");
    }
    subs_.emplace(sub->id, sub);
    Thread* t = ThreadOf(sub->id);
    MutexLock tlock(&t->mu);
    t->subs.push_back(sub);
  }
  Kick(ThreadOf(sub->id));
  return response;
}

Status PushManager::Update(uint64_t conn_id, uint64_t subscription_id,
                           const std::vector<RingSpec>& rings) {
  std::shared_ptr<Subscription> sub;
  {
    MutexLock lock(&mu_);
    auto it = subs_.find(subscription_id);
    if (it != subs_.end() && it->second->conn_id == conn_id) sub = it->second;
  }
  if (sub == nullptr) {
    return Status::InvalidArgument("no push subscription " + std::to_string(subscription_id) +
                                   " on this connection");
  }
  if (rings.size() != sub->region->geometry().ring_count) {
    return Status::InvalidArgument("the subscription has " +
                                   std::to_string(sub->region->geometry().ring_count) +
                                   " rings, the update names " + std::to_string(rings.size()));
  }
  std::vector<std::vector<Split>> splits;
  RETURN_IF_ERROR(ResolveRings(sub->stream.get(), rings, &splits));
  Thread* t = ThreadOf(sub->id);
  {
    MutexLock lock(&t->mu);
    if (sub->has_pending) FoldQueuedUpdate(sub->pending, &splits);
    sub->has_pending = true;
    sub->pending = std::move(splits);
    sub->pending_subtasks.clear();
    for (const auto& r : rings) sub->pending_subtasks.push_back(r.subtask_index);
  }
  Kick(t);
  return Status::Ok();
}

Status PushManager::Close(uint64_t conn_id, uint64_t subscription_id) {
  std::shared_ptr<Subscription> sub;
  {
    MutexLock lock(&mu_);
    auto it = subs_.find(subscription_id);
    if (it != subs_.end() && it->second->conn_id == conn_id) {
      sub = it->second;
      subs_.erase(it);
    }
  }
  if (sub == nullptr) {
    return Status::InvalidArgument("no push subscription " + std::to_string(subscription_id) +
                                   " on this connection");
  }
  EndSubscription(sub);
  return Status::Ok();
}

size_t PushManager::EndSubscriptionsOf(const storage::Stream* stream) {
  std::vector<std::shared_ptr<Subscription>> ended;
  {
    MutexLock lock(&mu_);
    for (auto it = subs_.begin(); it != subs_.end();) {
      if (it->second->stream.get() == stream) {
        ended.push_back(it->second);
        it = subs_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& sub : ended) EndSubscription(sub);
  return ended.size();
}

void PushManager::ConnectionClosed(uint64_t conn_id) {
  std::vector<std::shared_ptr<Subscription>> ended;
  {
    MutexLock lock(&mu_);
    for (auto it = subs_.begin(); it != subs_.end();) {
      if (it->second->conn_id == conn_id) {
        ended.push_back(it->second);
        it = subs_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& sub : ended) EndSubscription(sub);
}

void PushManager::EndSubscription(const std::shared_ptr<Subscription>& sub) {
  sub->ended.store(true, std::memory_order_release);
  sub->region->MarkClosed();
  Status s = sub->region->Unlink();
  if (!s.ok()) NS_LOG(kWarning) << "push subscription " << sub->id << ": " << s.ToString();
  Thread* t = ThreadOf(sub->id);
  {
    MutexLock lock(&t->mu);
    t->subs.erase(std::remove(t->subs.begin(), t->subs.end(), sub), t->subs.end());
  }
  Kick(t);
}

// ---- wake-ups -------------------------------------------------------------------------------

void PushManager::Kick(Thread* t) {
  t->dirty.store(true, std::memory_order_seq_cst);
  if (t->waiting.load(std::memory_order_seq_cst) == 0) return;
  MutexLock lock(&t->wake_mu);
  if (t->sleep_word != nullptr) {
    std::atomic_ref<uint32_t>(*t->sleep_word).fetch_add(1, std::memory_order_seq_cst);
    (void)FutexWake(t->sleep_word, INT32_MAX);
  }
}

void PushManager::NotifyAppend(const storage::Stream* stream) {
  // The append bumped its stream's generation (seq_cst) before this load; a thread going to
  // sleep raises sleepers_ before it re-reads the generations. One of the two sees the other.
  if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
  for (auto& t : threads_) {
    if (t->waiting.load(std::memory_order_seq_cst) == 0) continue;
    MutexLock lock(&t->wake_mu);
    // Only a thread that serves the stream has anything to do with the append.
    if (std::find(t->watching.begin(), t->watching.end(), stream) == t->watching.end()) continue;
    if (t->sleep_word != nullptr) {
      std::atomic_ref<uint32_t>(*t->sleep_word).fetch_add(1, std::memory_order_seq_cst);
      (void)FutexWake(t->sleep_word, INT32_MAX);
    }
  }
}

// ---- push threads -----------------------------------------------------------------------------

void PushManager::ApplyUpdate(Subscription* sub) {
  // A split that stays (in any ring) keeps its push position; a new one starts where asked, and
  // so does one that an update folded into this one had dropped (FoldQueuedUpdate).
  std::unordered_map<uint32_t, const Split*> current;
  for (const Ring& ring : sub->rings) {
    for (const Split& s : ring.splits) current[s.streamlet] = &s;
  }
  std::vector<std::vector<Split>> next = std::move(sub->pending);
  for (auto& splits : next) {
    for (Split& s : splits) {
      auto it = current.find(s.streamlet);
      if (it != current.end() && !s.restart) {
        s.pos = it->second->pos;
        s.failed = it->second->failed;
      }
      s.restart = false;
    }
  }
  for (size_t i = 0; i < sub->rings.size() && i < next.size(); ++i) {
    sub->rings[i].splits = std::move(next[i]);
    sub->rings[i].next = 0;
    sub->rings[i].subtask = sub->pending_subtasks[i];  // used at the next activation
  }
  sub->has_pending = false;
  sub->pending.clear();
}

void PushManager::ThreadLoop(Thread* t) {
  if (options_.nice != 0 && setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), options_.nice)) {
    NS_LOG(kWarning) << "push thread " << t->index << ": cannot set nice " << options_.nice << ": "
                     << std::strerror(errno);
  }
  std::vector<std::shared_ptr<Subscription>> subs;
  uint64_t last_heartbeat = 0;
  while (!stopping_.load(std::memory_order_acquire)) {
    if (t->dirty.exchange(false, std::memory_order_seq_cst)) {
      MutexLock lock(&t->mu);
      subs = t->subs;
      for (auto& sub : subs) {
        if (sub->has_pending) ApplyUpdate(sub.get());
      }
    }
    const uint64_t start = MonotonicNowNs();
    if (start - last_heartbeat >= kHeartbeatEveryNs) {
      for (auto& sub : subs) sub->region->SetBrokerHeartbeat(start);
      last_heartbeat = start;
    }
    bool any_full = false;
    bool only_small = true;
    const bool published = ServeOnce(t, subs, start, &any_full, &only_small);
    t->busy_ns.fetch_add(MonotonicNowNs() - start, std::memory_order_relaxed);
    if (!published) {
      Sleep(t, subs);
    } else if (only_small && options_.linger_us > 0) {
      // Tailing: a plain sleep, not a doorbell wait, so appends meanwhile make no FUTEX_WAKE.
      lingers_.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::sleep_for(std::chrono::microseconds(options_.linger_us));
    }
  }
}

bool PushManager::ServeOnce(Thread* t, std::vector<std::shared_ptr<Subscription>>& subs,
                            uint64_t now_ns, bool* any_full, bool* only_small) {
  bool published = false;
  for (auto& sub : subs) {
    if (sub->ended.load(std::memory_order_acquire) || sub->stream->deleted()) continue;
    // Before reading: an append after this load makes Sleep's check see a new generation.
    sub->seen_generation = sub->stream->append_generation();
    for (Ring& ring : sub->rings) {
      // A ring nobody attached to since its activation (e.g. its reader finished its splits)
      // is left alone: reclaiming it again would free nothing and log every timeout.
      if (ring.producer->ConsumerStale(now_ns, sub->timeout_ns) &&
          ring.producer->ConsumerSeenSinceActivation()) {
        ring.producer->Reclaim();
        // The dead consumer's slots are taken back, and with them its views' pins.
        for (auto& pins : ring.slot_pins) pins.clear();
        ring.producer->Activate(ring.subtask, now_ns);
        ring.full = false;
        rings_reclaimed_.fetch_add(1, std::memory_order_relaxed);
        NS_LOG(kInfo) << "push subscription " << sub->id << ": reclaimed ring "
                      << ring.producer->ring() << " (consumer heartbeat older than "
                      << sub->timeout_ns / 1'000'000 << " ms)";
      }
      bool small = false;
      if (FillRing(t, sub.get(), &ring, &small)) {
        published = true;
        if (!small) *only_small = false;
      }
      if (ring.full) *any_full = true;
    }
  }
  return published;
}

bool PushManager::FillRing(Thread* t, Subscription* sub, Ring* ring, bool* small) {
  uint8_t* payload = ring->producer->TryClaim();
  ring->full = payload == nullptr;
  if (payload == nullptr) return false;
  // The slot is free again: its consumer released it, and with it the views of its last lap.
  const size_t slot = ring->producer->position() % ring->slot_pins.size();
  ring->slot_pins[slot].clear();
  if (ring->splits.empty()) return false;
  const uint32_t slot_bytes = ring->producer->slot_bytes();
  const bool views = sub->slot_format == NS_SHM_SLOT_FORMAT_BINARY_VIEW;
  // A view slot takes 16 bytes per record, however large: read ahead enough chunks to fill it
  // with records of any size (the chunks that do not fit are read again next time).
  const uint64_t budget =
      views ? std::min<uint64_t>(uint64_t{slot_bytes} * 64, 1u << 30) : slot_bytes;
  t->chunks.clear();
  t->chunk_split.clear();
  t->pins.clear();
  std::vector<Thread::ReadEnd>& ends = t->ends;
  ends.assign(ring->splits.size(), Thread::ReadEnd{});
  uint64_t gathered = 0;
  const size_t n = ring->splits.size();
  for (size_t k = 0; k < n && gathered < budget; ++k) {
    const size_t i = (ring->next + k) % n;
    Split& split = ring->splits[i];
    if (split.failed) continue;
    bool corrupt = false;
    const size_t first_chunk = t->chunks.size();
    Result<storage::ReadOutcome> read = split.s->Read(
        split.pos, static_cast<uint32_t>(budget - gathered),
        [&](const Position& at, const uint8_t* data, uint32_t size) {
          uint32_t off = 0;
          while (off < size && !corrupt) {
            Result<storage::ChunkHeader> h = storage::DecodeChunkHeader(data + off, size - off);
            if (!h.ok()) {
              corrupt = true;
              break;
            }
            SlotChunk c;
            c.header = *h;
            c.payload = data + off + storage::kChunkHeaderSize;
            c.streamlet = split.streamlet;
            c.position = Position{at.group, at.segment, at.offset + off};
            t->chunks.push_back(c);
            t->chunk_split.push_back(i);
            off += h->total_size();
          }
        });
    if (!read.ok() && read.status().IsDataLoss()) {
      // A damaged range goes to the reader as a marker slot of its own: when this split comes
      // first in a pass (the round-robin start moves every pass).
      if (!t->chunks.empty()) continue;
      std::optional<storage::DamagedRange> damage = split.s->DamageAt(split.pos);
      if (damage.has_value()) {
        ring->next = (ring->next + 1) % n;
        damaged_ranges_.fetch_add(1, std::memory_order_relaxed);  // before the consumer sees it
        PublishMarker(sub, ring, payload, NS_SHM_SLOT_DAMAGED, split.streamlet, damage->from,
                      damage->length, 0, 0);
        split.pos = damage->next();
        NS_LOG(kWarning) << "push subscription " << sub->id << ": " << read.status().message();
        return true;
      }
    }
    if (!read.ok() || corrupt) {
      split.failed = true;
      NS_LOG(kWarning) << "push subscription " << sub->id << ": streamlet " << split.streamlet
                       << " at " << split.pos << " cannot be pushed: "
                       << (corrupt ? std::string("corrupt chunk header")
                                   : read.status().ToString());
      // Drop what this split contributed.
      while (!t->chunk_split.empty() && t->chunk_split.back() == i) {
        t->chunk_split.pop_back();
        t->chunks.pop_back();
      }
      continue;
    }
    if (read->chunks == 0) continue;
    ends[i].read = true;
    ends[i].next = read->next;
    ends[i].chunks = read->chunks;
    gathered += read->bytes;
    if (views) NoteSegmentFiles(*read, first_chunk, &t->chunks);
    for (auto& seg : read->segments) t->pins.push_back(std::move(seg));
  }
  ring->next = (ring->next + 1) % n;
  if (t->chunks.empty()) return false;

  Result<SlotFill> fill =
      views ? WriteViewSlot(t->chunks, payload, slot_bytes, sub->filter, &t->passes)
            : WriteArrowSlot(t->chunks, payload, slot_bytes, sub->filter, &t->passes);
  if (!fill.ok() && fill.status().IsChunkTooLarge()) {
    // The first chunk alone does not fit an empty slot: the reader fetches it by its position
    // (a marker slot in its place keeps the split's order); the rest waits for the next pass.
    const SlotChunk& big = t->chunks.front();
    Split& split = ring->splits[t->chunk_split.front()];
    chunks_by_fetch_.fetch_add(1, std::memory_order_relaxed);  // before the consumer sees it
    PublishMarker(sub, ring, payload, NS_SHM_SLOT_FETCH_CHUNK, big.streamlet, big.position,
                  big.header.total_size(), big.header.record_count, big.header.first_timestamp_ms);
    split.pos = Position{big.position.group, big.position.segment,
                         big.position.offset + big.header.total_size()};
    t->pins.clear();
    return true;
  }
  if (!fill.ok()) {
    Split& split = ring->splits[t->chunk_split.front()];
    split.failed = true;
    NS_LOG(kWarning) << "push subscription " << sub->id << ": streamlet " << split.streamlet
                     << " at " << split.pos << " cannot be pushed: " << fill.status().ToString();
    return false;
  }
  // Advance every split past its chunks that were written.
  uint64_t chunk_bytes = 0;
  uint64_t chunk_records = 0;
  for (size_t c = 0; c < fill->chunks; ++c) {
    const size_t i = t->chunk_split[c];
    ++ends[i].written;
    chunk_bytes += t->chunks[c].header.total_size();
    chunk_records += t->chunks[c].header.record_count;
    const Position& at = t->chunks[c].position;
    ring->splits[i].pos =
        Position{at.group, at.segment, at.offset + t->chunks[c].header.total_size()};
  }
  for (size_t i = 0; i < n; ++i) {
    if (ends[i].read && ends[i].written == ends[i].chunks) ring->splits[i].pos = ends[i].next;
  }
  *small = chunk_bytes * 2 < slot_bytes;
  // Counted before publishing: a consumer that has a slot finds it in the counters (its acquire
  // of the slot follows these writes).
  slots_published_.fetch_add(1, std::memory_order_relaxed);
  records_.fetch_add(fill->layout.row_count, std::memory_order_relaxed);
  records_filtered_.fetch_add(chunk_records - fill->layout.row_count, std::memory_order_relaxed);
  bytes_.fetch_add(chunk_bytes, std::memory_order_relaxed);
  if (views) {
    view_slots_.fetch_add(1, std::memory_order_relaxed);
    PinSegmentFiles(t->pins, std::span<const SlotChunk>(t->chunks.data(), fill->chunks),
                    &ring->slot_pins[slot]);
  }
  Status s = ring->producer->Publish(fill->layout);
  if (!s.ok()) NS_LOG(kWarning) << "push subscription " << sub->id << ": " << s.ToString();
  t->pins.clear();
  return true;
}

void PushManager::PublishMarker(Subscription* sub, Ring* ring, uint8_t* payload, uint32_t flags,
                                uint32_t streamlet, const Position& at, uint32_t bytes,
                                uint32_t records, int64_t first_timestamp_ms) {
  ns_shm_chunk_map_entry e;
  std::memset(&e, 0, sizeof e);
  e.streamlet = streamlet;
  e.record_count = records;
  e.group = at.group;
  e.segment = at.segment;
  e.byte_position = at.offset;
  e.chunk_bytes = bytes;
  e.first_timestamp_ms = first_timestamp_ms;
  slots_published_.fetch_add(1, std::memory_order_relaxed);
  Status s = ring->producer->Publish(WriteMarkerSlot(flags, e, payload));
  if (!s.ok()) NS_LOG(kWarning) << "push subscription " << sub->id << ": " << s.ToString();
}

void PushManager::Sleep(Thread* t, std::vector<std::shared_ptr<Subscription>>& subs) {
  uint32_t* word = &t->bell;
  uint32_t* flag = &t->bell_flag;
  auto timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(kSleepTimeout);
  int full_regions = 0;
  for (auto& sub : subs) {
    if (sub->ended.load(std::memory_order_acquire)) continue;
    const bool full =
        std::any_of(sub->rings.begin(), sub->rings.end(), [](const Ring& r) { return r.full; });
    if (!full) continue;
    if (++full_regions == 1) {
      word = &sub->region->header()->release_doorbell;
      flag = &sub->region->header()->broker_waiting;
    }
  }
  if (full_regions > 1) timeout = kShortSleepTimeout;
  {
    MutexLock lock(&t->wake_mu);
    t->sleep_word = word;
    t->watching.clear();
    for (auto& sub : subs) {
      if (!sub->ended.load(std::memory_order_acquire)) t->watching.push_back(sub->stream.get());
    }
  }
  t->waiting.store(1, std::memory_order_seq_cst);
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  auto ready = [&] {
    if (t->dirty.load(std::memory_order_seq_cst) || stopping_.load(std::memory_order_seq_cst)) {
      return true;
    }
    for (auto& sub : subs) {
      if (sub->ended.load(std::memory_order_acquire)) continue;
      if (sub->stream->append_generation() != sub->seen_generation) return true;
      for (Ring& ring : sub->rings) {
        if (ring.full && ring.producer->TryClaim() != nullptr) return true;
      }
    }
    return false;
  };
  Result<WaitOutcome> r = AwaitDoorbell(word, flag, ready, spins_, timeout);
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  t->waiting.store(0, std::memory_order_seq_cst);
  {
    MutexLock lock(&t->wake_mu);
    t->sleep_word = nullptr;
    t->watching.clear();
  }
  if (r.ok()) {
    sleeps_.fetch_add(r->sleeps, std::memory_order_relaxed);
  } else {
    NS_LOG(kWarning) << "push thread " << t->index << ": " << r.status().ToString();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void PushManager::CollectMetrics(std::vector<std::pair<std::string, uint64_t>>* out) const {
  auto add = [out](std::string name, uint64_t value) { out->emplace_back(std::move(name), value); };
  add("nearstream_push_subscriptions", subscriptions());
  add("nearstream_push_subscribe_requests_total",
      subscribe_requests_.load(std::memory_order_relaxed));
  add("nearstream_push_slots_published_total", slots_published_.load(std::memory_order_relaxed));
  add("nearstream_push_records_total", records_.load(std::memory_order_relaxed));
  add("nearstream_push_records_filtered_total", records_filtered_.load(std::memory_order_relaxed));
  add("nearstream_push_bytes_total", bytes_.load(std::memory_order_relaxed));
  add("nearstream_push_rings_reclaimed_total", rings_reclaimed_.load(std::memory_order_relaxed));
  add("nearstream_push_chunks_by_fetch_total", chunks_by_fetch_.load(std::memory_order_relaxed));
  add("nearstream_push_damaged_ranges_total", damaged_ranges_.load(std::memory_order_relaxed));
  add("nearstream_push_view_slots_total", view_slots_.load(std::memory_order_relaxed));
  add("nearstream_push_segment_files_created_total",
      segment_files_ != nullptr ? segment_files_->files_created() : 0);
  add("nearstream_push_segment_file_failures_total",
      segment_files_ != nullptr ? segment_files_->create_failures() : 0);
  for (const auto& t : threads_) {
    add("nearstream_push_thread_busy_ns_total{thread=\"push-" + std::to_string(t->index) + "\"}",
        t->busy_ns.load(std::memory_order_relaxed));
  }
  add("nearstream_push_thread_sleeps_total", sleeps_.load(std::memory_order_relaxed));
  add("nearstream_push_lingers_total", lingers_.load(std::memory_order_relaxed));
}

}  // namespace nearstream::push
