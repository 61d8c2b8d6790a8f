// The transactions of one stream (docs/protocol.md "Transactions", docs/broker.md
// "Transactions"): transactional ids with epochs that fence older owners, and transactions whose
// chunks stay in private parts (txn_part.h) until a commit links every part into its streamlet
// as one new group. For a durable stream every state change is a record of `txn.log`
// (txn_log.h); the COMMIT record is the commit point.
//
// Invariants (checked by stream_transactions_test.cc and the crash tests):
//  - No reader sees a chunk of a transaction that is not committed.
//  - A commit, once acknowledged, shows every chunk of the transaction, in every streamlet it
//    wrote to, in append order, contiguously; after a crash a transaction is open, prepared,
//    committed whole or aborted whole, never part of one.
//  - A prepared transaction ends only by its commit or abort, or a successor's TxnInit whose
//    keep_prepared_through is below its serial; never by a timeout.
//  - A writing request from an epoch older than the id's current one changes nothing.
//
// Threading: any thread may call any method. mu_ guards the ids and the state of every
// transaction; each transaction's own lock guards its parts, so appends to different
// transactions run in parallel. Lock order: mu_, then a transaction's lock, then streamlet locks
// and stage_mu_ (the writes staged for the followers).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "nearstream/common/mutex.h"
#include "nearstream/common/status.h"
#include "nearstream/common/thread_annotations.h"
#include "nearstream/storage/txn_log.h"
#include "nearstream/storage/txn_mirror.h"
#include "nearstream/storage/txn_part.h"

namespace nearstream::storage {

class Stream;

struct TxnSettings {
  int64_t open_timeout_ms = 900000;       // an open transaction idle this long is aborted
  size_t outcomes_kept = 1024;            // finished transactions remembered per transactional id
  uint64_t compact_log_bytes = 8u << 20;  // the log is rewritten from the state beyond this
  // `async`: committed parts' files that may wait for the maintenance thread to sync and rename
  // them, broker-wide (each keeps a descriptor until then). Beyond it a commit does that for its
  // own files before it answers: small transactions committed faster than the flusher's fsyncs
  // ran a broker out of descriptors within seconds.
  uint64_t max_files_awaiting_sync = 2048;
};

// Broker-wide counters, shared by every stream's transactions (they outlive deleted streams).
struct TxnTotals {
  std::atomic<uint64_t> committed{0};
  std::atomic<uint64_t> aborted{0};
  std::atomic<uint64_t> expired{0};  // of `aborted`: open transactions that timed out
  // `async`: committed parts' files waiting for FinishCommits (TxnSettings).
  std::atomic<uint64_t> files_awaiting_sync{0};
  // Commits that synced and renamed their own files, the bound being reached.
  std::atomic<uint64_t> inline_commit_syncs{0};
};

// The scope of a stream without replication: one StreamTransactions per stream and broker, whose
// transactions write any streamlet of the stream. Any other scope is a streamlet index: a
// replicated stream keeps one StreamTransactions per streamlet, its records in the streamlet's
// own directory, so that they go wherever the streamlet's replicas go (docs/protocol.md,
// "Transaction scopes"). The same value as the wire protocol's broker scope.
inline constexpr uint32_t kBrokerTxnScope = 0xFFFFFFFF;

enum class TxnPhase : uint8_t { kOpen = 1, kPrepared = 2, kCommitted = 3, kAborted = 4 };

struct TxnListing {
  std::string id;
  uint32_t epoch = 0;
  uint64_t serial = 0;
  TxnPhase phase = TxnPhase::kOpen;
  uint64_t bytes = 0;
  uint32_t chunks = 0;
  uint32_t streamlets = 0;
  int64_t started_ms = 0;
};

struct TxnGauges {
  uint64_t open = 0, prepared = 0, open_bytes = 0, prepared_bytes = 0;
};

class StreamTransactions {
 public:
  struct Txn;

  // `stream` owns this object; `dir` holds txn.log: the stream's directory for the broker scope,
  // streamlet `scope`'s directory for a streamlet scope ("" for a memory-only stream). A
  // streamlet scope's transactions write that streamlet only.
  StreamTransactions(Stream* stream, Env* env, std::string dir, TxnSettings settings,
                     TxnTotals* totals, uint32_t scope = kBrokerTxnScope);

