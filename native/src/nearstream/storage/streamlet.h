// A streamlet: KerA's semantic partition. A sequence of groups (ids ascending), each up to P
// fixed-size segments; Q groups are active at a time and a producer appends to active group
// `producer_id mod Q`. Chunks are appended whole, never split across segments.
//
// Threading (parallel appends, as in KerA). Two kinds of lock, always taken in this order:
//  - one lock per active slot (Slot::mu), held for a whole append to that slot: the idempotence
//    check and producer state of the producers mapping to it, the memcpy into the slot's
//    current segment, the file write and, under `sync`, the fsync. A slot is the only writer of
//    its group's current segment past committed(), so appends to different slots never touch
//    the same bytes and run in parallel; appends of one slot (one producer, or producers with
//    equal id mod Q) run one after the other, which is what keeps a producer's chunks in order.
//  - mu_, the streamlet lock, held only for short steps that never do I/O: allocating group and
//    segment ids and linking a new group or segment into the lists, publishing an appended
//    chunk (chunk index, timestamps, sizes, then committed()), and everything readers,
//    Maintain and SyncDirty look at. Opening a segment file (and the directory fsync under
//    `sync`) happens under the slot lock only, between the id allocation and the link.
// A group whose first segment is still being opened is registered (empty, open) at id
// allocation, so ids stay in list order; readers wait at it like at any open group and
// Describe does not show it. Read copies chunk bytes out of segments without any lock (see
// segment.h). Any thread may call any method.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "nearstream/common/counted_lock.h"
#include "nearstream/common/mutex.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/storage/env.h"
#include "nearstream/storage/position.h"
#include "nearstream/storage/published_view.h"
#include "nearstream/storage/segment.h"
#include "nearstream/storage/stream_config.h"

namespace nearstream::storage {

struct AppendOutcome {
  Position position;  // where the chunk is; all-zero for an old duplicate whose place is forgotten
  bool duplicate = false;
};

struct ReadOutcome {
  Position next;  // where the next read continues
  Position tail;
  uint32_t bytes = 0;
  uint32_t chunks = 0;
  uint64_t records = 0;
  // The segments the blocks handed to the sink point into; holding them keeps that memory
  // valid after the read (e.g. until a response spliced from it has been written).
  std::vector<std::shared_ptr<const Segment>> segments;
};

// Stored bytes that recovery found damaged: `length` bytes from `from` (one segment) hold no
// chunk a reader can be given. `next` is the first position after them.
struct DamagedRange {
  Position from;
  uint32_t length = 0;
  std::string reason;
  Position next() const { return Position{from.group, from.segment, from.offset + length}; }
};

struct GroupInfo {
  uint64_t id = 0;
  bool closed = false;
  uint64_t first_segment = 0;
  uint32_t segment_count = 0;
  uint64_t bytes = 0;
};

struct StreamletInfo {
  Position head;
  Position tail;
  std::vector<GroupInfo> groups;
};

class HeldAppends;

// Receives whole chunks: `data` holds `size` bytes of consecutive chunks starting at `at`.
using BlockSink = std::function<void(const Position& at, const uint8_t* data, uint32_t size)>;

class Streamlet {
 public:
  // `dir` is where segment files live; empty for a memory-only (durability none) stream.
  // `config` and `env` must outlive the streamlet.
  Streamlet(uint32_t id, const StreamConfig* config, Env* env, std::string dir);
  ~Streamlet();
  Streamlet(const Streamlet&) = delete;
  Streamlet& operator=(const Streamlet&) = delete;

  uint32_t id() const { return id_; }
  const StreamConfig& config() const { return *config_; }  // its stream's

  // Loads segment files from dir, verifying every chunk. A torn tail (bytes that do not parse at
  // the end of a group's last segment: an append that never completed) is cut off the file.
  // Anything else that fails its checks (a chunk whose CRC fails, or unparsable bytes inside a
  // segment that a later one of its group follows) is kept on disk and recorded as a damaged
  // range: reads stop there with kDataLoss (docs/broker.md, "Damaged data"). Recovered groups
  // are closed; appends open new ones. Rebuilds producer sequences.
  Status Recover(int64_t now_ms);