  uint32_t scope() const { return scope_; }

  // A streamlet scope of a replicated stream: every write to its files also goes to `mirror`
  // (txn_mirror.h) before the request that made it is acknowledged, and while the streamlet is
  // sealed (a follower copying it) every request gets STREAMLET_MOVING. Set before requests.
  void set_mirror(TxnMirror* mirror) { mirror_.store(mirror); }
  // This broker stopped leading the scope's streamlet: forgets every transaction (appends in
  // flight fail with NOT_OWNER) and keeps the files, which a promotion recovers (RecoverLog,
  // RecoverParts) and a catch-up replaces.
  void Forget() NS_EXCLUDES(mu_);
  // A page of the scope's files for a follower catching up (docs/protocol.md, "ReplicaTxnFiles
  // (19)"): txn.log whole, then every open and prepared transaction's part files, each from
  // what `held` says the follower holds of it (0 when it names none, or more than the file
  // has), with at most `max_part_bytes` of part bytes in all. `*complete` says whether every
  // piece reaches its file's end.
  struct FilePiece {
    std::string name;
    uint64_t size = 0;
    uint64_t offset = 0;
    Bytes data;
  };
  Result<std::vector<FilePiece>> FilesFrom(const std::map<std::string, uint64_t>& held,
                                           size_t max_part_bytes, bool* complete) NS_EXCLUDES(mu_);
  ~StreamTransactions();

  // Recovery, step 1 (before the streamlets recover): replays txn.log, finishes the renames of
  // committed transactions and deletes the files of aborted and unknown ones.
  Status RecoverLog() NS_EXCLUDES(mu_);
  // Step 2 (after the streamlets): loads the files of open and prepared transactions, then
  // rewrites the log from the state unless `rewrite_log` is false (a promotion: the followers'
  // copies of the log must stay byte for byte the same).
  Status RecoverParts(int64_t now_ms, bool rewrite_log = true) NS_EXCLUDES(mu_);

  // TxnInit: returns the new epoch and the id's last serial.
  Result<std::pair<uint32_t, uint64_t>> Init(const std::string& id, uint64_t keep_prepared_through,
                                             int64_t now_ms) NS_EXCLUDES(mu_);
  Result<uint64_t> Begin(const std::string& id, uint32_t epoch, int64_t now_ms) NS_EXCLUDES(mu_);
  // The open transaction a TxnAppend names; the caller then appends entry by entry.
  Result<std::shared_ptr<Txn>> ForAppend(const std::string& id, uint32_t epoch, uint64_t serial,
                                         int64_t now_ms) NS_EXCLUDES(mu_);
  // Appends one chunk (checked by ValidateChunk) to streamlet `streamlet` of `txn`. Returns
  // true for a duplicate. Fails with TXN_ABORTED / INVALID_TXN_STATE when the transaction
  // stopped being open since ForAppend.
  //
  // A mirrored scope stages the chunk's write for its followers. Without `ticket` the append
  // sends what is staged and returns once the followers hold it. With `ticket` it returns at
  // once, and `*ticket` names what the answer waits for (its own write, or for a duplicate every
  // write staged before it): the caller passes it to Copied() after SendStaged() took this
  // scope, and acknowledges the chunk only when that is Ok. A request worker so gets one round
  // trip to the followers for all the transactional appends it read together.
  Result<bool> Append(Txn& txn, uint32_t streamlet, const uint8_t* chunk, const ChunkHeader& h,
                      int64_t now_ms, uint64_t* ticket = nullptr);
  // Sends the writes staged in each of `scopes` to their followers, all before any answer is
  // awaited, and awaits the answers. Holds the scopes' mu_ at once, taken in (stream,
  // streamlet) order.
  static void SendStaged(std::vector<StreamTransactions*> scopes) NS_NO_THREAD_SAFETY_ANALYSIS;
  // After SendStaged (or any request that sent this scope's staged writes) returned: Ok when
  // every write up to `ticket` is on every in-sync follower; otherwise why not.
  Status Copied(uint64_t ticket) const;
  Status Prepare(const std::string& id, uint32_t epoch, uint64_t serial) NS_EXCLUDES(mu_);
  // On success `linked` lists the streamlets that gained the transaction's chunks (to wake
  // their readers).
  Status Commit(const std::string& id, uint32_t epoch, uint64_t serial, int64_t now_ms,
                std::vector<uint32_t>* linked) NS_EXCLUDES(mu_);
  Status Abort(const std::string& id, uint32_t epoch, uint64_t serial) NS_EXCLUDES(mu_);