  // Appends one chunk already checked by ValidateChunk. Either the whole chunk is appended (and,
  // under `sync`, fsync'd) or nothing is and an error is returned.
  Result<AppendOutcome> Append(const uint8_t* chunk, const ChunkHeader& header, int64_t now_ms);
  // A replicated streamlet's leader (held_appends.h): writes the chunk as Append does but
  // publishes nothing; the chunk joins `held`, its slot stays locked, until held->Publish or
  // held->Discard. A duplicate is answered at once, as by Append. With *must_flush set nothing
  // was done: the caller first finishes what `held` holds (the slot is locked elsewhere, the
  // chunk needs a new segment while the current one has held chunks, or it retries a held
  // chunk), then calls again.
  Result<AppendOutcome> AppendHeld(const uint8_t* chunk, const ChunkHeader& header, int64_t now_ms,
                                   HeldAppends* held, bool* must_flush);

  // Hands whole chunks from `from` on to `sink`, up to `max_bytes` (at least one chunk). Stops
  // before a damaged range; a read that starts at one fails with kDataLoss (see DamageAt).
  Result<ReadOutcome> Read(const Position& from, uint32_t max_bytes, const BlockSink& sink) const;

  // The damaged range that starts at `at`, if any (what a kDataLoss read ran into).
  std::optional<DamagedRange> DamageAt(const Position& at) const;
  // Every damaged range still retained, in read order.
  std::vector<DamagedRange> Damaged() const;

  // The first chunk in read order whose first-record timestamp is >= `timestamp_ms`, or the
  // tail when there is none (what a consumer starting "from time T" should read from).
  Position LookupTimestamp(int64_t timestamp_ms) const;

  // From now on new segments live in `files` (push view slots; segment_files.h). Segments made
  // before stay where they are.
  void UseSegmentFiles(std::shared_ptr<SegmentFiles> files) NS_EXCLUDES(mu_);

  StreamletInfo Describe() const;
  // Every segment held, by group then segment id, with the bytes published in it (what a
  // follower's copy must match: docs/protocol.md, "Catching up by leader epoch").
  struct SegmentBytes {
    uint64_t group = 0;
    uint64_t segment = 0;
    uint32_t bytes = 0;
  };
  std::vector<SegmentBytes> Segments() const;
  // The id the next group opened gets (after Recover: above every group loaded).
  uint64_t next_group_id() const NS_EXCLUDES(mu_);
  uint64_t bytes() const;

  // ---- transactions (stream_transactions.h) ------------------------------------------------
  // A transaction's chunks live in private segments (txn_part.h) until its commit links them
  // into the streamlet as one new closed group, without a copy.

  // The file of segment `segment` of transaction number `txn`, before its commit; recovery
  // counts its segment id as taken but does not load it (the transaction's owner does).
  static std::string TxnSegmentName(uint64_t txn, uint64_t segment);
  // Parses a TxnSegmentName; false for any other name.
  static bool ParseTxnSegmentName(const std::string& name, uint64_t* txn, uint64_t* segment);
  // Parses the name of a group's segment file (GroupSegmentPath's last part); false for any
  // other name.
  static bool ParseGroupSegmentName(const std::string& name, uint64_t* group, uint64_t* segment);
  std::string GroupSegmentPath(uint64_t group, uint64_t segment) const {
    return SegmentPath(group, segment);
  }
  const std::string& dir() const { return dir_; }
  // A segment id for a transaction's private segment (ids are unique within the streamlet).
  uint64_t AllocateSegmentId();
  // Commit, step 1: closes every active group, so that nothing appended from now on is read
  // before the transaction, and registers an empty open group with a new id: the
  // transaction's place in read order, at which readers wait until step 2. Returns its id.
  uint64_t ReserveGroup(int64_t now_ms);
  // Step 2: the reserved group takes `segments` (whole chunks, sealed) and is closed.
  void LinkReserved(uint64_t group, std::vector<std::shared_ptr<Segment>> segments);
  // Or the commit failed: the reserved group is closed empty (readers skip it).
  void DropReserved(uint64_t group);

  // ---- moving to another broker (docs/protocol.md, "Moving a streamlet") ----------------------
  // Refuses appends (STREAMLET_MOVING) from now on and waits for the appends in progress: no
  // append adds to tail() until Unseal(). (A transaction's commit still links its chunks: the
  // caller checks that no transaction holds chunks of the streamlet before it reads the tail.)
  void Seal();
  // Closes every active group (appends open new ones), so that a read in read order reaches
  // every chunk: with Q > 1 open groups, readers wait at the first. For a sealed streamlet's
  // copy (a move, a follower catching up).
  void CloseActiveGroups();
  // Where the next chunk would go: after the last chunk of the last group that has one.
  Position tail() const;
  void Unseal() { sealed_.store(false, std::memory_order_release); }
  bool sealed() const { return sealed_.load(std::memory_order_acquire); }
  // Before a move, while the transactions that may write the streamlet end: a transaction
  // numbered `mark` or later (begun since) starts no part here (its TxnAppend gets
  // STREAMLET_MOVING), so those that may hold one only end; plain appends and the earlier
  // transactions' appends go on. 0 lifts it; so does DropAll().
  void HoldOffNewParts(uint64_t mark) { parts_mark_.store(mark, std::memory_order_release); }
  uint64_t new_parts_mark() const { return parts_mark_.load(std::memory_order_acquire); }
  // The move is over here without the streamlet leaving (it failed, or was given up): appends
  // and new transaction parts are taken again.
  void Reopen() {
    Unseal();
    HoldOffNewParts(0);
  }
  // Forgets every chunk (the streamlet moved away) and returns the segment files to delete;
  // producer sequences go too. Readers holding segments keep them until they let go. Unseals,
  // unless `reopen` is false (a leader that gave the streamlet up stays sealed: it must not
  // take an append before its cache says another broker leads).
  std::vector<std::string> DropAll(bool reopen = true);

  // Retention (size, age) and closing of idle active groups; returns the files to delete. Does
  // nothing on a follower's copy (its leader decides both; see ApplyPublished). Also closes the
  // file of every sealed segment whose bytes are durable: nothing writes it again, and a broker
  // that kept a descriptor per retained segment ran out of them at a few hundred streamlets
  // (docs/broker.md, "Durability"). Maintain and SyncDirty are the maintenance thread's and
  // must not run at the same time: Maintain takes a segment that is not dirty for synced, and
  // SyncDirty clears the flag before its fsync returns.
  std::vector<std::string> Maintain(int64_t now_ms, int64_t group_idle_close_ms);
  // fsyncs segments appended to since the last call (async durability). Returns the first error.
  // After a failure appends are refused (STORAGE_ERROR) until a call succeeds: under `async` the
  // acknowledged bytes not yet on disk must not grow past what the durability promises (the last
  // flush interval) while the disk fails, as Kafka takes a log directory whose flush failed
  // offline.
  Status SyncDirty();

  // ---- follower reads (streamlet_mirror.cc; docs/cluster.md, "Follower reads") ---------------
  // A replicated streamlet's leader tells its followers what its readers can see; a follower
  // keeps its copy in memory too (a mirror) and shows its readers exactly that, no more.

  // The leader's side: every change readers can see (a chunk published, a group registered,
  // closed or linked) moves the publish version on.
  uint64_t published_version() const NS_EXCLUDES(mu_);
  // The groups changed after version `since`, with the leader's head (0: all of them).
  PublishedView PublishedSince(uint64_t since) const NS_EXCLUDES(mu_);