  // Open and prepared transactions whose id starts with `prefix`, by id then serial.
  std::vector<TxnListing> List(const std::string& prefix) const NS_EXCLUDES(mu_);
  TxnGauges Gauges() const NS_EXCLUDES(mu_);
  // How many open or prepared transactions hold chunks of `streamlet` (a streamlet they hold
  // cannot move to another broker), counting also every open transaction numbered below `mark`
  // (it may still start a part there). Seal the streamlet, or hold off new parts from `mark`,
  // first: the count cannot grow after it.
  uint32_t HoldingPartsIn(uint32_t streamlet, uint64_t mark = 0) const NS_EXCLUDES(mu_);
  // The number the next transaction to begin gets (numbers only grow).
  uint64_t NextNumber() const NS_EXCLUDES(mu_);
  // `async` streams: fsyncs the log, renames the files of the transactions committed since (see
  // FinishCommits) and fsyncs the files appended to since the last call (the maintenance thread,
  // every flush interval). Returns the first error; until a call succeeds, Init, Begin, appends,
  // Prepare, Commit, Abort and expiry are refused with it (STORAGE_ERROR).
  Status FlushAsync() NS_EXCLUDES(mu_);
  // `async` streams: gives the files of transactions committed since the last call their group
  // names, after an fsync of the log (a renamed file is read as part of its group on recovery,
  // so its COMMIT record must be durable first). The maintenance thread calls it before retention
  // looks for files by their group names.
  Status FinishCommits() NS_EXCLUDES(mu_);
  // The stream is deleted: its commits' files no longer count against the broker's bound of
  // files awaiting sync (TxnSettings), and are not renamed.
  void DropAwaitingSync() NS_EXCLUDES(mu_);
  // Aborts open transactions idle for longer than the timeout (the maintenance thread).
  void ExpireOpen(int64_t now_ms) NS_EXCLUDES(mu_);

 private:
  struct Outcome {
    uint64_t serial = 0;
    uint32_t epoch = 0;
    bool committed = false;
  };
  struct IdState {
    uint32_t epoch = 0;
    uint64_t last_serial = 0;
    std::shared_ptr<Txn> open;                          // at most one
    std::map<uint64_t, std::shared_ptr<Txn>> prepared;  // by serial
    std::deque<Outcome> finished;                       // oldest first, at most outcomes_kept
  };