  // The follower's side. A mirror takes no appends (its broker, not the owner, refuses them)
  // and runs no retention or idle close: its leader decides those. Set on an empty streamlet or
  // right after Recover (which loads a caught-up copy whole: its leader sealed and closed every
  // group first).
  void SetMirror(bool mirror) { mirror_.store(mirror, std::memory_order_release); }
  bool mirror() const { return mirror_.load(std::memory_order_acquire); }
  // A chunk the leader wrote at `at` (and the follower to its file first), kept in memory and
  // shown to no reader until a view publishes it. Chunks of one segment come in order; an error
  // when `at` is not where the segment's copy in memory ends (a chunk missed). A chunk of a
  // segment this mirror does not hold is left to the file (a view loads the segment from it).
  Status MirrorChunk(const Position& at, const uint8_t* chunk, uint32_t size, int64_t now_ms)
      NS_EXCLUDES(mu_);
  // Publishes what `view` says the leader's readers see: groups registered in id order, each
  // segment's bytes up to its committed length (chunks given by MirrorChunk, or, for a segment
  // memory does not hold, loaded from the copy's file), closes, and the head (what lies before
  // it leaves memory; the files are the caller's). A whole view (every group the leader holds)
  // applies to an empty mirror (DropAll first). An error when the copy lacks bytes the view
  // publishes: the mirror then no longer matches its leader's readers, and the caller drops it
  // (DropAll; the files stay) until a whole view applies.
  // Segments a view publishes, read ahead from the copy's files, by (group, segment).
  using MirrorLoads = std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<Segment>>;
  // Reads, holding no lock, the segments `view` publishes that this mirror holds nowhere in
  // memory and whose length is final (all of a closed group's, all but the last of an open
  // group's; the leader replicated their every chunk before the next segment was made): a whole
  // view of many retained segments then holds up neither the chunks its leader sends meanwhile
  // nor this mirror's readers. ApplyPublished takes them and loads the rest itself (at most the
  // last segment of each open group, which chunks may still extend). A segment that fails to
  // load is left out: ApplyPublished then reports the error. `whole`: the mirror is emptied
  // before the view applies (DropAll), so what memory holds now counts for nothing.
  MirrorLoads LoadMirrorSegments(const PublishedView& view, bool whole, int64_t now_ms) const
      NS_EXCLUDES(mu_);
  Status ApplyPublished(const PublishedView& view, int64_t now_ms, MirrorLoads* loaded = nullptr)
      NS_EXCLUDES(mu_);

 private:
  // Everything but `id` is guarded by mu_ (a nested struct's members cannot name the streamlet's
  // lock in an annotation). An open group without segments is being opened: its
  // first segment's file is being created (NextSegmentSlotLocked).
  struct Group {
    uint64_t id = 0;
    bool closed = false;
    uint64_t version = 0;  // the publish version of its last change readers can see
    uint64_t bytes = 0;
    int64_t last_append_ms = 0;
    std::vector<std::shared_ptr<Segment>> segments;
  };
  struct ProducerState {
    uint64_t last_sequence = 0;
    // The positions of the last few sequences, so a retried append learns where its chunk is.
    static constexpr int kWindow = 8;
    uint64_t recent_seq[kWindow] = {};
    Position recent_pos[kWindow];
    int next_slot = 0;
    void Remember(uint64_t seq, const Position& pos);
    Position Lookup(uint64_t seq) const;
  };
  using ProducerMap = std::unordered_map<uint64_t, ProducerState>;
  // One of the Q active slots: the group producers with id mod Q == its index append to.
  struct alignas(64) Slot {
    std::mutex mu;  // held for a whole append to this slot; taken before mu_, never after
    // Threads waiting for `mu` (LockSlot). A replicated streamlet's request worker may keep the
    // slot locked across several replication round trips (HeldAppends); it lets go when this is
    // not zero, so that nobody waits for the slot longer than the batches already on their way.
    std::atomic<int> waiting{0};
    // The slot's active group and its current (last) segment, null when it has none. Written
    // with both mu and mu_ held, so either lock is enough to read them.
    Group* group = nullptr;
    std::shared_ptr<Segment> segment;
    // Idempotence state of the producers that map to this slot; guarded by `mu` (a std::mutex,
    // not the annotated Mutex: Maintain takes it with try_lock).
    ProducerMap producers;
  };