  Status Log(const TxnRecord& record, bool sync) NS_REQUIRES(mu_);
  // Mirroring (streamlet scopes): whether writes are mirrored; whether requests may go on (not
  // sealed, nothing left unmirrored); sending what the request in progress wrote, then its
  // result (a failed send replaces it: nothing unmirrored is acknowledged).
  bool Mirrors() const;
  Status ReadyLocked() NS_REQUIRES(mu_);
  Status SendBatchLocked() NS_REQUIRES(mu_);
  // The staged writes up to `through` were sent and answered with `status` (under mu_: sends
  // go one at a time, in order).
  void SettleLocked(const Status& status, uint64_t through) NS_REQUIRES(mu_) NS_EXCLUDES(stage_mu_);
  template <typename T>
  T SentLocked(T result) NS_REQUIRES(mu_) {
    Status sent = SendBatchLocked();
    if (!sent.ok()) return sent;
    return result;
  }
  void MirrorLocked(TxnFileOp op, Bytes* owned = nullptr) NS_REQUIRES(mu_);
  // Append's part under the transaction's lock: the chunk written to its part, and its write
  // staged; `*waits_for` gets what its acknowledgement waits for (0: nothing).
  Result<bool> AppendToPart(Txn& txn, uint32_t streamlet, const uint8_t* chunk,
                            const ChunkHeader& h, int64_t now_ms, uint64_t* waits_for)
      NS_EXCLUDES(stage_mu_);
  // Adds `op`, whose data lies in `segment`, to the staged writes; returns its number.
  uint64_t Stage(TxnFileOp op, std::shared_ptr<const Segment> segment) NS_EXCLUDES(stage_mu_);
  // The bodies of Init, Begin, Prepare, Commit, Abort and ExpireOpen, under mu_.
  Result<std::pair<uint32_t, uint64_t>> InitLocked(const std::string& id,
                                                   uint64_t keep_prepared_through) NS_REQUIRES(mu_);
  Result<uint64_t> BeginLocked(const std::string& id, uint32_t epoch, int64_t now_ms)
      NS_REQUIRES(mu_);
  Status PrepareRequestLocked(const std::string& id, uint32_t epoch, uint64_t serial)
      NS_REQUIRES(mu_);
  Status CommitRequestLocked(const std::string& id, uint32_t epoch, uint64_t serial, int64_t now_ms,
                             std::vector<uint32_t>* linked) NS_REQUIRES(mu_);
  Status AbortRequestLocked(const std::string& id, uint32_t epoch, uint64_t serial)
      NS_REQUIRES(mu_);
  void ExpireOpenLocked(int64_t now_ms) NS_REQUIRES(mu_);
  // Whether a state change is fsync'd before it is acknowledged: under `sync`; under `async` the
  // flusher syncs it within the flush interval (what `async` promises for appends too).
  bool SyncEach() const;
  void MaybeCompactLocked() NS_REQUIRES(mu_);
  std::vector<TxnRecord> StateRecordsLocked() const NS_REQUIRES(mu_);
  IdState* FindLocked(const std::string& id) NS_REQUIRES(mu_);
  std::shared_ptr<Txn> LiveLocked(IdState& st, uint64_t serial) NS_REQUIRES(mu_);
  const Outcome* FinishedLocked(const IdState& st, uint64_t serial) const NS_REQUIRES(mu_);
  // The Txn arguments are taken by value on purpose: they are often the id's own `open` (or a
  // `prepared` entry), which these reset, so a reference would dangle.
  void FinishLocked(IdState& st, std::shared_ptr<Txn> txn, bool committed) NS_REQUIRES(mu_);
  Status PrepareLocked(IdState& st, std::shared_ptr<Txn> txn) NS_REQUIRES(mu_);
  Status CommitLocked(IdState& st, std::shared_ptr<Txn> txn, int64_t now_ms,
                      std::vector<uint32_t>* linked) NS_REQUIRES(mu_);
  // The commit's visible half, once its COMMIT record is durable (and, for a mirrored scope,
  // held by every in-sync follower): renames, links the parts into their streamlets, finishes.
  // The transaction's lock is held.
  void PublishCommitLocked(IdState& st, std::shared_ptr<Txn> txn, const TxnRecord& record,
                           std::vector<uint32_t>* linked) NS_REQUIRES(mu_);
  Status AbortLocked(IdState& st, std::shared_ptr<Txn> txn, const char* why) NS_REQUIRES(mu_);
  // RecoverLog: the numbers of committed transactions (their COMMIT links) whose files, all
  // still named for the transaction, hold fewer bytes than the links say; `listing` has each
  // streamlet's file names.
  Result<std::set<uint64_t>> ShortCommitsLocked(
      const std::vector<std::pair<uint64_t, std::vector<TxnLink>>>& commits,
      const std::vector<std::vector<std::string>>& listing) NS_REQUIRES(mu_);
  // Loads the files of a transaction recovered from the log (RecoverParts); `*short_by` gets the
  // bytes its parts miss against its PREPARE record (an `async` power loss).
  Status LoadPartsLocked(Txn& txn, int64_t now_ms, uint64_t* short_by) NS_REQUIRES(mu_);
  // Replays one record; a COMMIT's transaction number comes back in `*committed_number`.
  void ApplyLocked(const TxnRecord& r, uint64_t* committed_number) NS_REQUIRES(mu_);

  // Whether streamlet `i` is this scope's.
  bool InScope(uint32_t i) const { return scope_ == kBrokerTxnScope || scope_ == i; }

  Stream* const stream_;
  Env* const env_;
  const std::string dir_;
  const uint32_t scope_;
  const TxnSettings settings_;
  TxnTotals* const totals_;
  const bool durable_;  // a durable stream: txn.log and part files

  mutable Mutex mu_;
  std::unique_ptr<TxnLog> log_ NS_GUARDED_BY(mu_);
  std::map<std::string, IdState> ids_ NS_GUARDED_BY(mu_);
  uint64_t next_number_ NS_GUARDED_BY(mu_) = 1;  // names the next transaction's files
  // Recovery: the streamlets holding files of each open or prepared transaction (by number),
  // found by RecoverLog for RecoverParts.
  std::map<uint64_t, std::vector<uint32_t>> live_files_ NS_GUARDED_BY(mu_);
  // `async`: renames of committed transactions' files waiting for their COMMIT to be fsync'd.
  struct PendingRename {
    uint32_t streamlet;
    std::string from, to;
    std::shared_ptr<Segment> segment;  // fsync'd before the rename
  };
  std::vector<PendingRename> pending_renames_ NS_GUARDED_BY(mu_);
  // fsyncs each file, gives it its group name and closes it; then fsyncs the directories
  // renamed in. The COMMIT records naming them must be durable first. A file whose fsync fails
  // keeps its transaction name (the next start finishes the commit). Returns the first error.
  Status SyncAndRename(std::vector<PendingRename>& renames);
  // `async`: leaves a commit's files to FinishCommits, or, past the broker's bound of files
  // awaiting sync (TxnSettings), syncs and renames them itself.
  void AwaitSyncLocked(std::vector<PendingRename> files) NS_REQUIRES(mu_);
  // `async`: why the last FlushAsync failed (Ok when it succeeded). Until one succeeds every
  // request that writes is refused, so that what is acknowledged and not on disk stops growing
  // while the disk fails (as Streamlet::FlushFailure does for appends).
  Status flush_failure_ NS_GUARDED_BY(mu_);

  std::atomic<TxnMirror*> mirror_{nullptr};
  // The writes staged for the followers, in the order made: those of the request in progress
  // under mu_, sent before it is answered, and transactional appends' (made under their
  // transaction's lock only), sent by the next send of the scope: SendStaged, or any request's.
  // stage_mu_ comes last in the lock order. Writes are numbered from 1 as staged; every send
  // (under mu_) takes all of them, so a send that is answered Ok leaves every write up to its
  // last on every in-sync follower, and a failed one sends its followers out of the in-sync set
  // before any later send is Ok (TxnMirror), which then vouches for the earlier writes too.
  struct MirrorBatch {
    std::vector<TxnFileOp> ops;
    std::deque<Bytes> owned;  // bytes the ops point at (a deque: they never move)
    // The segments transactional appends' ops point into (the chunk's copy there, not the
    // request's bytes: a parked request may go with its connection before the send).
    std::vector<std::shared_ptr<const Segment>> segments;
  };
  mutable Mutex stage_mu_;
  MirrorBatch batch_ NS_GUARDED_BY(stage_mu_);
  uint64_t staged_ NS_GUARDED_BY(stage_mu_) = 0;  // the last write's number
  uint64_t sent_ NS_GUARDED_BY(stage_mu_) = 0;    // the last write a send took
  uint64_t copied_ NS_GUARDED_BY(stage_mu_) = 0;  // the last write an Ok send vouched for
  Status send_failure_ NS_GUARDED_BY(stage_mu_);  // the last failed send's error
  // Writes staged and dropped unsent by Forget: never vouched for, whatever a later send does.
  std::vector<std::pair<uint64_t, uint64_t>> dropped_ NS_GUARDED_BY(stage_mu_);
  // A send failed: some follower may lack writes this broker made, so nothing is acknowledged
  // until the mirror confirms that every in-sync follower holds them (or has left the set).
  std::atomic<bool> mirror_pending_{false};
  // Commits whose COMMIT record a follower may lack (a failed send): published by ReadyLocked
  // once the mirror confirms the in-sync set; then their streamlets, for the next Commit to wake.
  struct UnpublishedCommit {
    std::string id;
    uint64_t serial = 0;
    TxnRecord record;
  };
  std::vector<UnpublishedCommit> unpublished_ NS_GUARDED_BY(mu_);
  std::vector<uint32_t> published_ NS_GUARDED_BY(mu_);
};

}  // namespace nearstream::storage