  friend class HeldAppends;
  // Takes `slot`'s lock, counted in its `waiting` meanwhile. Every blocking lock of a slot goes
  // through it.
  static std::unique_lock<std::mutex> LockSlot(Slot& slot) {
    return LockCounted(slot.mu, slot.waiting);
  }
  Status TooLarge(uint32_t size) const;
  Status Moving() const;
  // Ok, or why appends are refused: the last SyncDirty failed.
  Status FlushFailure() const;
  static Status CheckNext(const ChunkHeader& header, const ProducerState& p);
  // Marks `g` changed for followers' views (see PublishedSince).
  void TouchLocked(Group* g) NS_REQUIRES(mu_) { g->version = ++version_; }
  // ApplyPublished's steps: one group of the view, and the head.
  Status ApplyGroupLocked(const PublishedGroup& pg, int64_t now_ms, MirrorLoads* loaded)
      NS_REQUIRES(mu_);
  // Whether memory holds segment `segment` of group `group` (linked, or unlinked_).
  bool HoldsSegmentLocked(uint64_t group, uint64_t segment) const NS_REQUIRES(mu_);
  void DropBeforeLocked(const Position& head) NS_REQUIRES(mu_);
  // A segment of a group a transaction's commit linked, read from its file.
  Result<std::shared_ptr<Segment>> LoadMirrorSegment(uint64_t group, const PublishedSegment& ps,
                                                     int64_t now_ms) const;
  // Makes the chunk written at `offset` of `seg` (of group `g`) visible to readers; takes mu_.
  void PublishChunk(Group* g, Segment* seg, uint32_t offset, uint32_t size,
                    int64_t first_timestamp_ms, int64_t now_ms);
  // Gives `slot` (its lock held, not mu_) a fresh segment: the next one of its group, or the
  // first of a new group when the group holds P segments or the slot has none.
  Result<Segment*> NextSegmentSlotLocked(Slot& slot, int64_t now_ms);
  // Creates segment `segment` of group `group` and, for a durable stream, its file; no lock.
  Result<std::shared_ptr<Segment>> CreateSegment(uint64_t group, uint64_t segment, int64_t now_ms);
  Group* NewGroupFromRecovery(uint64_t id, int64_t now_ms) NS_REQUIRES(mu_);
  Group* FindGroupLocked(uint64_t id) const NS_REQUIRES(mu_);
  Position TailLocked() const NS_REQUIRES(mu_);
  std::string SegmentPath(uint64_t group, uint64_t segment) const;
  // `group_tail`: the file is the last of its group, the only place a torn append can be.
  // Rebuilt producer sequences go to `producers` (distributed to the slots afterwards).
  Status RecoverFile(const std::string& name, uint64_t group, uint64_t segment, bool group_tail,
                     int64_t now_ms, ProducerMap* producers) NS_REQUIRES(mu_);
  std::shared_ptr<Segment> FindSegmentLocked(const Position& at) const NS_REQUIRES(mu_);
  Status DataLoss(const Position& at, const Segment::DamagedBytes& d) const;
  // Finds the segment after `seg` in read order, or null when there is none yet.
  std::shared_ptr<Segment> SuccessorLocked(uint64_t group_id, uint64_t segment_id,
                                           uint64_t* next_group) const NS_REQUIRES(mu_);

  const uint32_t id_;
  const StreamConfig* const config_;
  Env* const env_;
  const std::string dir_;

  const size_t slot_count_;  // Q
  const std::unique_ptr<Slot[]> slots_;

  mutable Mutex mu_;
  std::deque<std::unique_ptr<Group>> groups_ NS_GUARDED_BY(mu_);  // ascending ids
  uint64_t next_group_id_ NS_GUARDED_BY(mu_) = 1;
  uint64_t next_segment_id_ NS_GUARDED_BY(mu_) = 1;
  uint64_t bytes_ NS_GUARDED_BY(mu_) = 0;
  std::atomic<bool> dir_dirty_{false};     // an async segment file was created since the last sync
  std::atomic<bool> sealed_{false};        // moving away: appends are refused
  std::atomic<bool> flush_failed_{false};  // the last SyncDirty failed: appends are refused
  mutable Mutex flush_mu_;
  Status flush_failure_ NS_GUARDED_BY(flush_mu_);  // what it failed with
  std::atomic<uint64_t> parts_mark_{0};  // about to move: no parts of transactions from here
  std::shared_ptr<SegmentFiles> segment_files_ NS_GUARDED_BY(mu_);  // null: private memory
  uint64_t version_ NS_GUARDED_BY(mu_) = 0;  // the publish version (see PublishedSince)
  std::atomic<bool> mirror_{false};
  // A mirror's segments that hold chunks no view has published yet, by (group, segment): not
  // linked, so no reader finds them before the leader's readers could.
  std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<Segment>> unlinked_ NS_GUARDED_BY(mu_);
};

}  // namespace nearstream::storage
