#include "nearstream/storage/stream_transactions.h"

#include <algorithm>
#include <set>

#include "nearstream/common/log.h"
#include "nearstream/storage/stream.h"

namespace nearstream::storage {

struct StreamTransactions::Txn {
  Txn(std::string id_, uint32_t epoch_, uint64_t serial_, uint64_t number_, int64_t started)
      : id(std::move(id_)), epoch(epoch_), serial(serial_), number(number_), started_ms(started) {
    last_activity_ms.store(started);
  }
  const std::string id;
  const uint32_t epoch;  // the epoch that began it
  const uint64_t serial;
  const uint64_t number;  // names its files (unique in the stream, unlike serials)
  const int64_t started_ms;
  std::atomic<int64_t> last_activity_ms{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint32_t> chunks{0};
  std::atomic<uint32_t> streamlets{0};

  std::mutex mu;  // held for an append; taken after the stream's mu_ for state changes
  TxnPhase phase = TxnPhase::kOpen;                    // written with mu_ and mu held
  std::map<uint32_t, std::unique_ptr<TxnPart>> parts;  // guarded by mu
  std::vector<TxnLink> prepared_parts;  // each part's bytes at the prepare (with mu_)
  bool forgotten = false;               // (mu) the broker stopped leading the scope
};

namespace {

Status CheckTransactionalId(const std::string& id) {
  if (id.empty() || id.size() > 255) {
    return Status::InvalidArgument("a transactional id has 1 to 255 bytes, not " +
                                   std::to_string(id.size()));
  }
  for (unsigned char c : id) {
    if (c < 0x20) return Status::InvalidArgument("a transactional id has no control characters");
  }
  return Status::Ok();
}

}  // namespace

StreamTransactions::StreamTransactions(Stream* stream, Env* env, std::string dir,
                                       TxnSettings settings, TxnTotals* totals, uint32_t scope)
    : stream_(stream),
      env_(env),
      dir_(std::move(dir)),
      scope_(scope),
      settings_(settings),
      totals_(totals),
      durable_(!dir_.empty()) {}

StreamTransactions::~StreamTransactions() = default;

void StreamTransactions::DropAwaitingSync() {
  MutexLock lock(&mu_);
  totals_->files_awaiting_sync.fetch_sub(pending_renames_.size());
  pending_renames_.clear();
}

Status StreamTransactions::Log(const TxnRecord& record, bool sync) {
  if (!durable_) return Status::Ok();
  if (log_ == nullptr) {
    // The first record of a stream that never had one: the file's entry must be durable too.
    std::vector<TxnRecord> none;
    ASSIGN_OR_RETURN(log_, TxnLog::Open(env_, dir_ + "/txn.log", &none));
    Status s = env_->SyncDir(dir_);
    if (!s.ok()) {
      log_.reset();
      return s;
    }
  }
  if (!Mirrors()) return log_->Append(record, sync);
  const uint64_t offset = log_->size();
  Bytes framed;
  RETURN_IF_ERROR(log_->Append(record, sync, &framed));
  MirrorLocked({TxnFileOp::Kind::kAppend, "txn.log", offset, nullptr, 0, {}}, &framed);
  return Status::Ok();
}

bool StreamTransactions::Mirrors() const {
  return scope_ != kBrokerTxnScope && durable_ && mirror_.load() != nullptr;
}

void StreamTransactions::MirrorLocked(TxnFileOp op, Bytes* owned) {
  MutexLock lock(&stage_mu_);
  if (owned != nullptr) {
    batch_.owned.push_back(std::move(*owned));
    op.data = batch_.owned.back().data();
    op.size = static_cast<uint32_t>(batch_.owned.back().size());
  }
  batch_.ops.push_back(std::move(op));
  ++staged_;
}

uint64_t StreamTransactions::Stage(TxnFileOp op, std::shared_ptr<const Segment> segment) {
  MutexLock lock(&stage_mu_);
  batch_.segments.push_back(std::move(segment));
  batch_.ops.push_back(std::move(op));
  return ++staged_;
}

Status StreamTransactions::SendBatchLocked() {
  MirrorBatch batch;
  uint64_t through = 0;
  {
    MutexLock lock(&stage_mu_);
    if (batch_.ops.empty()) return Status::Ok();
    std::swap(batch, batch_);
    through = sent_ = staged_;
  }
  TxnMirror* mirror = mirror_.load();
  if (mirror == nullptr) return Status::Ok();
  Status s = mirror->Mirror(stream_->config().name, scope_, batch.ops);
  SettleLocked(s, through);
  return s;
}

void StreamTransactions::SettleLocked(const Status& status, uint64_t through) {
  MutexLock lock(&stage_mu_);
  if (status.ok()) {
    copied_ = std::max(copied_, through);
  } else {
    send_failure_ = status;
    mirror_pending_.store(true);
  }
}

void StreamTransactions::SendStaged(std::vector<StreamTransactions*> scopes) {
  // Each scope's mu_ is held from its send until its answers are in (sends go one at a time,
  // in order), and scopes are taken in (stream, streamlet) order, as TxnMirror::Send asks.
  std::sort(scopes.begin(), scopes.end(),
            [](const StreamTransactions* a, const StreamTransactions* b) {
              const std::string& x = a->stream_->config().name;
              const std::string& y = b->stream_->config().name;
              return x != y ? x < y : a->scope_ < b->scope_;
            });
  scopes.erase(std::unique(scopes.begin(), scopes.end()), scopes.end());
  struct Flight {
    StreamTransactions* scope;
    TxnMirror* mirror;
    MirrorBatch batch;
    uint64_t through;
    std::unique_ptr<TxnMirror::Sent> sent;
  };
  std::vector<Flight> flights;
  flights.reserve(scopes.size());
  for (StreamTransactions* t : scopes) {
    t->mu_.Lock();
    Flight f{t, t->mirror_.load(), {}, 0, nullptr};
    {
      MutexLock lock(&t->stage_mu_);
      // Nothing to send, unless an earlier send failed: then an empty one sends the failed
      // followers out of the in-sync set, which vouches for what they may lack.
      if (t->copied_ < t->staged_) {
        std::swap(f.batch, t->batch_);
        f.through = t->sent_ = t->staged_;
      }
    }
    if (f.mirror != nullptr && f.through > 0) {
      f.sent = f.mirror->Send(t->stream_->config().name, t->scope_, f.batch.ops);
    }
    flights.push_back(std::move(f));
  }
  for (Flight& f : flights) {
    if (f.sent != nullptr) f.scope->SettleLocked(f.mirror->Finish(std::move(f.sent)), f.through);
    f.scope->mu_.Unlock();
  }
}

Status StreamTransactions::Copied(uint64_t ticket) const {
  MutexLock lock(&stage_mu_);
  for (const auto& [from, to] : dropped_) {
    if (ticket >= from && ticket <= to) {
      return Status::NotOwner("this broker stopped leading streamlet " + std::to_string(scope_) +
                              " of stream '" + stream_->config().name +
                              "' before the write reached its followers");
    }
  }
  if (ticket <= copied_) return Status::Ok();
  if (!send_failure_.ok()) return send_failure_;
  return Status::BrokerUnavailable("the write to streamlet " + std::to_string(scope_) +
                                   " of stream '" + stream_->config().name +
                                   "' has not reached its followers");
}

Status StreamTransactions::ReadyLocked() {
  if (!flush_failure_.ok()) {
    return Status::StorageError("the transactions of stream '" + stream_->config().name +
                                "' take no writes until their data reaches the disk again: " +
                                std::string(flush_failure_.message()));
  }
  if (scope_ == kBrokerTxnScope) return Status::Ok();
  if (stream_->streamlet(scope_)->sealed()) {
    // A follower is copying the scope's files (or this broker just stopped leading it).
    return Status::StreamletMoving("streamlet " + std::to_string(scope_) + " of stream '" +
                                   stream_->config().name +
                                   "' is sealed (a replica is being copied); retry after a "
                                   "back-off");
  }
  // Cleared before the mirror is asked, so that a failure an append reports meanwhile (it
  // holds no mu_) stays pending.
  if (mirror_pending_.exchange(false)) {
    TxnMirror* mirror = mirror_.load();
    if (Status s =
            mirror != nullptr ? mirror->Mirror(stream_->config().name, scope_, {}) : Status::Ok();
        !s.ok()) {
      mirror_pending_.store(true);
      return s;
    }
    // Every in-sync follower holds the commits that waited for it: they are published now.
    std::vector<UnpublishedCommit> waiting;
    waiting.swap(unpublished_);
    for (const UnpublishedCommit& u : waiting) {
      IdState* st = FindLocked(u.id);
      std::shared_ptr<Txn> txn = st == nullptr ? nullptr : LiveLocked(*st, u.serial);
      if (txn == nullptr) continue;
      std::lock_guard<std::mutex> txn_lock(txn->mu);
      PublishCommitLocked(*st, txn, u.record, &published_);
    }
  }
  return Status::Ok();
}

bool StreamTransactions::SyncEach() const {
  return stream_->config().durability == Durability::kSync;
}

Status StreamTransactions::FinishCommits() {
  std::vector<PendingRename> renames;
  {
    MutexLock lock(&mu_);
    if (pending_renames_.empty()) return Status::Ok();
    RETURN_IF_ERROR(log_->Sync());  // the COMMIT records first
    renames.swap(pending_renames_);
  }
  // Then the data, outside the lock (appends and other commits go on): a file that has its group
  // name holds all its bytes, so recovery need only check files that still carry transaction
  // names (RecoverLog). Only the maintenance thread and commits past the broker's bound of files
  // awaiting sync (AwaitSyncLocked) get here, each with renames of its own, so renames never
  // race.
  Status s = SyncAndRename(renames);
  totals_->files_awaiting_sync.fetch_sub(renames.size());  // closed now (or kept, failed)
  return s;
}

Status StreamTransactions::SyncAndRename(std::vector<PendingRename>& renames) {
  Status first;
  for (PendingRename& r : renames) {
    if (r.segment == nullptr || r.segment->file() == nullptr) continue;
    Status s = r.segment->file()->Sync();
    if (!s.ok()) {
      // Not renamed: the file keeps its transaction name and recovery finishes the commit
      // after checking it.
      NS_LOG(kError) << "commit: " << s.ToString() << " (the next start finishes the commit)";
      if (first.ok()) first = s;
      r.from.clear();
    }
  }
  std::vector<uint32_t> streamlets;
  for (const PendingRename& r : renames) {
    if (r.from.empty()) continue;
    Status s = env_->Rename(r.from, r.to);
    if (!s.ok()) {
      NS_LOG(kError) << "commit: " << s.ToString() << " (the next start redoes the rename)";
      if (first.ok()) first = s;
    }
    if (streamlets.empty() || streamlets.back() != r.streamlet) streamlets.push_back(r.streamlet);
    // Its bytes are synced and nothing appends to it again. Only the thread that took the
    // rename touches a linked segment's file, so it goes here.
    if (r.segment != nullptr) r.segment->CloseFile();
  }
  // The new names made durable at once (off the request path): a flush interval later the
  // streamlet's own sync would do, but nothing should depend on a rename that may be undone.
  std::sort(streamlets.begin(), streamlets.end());
  streamlets.erase(std::unique(streamlets.begin(), streamlets.end()), streamlets.end());
  for (uint32_t i : streamlets) {
    Status s = env_->SyncDir(stream_->streamlet(i)->dir());
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

Status StreamTransactions::FlushAsync() {
  std::vector<std::shared_ptr<Segment>> dirty;
  // Taken under the locks: a commit past the bound of files awaiting sync closes its parts'
  // files (AwaitSyncLocked) while these syncs run.
  std::vector<std::shared_ptr<WritableFile>> files;
  std::vector<std::string> dirs;
  Status first = FinishCommits();
  {
    MutexLock lock(&mu_);
    if (log_ != nullptr) {
      if (Status s = log_->Sync(); !s.ok() && first.ok()) first = s;
    }
    std::vector<std::shared_ptr<Txn>> live;
    for (const auto& [id, st] : ids_) {
      if (st.open != nullptr) live.push_back(st.open);
      for (const auto& [serial, t] : st.prepared) live.push_back(t);
    }
    for (const auto& t : live) {
      std::lock_guard<std::mutex> txn_lock(t->mu);
      for (auto& [streamlet, part] : t->parts) {
        bool dir = false;
        const size_t taken = dirty.size();
        part->TakeDirty(&dirty, &dir);
        for (size_t i = taken; i < dirty.size(); ++i) files.push_back(dirty[i]->shared_file());
        if (dir) dirs.push_back(stream_->streamlet(streamlet)->dir());
      }
    }
  }
  // Outside the locks, as Streamlet::SyncDirty: appends go on meanwhile.
  for (size_t i = 0; i < dirty.size(); ++i) {
    const std::shared_ptr<Segment>& seg = dirty[i];
    if (!seg->dirty().exchange(false)) continue;
    Status s = files[i]->Sync();
    if (!s.ok()) {
      seg->dirty().store(true);  // again next round
      if (first.ok()) first = s;
    }
  }
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  for (const auto& dir : dirs) {
    Status s = env_->SyncDir(dir);
    if (!s.ok() && first.ok()) first = s;
  }
  // Refused until a flush succeeds; Linux may report a failed writeback only once, so the one
  // that succeeds proves only that the disk takes writes again (as Streamlet::SyncDirty).
  MutexLock lock(&mu_);
  flush_failure_ = first;
  return first;
}

void StreamTransactions::MaybeCompactLocked() {
  if (log_ == nullptr || log_->size() < settings_.compact_log_bytes) return;
  Bytes image;
  Status s = log_->Rewrite(StateRecordsLocked(), &image);
  if (!s.ok()) {
    NS_LOG(kWarning) << "compacting " << dir_ << "/txn.log: " << s.ToString();
    return;
  }
  if (Mirrors()) MirrorLocked({TxnFileOp::Kind::kReplace, "txn.log", 0, nullptr, 0, {}}, &image);
}

std::vector<TxnRecord> StreamTransactions::StateRecordsLocked() const {
  std::vector<TxnRecord> out;
  for (const auto& [id, st] : ids_) {
    out.push_back({TxnRecordType::kEpoch, id, st.epoch, st.last_serial, 0, 0, {}});
    for (const Outcome& o : st.finished) {
      out.push_back({TxnRecordType::kBegin, id, o.epoch, o.serial, 0, 0, {}});
      out.push_back({o.committed ? TxnRecordType::kCommit : TxnRecordType::kAbort,
                     id,
                     0,
                     o.serial,
                     0,
                     0,
                     {}});
    }
    // Prepared before open: a BEGIN makes its transaction the id's open one until a PREPARE.
    for (const auto& [serial, t] : st.prepared) {
      out.push_back({TxnRecordType::kBegin, id, t->epoch, serial, t->number, t->started_ms, {}});
      out.push_back({TxnRecordType::kPrepare, id, 0, serial, 0, 0, t->prepared_parts});
    }
    if (st.open != nullptr) {
      const Txn& t = *st.open;
      out.push_back({TxnRecordType::kBegin, id, t.epoch, t.serial, t.number, t.started_ms, {}});
    }
  }
  return out;
}

StreamTransactions::IdState* StreamTransactions::FindLocked(const std::string& id) {
  auto it = ids_.find(id);
  return it == ids_.end() ? nullptr : &it->second;
}

std::shared_ptr<StreamTransactions::Txn> StreamTransactions::LiveLocked(IdState& st,
                                                                        uint64_t serial) {
  if (st.open != nullptr && st.open->serial == serial) return st.open;
  auto it = st.prepared.find(serial);
  return it == st.prepared.end() ? nullptr : it->second;
}

const StreamTransactions::Outcome* StreamTransactions::FinishedLocked(const IdState& st,
                                                                      uint64_t serial) const {
  for (const Outcome& o : st.finished) {
    if (o.serial == serial) return &o;
  }
  return nullptr;
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): by value on purpose (see the header)
void StreamTransactions::FinishLocked(IdState& st, std::shared_ptr<Txn> txn, bool committed) {
  if (st.open == txn) st.open.reset();
  st.prepared.erase(txn->serial);
  st.finished.push_back(Outcome{txn->serial, txn->epoch, committed});
  while (st.finished.size() > settings_.outcomes_kept) st.finished.pop_front();
}

namespace {

std::string Quote(const std::string& id) { return "transactional id '" + id + "'"; }

Status Fenced(const std::string& id, uint32_t sent, uint32_t current) {
  return Status::TxnFenced(Quote(id) + " is at epoch " + std::to_string(current) + "; epoch " +
                           std::to_string(sent) +
                           " is fenced (a newer producer initialised the id)");
}

Status NotFound(const std::string& id, uint64_t serial) {
  return Status::TxnNotFound(Quote(id) + " has no transaction " + std::to_string(serial) +
                             " (never begun, or finished too long ago to be remembered)");
}

// The answer to an append or prepare naming a transaction that is no longer live: `outcome` is
// what the id remembers of it (null: nothing).
template <typename Outcome>
Status WritingToFinished(const std::string& id, uint64_t serial, const Outcome* outcome) {
  if (outcome == nullptr) return NotFound(id, serial);
  const std::string txn = "transaction " + std::to_string(serial) + " of " + Quote(id);
  if (outcome->committed) return Status::InvalidTxnState(txn + " is already committed");
  return Status::TxnAborted(txn + " was aborted");
}

}  // namespace

Result<std::pair<uint32_t, uint64_t>> StreamTransactions::Init(const std::string& id,
                                                               uint64_t keep_prepared_through,
                                                               int64_t now_ms) {
  (void)now_ms;
  RETURN_IF_ERROR(CheckTransactionalId(id));
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(ReadyLocked());
  return SentLocked(InitLocked(id, keep_prepared_through));
}

Result<std::pair<uint32_t, uint64_t>> StreamTransactions::InitLocked(
    const std::string& id, uint64_t keep_prepared_through) {
  const bool fresh = !ids_.contains(id);
  IdState& st = ids_[id];
  const uint32_t epoch = st.epoch + 1;
  Status s = Log({TxnRecordType::kEpoch, id, epoch, st.last_serial, 0, 0, {}}, true);
  if (!s.ok()) {
    if (fresh) ids_.erase(id);
    return s;
  }
  st.epoch = epoch;
  // What the previous owner left: its open transaction, and what it prepared after the point
  // the caller recovers from.
  if (st.open != nullptr) {
    RETURN_IF_ERROR(AbortLocked(st, st.open, "its producer was fenced by a new one"));
  }
  std::vector<std::shared_ptr<Txn>> doomed;
  for (auto it = st.prepared.upper_bound(keep_prepared_through); it != st.prepared.end(); ++it) {
    doomed.push_back(it->second);
  }
  for (const auto& t : doomed) {
    RETURN_IF_ERROR(AbortLocked(st, t, "a new producer of the id did not keep it"));
  }
  MaybeCompactLocked();
  return std::make_pair(st.epoch, st.last_serial);
}

Result<uint64_t> StreamTransactions::Begin(const std::string& id, uint32_t epoch, int64_t now_ms) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(ReadyLocked());
  return SentLocked(BeginLocked(id, epoch, now_ms));
}

Result<uint64_t> StreamTransactions::BeginLocked(const std::string& id, uint32_t epoch,
                                                 int64_t now_ms) {
  IdState* st = FindLocked(id);
  if (st == nullptr) {
    return Status::TxnNotFound(Quote(id) + " is not known to stream '" + stream_->config().name +
                               "' (TxnInit it first)");
  }
  if (epoch != st->epoch) return Fenced(id, epoch, st->epoch);
  if (st->open != nullptr) {  // a retried Begin
    st->open->last_activity_ms.store(now_ms);
    return st->open->serial;
  }
  const uint64_t serial = st->last_serial + 1;
  const uint64_t number = next_number_;
  RETURN_IF_ERROR(Log({TxnRecordType::kBegin, id, epoch, serial, number, now_ms, {}}, SyncEach()));
  ++next_number_;
  st->last_serial = serial;
  st->open = std::make_shared<Txn>(id, epoch, serial, number, now_ms);
  MaybeCompactLocked();
  return serial;
}

Result<std::shared_ptr<StreamTransactions::Txn>> StreamTransactions::ForAppend(
    const std::string& id, uint32_t epoch, uint64_t serial, int64_t now_ms) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(ReadyLocked());
  IdState* st = FindLocked(id);
  if (st == nullptr) return NotFound(id, serial);
  if (epoch != st->epoch) return Fenced(id, epoch, st->epoch);
  if (st->open != nullptr && st->open->serial == serial) {
    st->open->last_activity_ms.store(now_ms);
    return st->open;
  }
  if (st->prepared.contains(serial)) {
    return Status::InvalidTxnState("transaction " + std::to_string(serial) + " of " + Quote(id) +
                                   " is prepared: it takes no more appends");
  }
  return WritingToFinished(id, serial, FinishedLocked(*st, serial));
}

Result<bool> StreamTransactions::Append(Txn& txn, uint32_t streamlet, const uint8_t* chunk,
                                        const ChunkHeader& h, int64_t now_ms, uint64_t* ticket) {
  Streamlet* s = stream_->streamlet(streamlet);
  if (s == nullptr) {
    return Status::StreamletNotFound("stream '" + stream_->config().name + "' has no streamlet " +
                                     std::to_string(streamlet));
  }
  if (!InScope(streamlet)) {
    return Status::InvalidArgument(
        "a transaction in the scope of streamlet " + std::to_string(scope_) + " of stream '" +
        stream_->config().name + "' writes no other streamlet (" + std::to_string(streamlet) + ")");
  }
  if (mirror_pending_.load()) {
    // An earlier write may be missing on a follower: nothing is acknowledged until the mirror
    // confirms it is not. The flag stays for ReadyLocked, which also publishes waiting commits.
    TxnMirror* mirror = mirror_.load();
    if (mirror != nullptr) RETURN_IF_ERROR(mirror->Mirror(stream_->config().name, scope_, {}));
  }
  uint64_t waits_for = 0;
  ASSIGN_OR_RETURN(bool duplicate, AppendToPart(txn, streamlet, chunk, h, now_ms, &waits_for));
  if (ticket != nullptr) {
    *ticket = waits_for;
    return duplicate;
  }
  if (waits_for > 0 && !Copied(waits_for).ok()) {
    SendStaged({this});
    RETURN_IF_ERROR(Copied(waits_for));
  }
  return duplicate;
}

Result<bool> StreamTransactions::AppendToPart(Txn& txn, uint32_t streamlet, const uint8_t* chunk,
                                              const ChunkHeader& h, int64_t now_ms,
                                              uint64_t* waits_for) {
  Streamlet* s = stream_->streamlet(streamlet);
  std::lock_guard<std::mutex> lock(txn.mu);
  if (txn.forgotten) {
    return Status::NotOwner("this broker no longer leads streamlet " + std::to_string(streamlet) +
                            " of stream '" + stream_->config().name + "'");
  }
  if (txn.phase != TxnPhase::kOpen) {
    if (txn.phase == TxnPhase::kAborted) {
      return Status::TxnAborted("transaction " + std::to_string(txn.serial) + " of " +
                                Quote(txn.id) + " was aborted");
    }
    return Status::InvalidTxnState("transaction " + std::to_string(txn.serial) + " of " +
                                   Quote(txn.id) + " is no longer open");
  }
  // Under txn.mu, which HoldingPartsIn takes after the streamlet was sealed (or closed to new
  // parts): either that sees this part, or this sees the seal.
  const uint64_t mark = s->new_parts_mark();
  const bool held_off = mark != 0 && txn.number >= mark && !txn.parts.contains(streamlet);
  if (s->sealed() || held_off) {
    return Status::StreamletMoving("streamlet " + std::to_string(streamlet) +
                                   " is moving to another broker; retry after a back-off");
  }
  auto& part = txn.parts[streamlet];
  if (part == nullptr) {
    part = std::make_unique<TxnPart>(s, &stream_->config(), env_, txn.number);
    txn.streamlets.store(static_cast<uint32_t>(txn.parts.size()));
  }
  TxnFileOp written;
  std::shared_ptr<const Segment> written_in;
  ASSIGN_OR_RETURN(bool duplicate, part->Append(chunk, h, now_ms, &written, &written_in));
  if (!duplicate) {
    txn.bytes.fetch_add(h.total_size());
    txn.chunks.fetch_add(1);
  }
  txn.last_activity_ms.store(now_ms);
  if (Mirrors()) {
    if (!duplicate && written.data != nullptr) {
      // Staged under the transaction's lock: its part's file grows in order on every follower
      // too, and a later write to the file (an abort's delete) is staged after this one.
      *waits_for = Stage(std::move(written), std::move(written_in));
    } else {
      // A retry is acknowledged like the chunk it repeats: once that one is on the followers.
      MutexLock stage(&stage_mu_);
      *waits_for = staged_;
    }
  }
  return duplicate;
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): by value on purpose (see the header)
Status StreamTransactions::PrepareLocked(IdState& st, std::shared_ptr<Txn> txn) {
  std::lock_guard<std::mutex> lock(txn->mu);
  // Under `sync` every append was fsync'd before it was acknowledged; under `async` the flusher
  // syncs parts and log every interval, so a prepare costs no fsync of the transaction's bytes.
  // The record says how many bytes each part holds: a power loss may keep the record and lose
  // the parts' last pages, and recovery must notice (RecoverParts).
  TxnRecord record{TxnRecordType::kPrepare, txn->id, 0, txn->serial, 0, 0, {}};
  for (const auto& [streamlet, part] : txn->parts) {
    if (part->chunks() > 0) record.links.push_back({streamlet, 0, part->bytes()});
  }
  RETURN_IF_ERROR(Log(record, SyncEach()));
  txn->prepared_parts = std::move(record.links);
  txn->phase = TxnPhase::kPrepared;
  st.prepared[txn->serial] = txn;
  if (st.open == txn) st.open.reset();
  return Status::Ok();
}

Status StreamTransactions::Prepare(const std::string& id, uint32_t epoch, uint64_t serial) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(ReadyLocked());
  return SentLocked(PrepareRequestLocked(id, epoch, serial));
}

Status StreamTransactions::PrepareRequestLocked(const std::string& id, uint32_t epoch,
                                                uint64_t serial) {
  IdState* st = FindLocked(id);
  if (st == nullptr) return NotFound(id, serial);
  if (epoch != st->epoch) return Fenced(id, epoch, st->epoch);
  if (auto txn = LiveLocked(*st, serial)) {
    if (txn->phase == TxnPhase::kPrepared) return Status::Ok();  // a retried prepare
    Status s = PrepareLocked(*st, txn);
    MaybeCompactLocked();
    return s;
  }
  return WritingToFinished(id, serial, FinishedLocked(*st, serial));
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): by value on purpose (see the header)
Status StreamTransactions::CommitLocked(IdState& st, std::shared_ptr<Txn> txn, int64_t now_ms,
                                        std::vector<uint32_t>* linked) {
  std::lock_guard<std::mutex> lock(txn->mu);
  TxnRecord record{TxnRecordType::kCommit, txn->id, 0, txn->serial, 0, 0, {}};
  for (auto& [streamlet, part] : txn->parts) {
    if (part->chunks() == 0) continue;
    record.links.push_back(
        {streamlet, stream_->streamlet(streamlet)->ReserveGroup(now_ms), part->bytes()});
  }
  // The commit point. Until the record is durable readers wait at the reserved groups; if it
  // cannot be written they skip them and the transaction stays prepared.
  Status s = Log(record, SyncEach());
  if (!s.ok()) {
    for (const TxnLink& l : record.links) stream_->streamlet(l.streamlet)->DropReserved(l.group);
    return s;
  }
  if (Mirrors()) {
    // Followers rename at once, after their copy of the COMMIT record; and nothing is visible
    // before every in-sync follower holds the commit (a failover must not take it back).
    for (const TxnLink& l : record.links) {
      for (const auto& [from, to] : txn->parts[l.streamlet]->RenamesTo(l.group)) {
        MirrorLocked({TxnFileOp::Kind::kRename, from.substr(from.rfind('/') + 1), 0, nullptr, 0,
                      to.substr(to.rfind('/') + 1)});
      }
    }
    Status sent = SendBatchLocked();
    if (!sent.ok()) {
      // Readers wait at the reserved groups. Deposed, this broker forgets the scope; otherwise
      // the commit is published once the followers that did not answer are out of the in-sync
      // set (ReadyLocked), and a retried TxnCommit then finds it committed.
      if (!sent.IsNotOwner()) unpublished_.push_back({txn->id, txn->serial, std::move(record)});
      return sent;
    }
  }
  PublishCommitLocked(st, txn, record, linked);
  return Status::Ok();
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): by value on purpose (see the header)
void StreamTransactions::PublishCommitLocked(IdState& st, std::shared_ptr<Txn> txn,
                                             const TxnRecord& record,
                                             std::vector<uint32_t>* linked) {
  for (const TxnLink& l : record.links) {
    TxnPart& part = *txn->parts[l.streamlet];
    Streamlet* streamlet = stream_->streamlet(l.streamlet);
    bool renamed_any = false;
    auto renames = part.RenamesTo(l.group);
    std::vector<std::shared_ptr<Segment>> segments = part.TakeSegments();  // in the same order
    std::vector<PendingRename> awaiting;                                   // `async`
    for (size_t i = 0; i < renames.size(); ++i) {
      auto& [from, to] = renames[i];
      if (!SyncEach()) {
        awaiting.push_back({l.streamlet, std::move(from), std::move(to), segments[i]});
        continue;
      }
      Status renamed = env_->Rename(from, to);
      if (!renamed.ok()) {
        NS_LOG(kError) << "commit of " << Quote(txn->id) << " transaction " << txn->serial << ": "
                       << renamed.ToString() << " (the next start redoes the rename)";
      }
      renamed_any = true;
    }
    if (renamed_any) {
      Status synced = env_->SyncDir(streamlet->dir());
      if (!synced.ok()) NS_LOG(kError) << "commit: " << synced.ToString();
      // Every append to them was synced: nothing writes or syncs these files again.
      for (const std::shared_ptr<Segment>& seg : segments) seg->CloseFile();
    }
    if (!awaiting.empty()) AwaitSyncLocked(std::move(awaiting));
    streamlet->LinkReserved(l.group, std::move(segments));
    linked->push_back(l.streamlet);
  }
  std::vector<std::string> deleted;
  for (auto& [streamlet, part] : txn->parts) part->Discard(&deleted);  // empty parts' files
  for (std::string& name : deleted) {
    if (Mirrors()) MirrorLocked({TxnFileOp::Kind::kDelete, std::move(name), 0, nullptr, 0, {}});
  }
  txn->parts.clear();
  txn->phase = TxnPhase::kCommitted;
  FinishLocked(st, txn, true);
  totals_->committed.fetch_add(1);
}

void StreamTransactions::AwaitSyncLocked(std::vector<PendingRename> files) {
  if (totals_->files_awaiting_sync.load() + files.size() > settings_.max_files_awaiting_sync) {
    // Past the bound, the commit does the maintenance thread's work for its own files before it
    // is answered, as under `sync`: committers slow down to what the disk's fsyncs take,
    // instead of leaving files open faster than the flusher closes them. Before its segments
    // are linked, so no other thread (retention) touches their files; a flush syncing them
    // meanwhile holds its own reference. The COMMIT record first, as FinishCommits does. A
    // failure is refused on, until a flush succeeds, as when the flusher fails (FlushAsync).
    Status s = log_->Sync();
    if (s.ok()) {
      totals_->inline_commit_syncs.fetch_add(1);
      s = SyncAndRename(files);  // a file it could not sync keeps its name, for recovery
      if (!s.ok()) flush_failure_ = s;
      return;
    }
    flush_failure_ = s;  // the files are left to the flusher, which retries the log first
    NS_LOG(kError) << "commit of " << stream_->config().name << " transactions: " << s.ToString();
  }
  totals_->files_awaiting_sync.fetch_add(files.size());
  for (PendingRename& f : files) pending_renames_.push_back(std::move(f));
}

Status StreamTransactions::Commit(const std::string& id, uint32_t epoch, uint64_t serial,
                                  int64_t now_ms, std::vector<uint32_t>* linked) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(ReadyLocked());
  // Commits published late (ReadyLocked) wake their readers with this one's.
  linked->insert(linked->end(), published_.begin(), published_.end());
  published_.clear();
  return SentLocked(CommitRequestLocked(id, epoch, serial, now_ms, linked));
}

Status StreamTransactions::CommitRequestLocked(const std::string& id, uint32_t epoch,
                                               uint64_t serial, int64_t now_ms,
                                               std::vector<uint32_t>* linked) {
  IdState* st = FindLocked(id);
  if (st == nullptr) return NotFound(id, serial);
  if (auto txn = LiveLocked(*st, serial)) {
    if (txn->epoch != epoch) {
      return Status::TxnFenced("transaction " + std::to_string(serial) + " of " + Quote(id) +
                               " was begun in epoch " + std::to_string(txn->epoch) + ", not " +
                               std::to_string(epoch));
    }
    if (txn->phase == TxnPhase::kOpen) {
      if (epoch != st->epoch) {
        return Status::InvalidTxnState("transaction " + std::to_string(serial) + " of " +
                                       Quote(id) + " is open and its producer was fenced");
      }
      RETURN_IF_ERROR(PrepareLocked(*st, txn));
    }
    Status s = CommitLocked(*st, txn, now_ms, linked);
    MaybeCompactLocked();
    return s;
  }
  if (const Outcome* o = FinishedLocked(*st, serial)) {
    if (o->epoch != epoch) return Fenced(id, epoch, o->epoch);
    if (o->committed) return Status::Ok();  // a retried or recovered commit
    return Status::TxnAborted("transaction " + std::to_string(serial) + " of " + Quote(id) +
                              " was aborted");
  }
  return NotFound(id, serial);
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): by value on purpose (see the header)
Status StreamTransactions::AbortLocked(IdState& st, std::shared_ptr<Txn> txn, const char* why) {
  std::lock_guard<std::mutex> lock(txn->mu);
  RETURN_IF_ERROR(Log({TxnRecordType::kAbort, txn->id, 0, txn->serial, 0, 0, {}}, SyncEach()));
  txn->phase = TxnPhase::kAborted;
  std::vector<std::string> deleted;
  for (auto& [streamlet, part] : txn->parts) part->Discard(&deleted);
  for (std::string& name : deleted) {
    if (Mirrors()) MirrorLocked({TxnFileOp::Kind::kDelete, std::move(name), 0, nullptr, 0, {}});
  }
  txn->parts.clear();
  FinishLocked(st, txn, false);
  totals_->aborted.fetch_add(1);
  NS_LOG(kInfo) << "stream '" << stream_->config().name << "': aborted transaction " << txn->serial
                << " of " << Quote(txn->id) << ": " << why;
  return Status::Ok();
}

Status StreamTransactions::Abort(const std::string& id, uint32_t epoch, uint64_t serial) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(ReadyLocked());
  return SentLocked(AbortRequestLocked(id, epoch, serial));
}

Status StreamTransactions::AbortRequestLocked(const std::string& id, uint32_t epoch,
                                              uint64_t serial) {
  IdState* st = FindLocked(id);
  if (st == nullptr) return NotFound(id, serial);
  if (auto txn = LiveLocked(*st, serial)) {
    if (txn->epoch != epoch || (txn->phase == TxnPhase::kOpen && epoch != st->epoch)) {
      return Fenced(id, epoch, txn->phase == TxnPhase::kOpen ? st->epoch : txn->epoch);
    }
    Status s = AbortLocked(*st, txn, "aborted on request");
    MaybeCompactLocked();
    return s;
  }
  if (const Outcome* o = FinishedLocked(*st, serial)) {
    if (o->committed) {
      return Status::InvalidTxnState("transaction " + std::to_string(serial) + " of " + Quote(id) +
                                     " is already committed");
    }
    return Status::Ok();  // a retried abort
  }
  return NotFound(id, serial);
}

std::vector<TxnListing> StreamTransactions::List(const std::string& prefix) const {
  MutexLock lock(&mu_);
  std::vector<TxnListing> out;
  auto add = [&out](const Txn& t, TxnPhase phase) {
    out.push_back(TxnListing{t.id, t.epoch, t.serial, phase, t.bytes.load(), t.chunks.load(),
                             t.streamlets.load(), t.started_ms});
  };
  for (auto it = ids_.lower_bound(prefix); it != ids_.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    const size_t first = out.size();
    for (const auto& [serial, t] : it->second.prepared) add(*t, TxnPhase::kPrepared);
    if (it->second.open != nullptr) add(*it->second.open, TxnPhase::kOpen);
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
              [](const TxnListing& a, const TxnListing& b) { return a.serial < b.serial; });
  }
  return out;
}

uint64_t StreamTransactions::NextNumber() const {
  MutexLock lock(&mu_);
  return next_number_;
}

uint32_t StreamTransactions::HoldingPartsIn(uint32_t streamlet, uint64_t mark) const {
  MutexLock lock(&mu_);
  uint32_t holding = 0;
  auto holds = [streamlet](Txn& t) {
    std::lock_guard<std::mutex> txn_lock(t.mu);
    return t.parts.contains(streamlet);
  };
  for (const auto& [id, st] : ids_) {
    // An open transaction from before the mark may still start a part there.
    if (st.open != nullptr && (st.open->number < mark || holds(*st.open))) ++holding;
    for (const auto& [serial, t] : st.prepared) {
      if (holds(*t)) ++holding;
    }
  }
  return holding;
}

TxnGauges StreamTransactions::Gauges() const {
  MutexLock lock(&mu_);
  TxnGauges g;
  for (const auto& [id, st] : ids_) {
    if (st.open != nullptr) {
      ++g.open;
      g.open_bytes += st.open->bytes.load();
    }
    for (const auto& [serial, t] : st.prepared) {
      ++g.prepared;
      g.prepared_bytes += t->bytes.load();
    }
  }
  return g;
}

void StreamTransactions::ExpireOpen(int64_t now_ms) {
  MutexLock lock(&mu_);
  if (!ReadyLocked().ok()) return;  // sealed, or a follower unconfirmed: the next round
  ExpireOpenLocked(now_ms);
  if (Status s = SendBatchLocked(); !s.ok()) {
    NS_LOG(kWarning) << "expiring transactions of streamlet " << scope_ << " of stream '"
                     << stream_->config().name << "': " << s.ToString();
  }
}

void StreamTransactions::ExpireOpenLocked(int64_t now_ms) {
  for (auto& [id, st] : ids_) {
    if (st.open == nullptr ||
        now_ms - st.open->last_activity_ms.load() < settings_.open_timeout_ms) {
      continue;
    }
    Status s = AbortLocked(st, st.open, "open for longer than the transaction timeout");
    if (s.ok()) {
      totals_->expired.fetch_add(1);
    } else {
      NS_LOG(kWarning) << "expiring a transaction of " << Quote(id) << ": " << s.ToString();
    }
  }
  MaybeCompactLocked();
}

// ---- recovery ---------------------------------------------------------------------------------

void StreamTransactions::ApplyLocked(const TxnRecord& r, uint64_t* committed_number) {
  IdState& st = ids_[r.id];
  switch (r.type) {
    case TxnRecordType::kEpoch:
      st.epoch = r.epoch;
      st.last_serial = std::max(st.last_serial, r.serial);
      break;
    case TxnRecordType::kBegin:
      st.last_serial = std::max(st.last_serial, r.serial);
      st.open = std::make_shared<Txn>(r.id, r.epoch, r.serial, r.number, r.started_ms);
      next_number_ = std::max(next_number_, r.number + 1);
      break;
    case TxnRecordType::kPrepare:
      if (st.open != nullptr && st.open->serial == r.serial) {
        st.open->phase = TxnPhase::kPrepared;
        st.open->prepared_parts = r.links;
        st.prepared[r.serial] = st.open;
        st.open.reset();
      }
      break;
    case TxnRecordType::kCommit:
    case TxnRecordType::kAbort:
      if (auto txn = LiveLocked(st, r.serial)) {
        txn->phase = r.type == TxnRecordType::kCommit ? TxnPhase::kCommitted : TxnPhase::kAborted;
        if (r.type == TxnRecordType::kCommit) *committed_number = txn->number;
        FinishLocked(st, txn, r.type == TxnRecordType::kCommit);
      }
      break;
  }
}

Status StreamTransactions::RecoverLog() {
  if (!durable_) return Status::Ok();
  MutexLock lock(&mu_);
  if (!env_->Exists(dir_ + "/txn.log")) return Status::Ok();
  std::vector<TxnRecord> records;
  ASSIGN_OR_RETURN(log_, TxnLog::Open(env_, dir_ + "/txn.log", &records));
  // Committed transactions whose files still carry their transaction names: the broker died
  // between the COMMIT record and the renames. Redone here, before the streamlets load files.
  std::vector<std::pair<uint64_t, std::vector<TxnLink>>> commits;
  for (const TxnRecord& r : records) {
    uint64_t number = 0;
    ApplyLocked(r, &number);
    if (number != 0 && !r.links.empty()) commits.emplace_back(number, r.links);
  }
  std::map<uint64_t, const std::vector<TxnLink>*> commit_links;
  for (const auto& [number, links] : commits) commit_links[number] = &links;
  std::map<uint64_t, bool> live;  // numbers of open and prepared transactions
  for (const auto& [id, st] : ids_) {
    if (st.open != nullptr) live[st.open->number] = true;
    for (const auto& [serial, t] : st.prepared) live[t->number] = true;
  }
  std::vector<std::vector<std::string>> listing(stream_->streamlet_count());
  for (uint32_t i = 0; i < stream_->streamlet_count(); ++i) {
    Streamlet* s = stream_->streamlet(i);
    // Another scope's files are that scope's to recover.
    if (InScope(i) && env_->Exists(s->dir())) {
      ASSIGN_OR_RETURN(listing[i], env_->ListDir(s->dir()));
    }
  }
  ASSIGN_OR_RETURN(std::set<uint64_t> lost, ShortCommitsLocked(commits, listing));
  for (uint32_t i = 0; i < stream_->streamlet_count(); ++i) {
    Streamlet* s = stream_->streamlet(i);
    const std::vector<std::string>& names = listing[i];
    bool renamed = false;
    for (const auto& name : names) {
      uint64_t number = 0, segment = 0;
      if (!Streamlet::ParseTxnSegmentName(name, &number, &segment)) continue;
      const std::string path = s->dir() + "/" + name;
      if (live.contains(number)) {
        auto& where = live_files_[number];
        if (where.empty() || where.back() != i) where.push_back(i);
        continue;
      }
      auto c = commit_links.find(number);
      const TxnLink* link = nullptr;
      if (c != commit_links.end() && !lost.contains(number)) {
        for (const TxnLink& l : *c->second) {
          if (l.streamlet == i) link = &l;
        }
      }
      if (link != nullptr) {
        NS_LOG(kInfo) << "recovery: finishing the commit of " << path;
        RETURN_IF_ERROR(env_->Rename(path, s->GroupSegmentPath(link->group, segment)));
        renamed = true;
      } else {
        // An aborted transaction's, or one whose BEGIN never became durable (never prepared,
        // so never promised to anyone).
        RETURN_IF_ERROR(env_->RemoveFile(path));
      }
    }
    if (renamed) RETURN_IF_ERROR(env_->SyncDir(s->dir()));
  }
  return Status::Ok();
}

Result<std::set<uint64_t>> StreamTransactions::ShortCommitsLocked(
    const std::vector<std::pair<uint64_t, std::vector<TxnLink>>>& commits,
    const std::vector<std::vector<std::string>>& listing) {
  std::set<uint64_t> lost;
  for (const auto& [number, links] : commits) {
    bool pending = false;  // files still carry the transaction's name
    bool renamed = false;  // a file already carries its group's name
    bool checkable = true;
    uint64_t missing = 0;
    for (const TxnLink& l : links) {
      if (l.bytes == 0 || l.streamlet >= listing.size()) {
        checkable = false;  // written before records carried sizes
        break;
      }
      Streamlet* s = stream_->streamlet(l.streamlet);
      uint64_t have = 0;
      for (const auto& name : listing[l.streamlet]) {
        uint64_t txn = 0, group = 0, segment = 0;
        if (Streamlet::ParseTxnSegmentName(name, &txn, &segment)) {
          if (txn != number) continue;
          pending = true;
          // What TxnPart::Recover would keep of the file.
          ASSIGN_OR_RETURN(Bytes data, env_->ReadFile(s->dir() + "/" + name));
          have += ScanWholeChunks(data.data(), data.size(), [](const ChunkHeader&, size_t) {});
        } else if (Streamlet::ParseGroupSegmentName(name, &group, &segment) && group == l.group) {
          renamed = true;
        }
      }
      if (have < l.bytes) missing += l.bytes - have;
    }
    // The flusher fsyncs a commit's data before it renames any of its files, so one renamed
    // file means every file was whole; only a commit none of whose files were renamed can
    // have lost pages.
    if (checkable && pending && !renamed && missing > 0) {
      NS_LOG(kError) << "recovery: transaction number " << number << " of stream '"
                     << stream_->config().name << "' was committed, but " << missing
                     << " of its bytes were not on disk (an `async` stream after a power loss): "
                        "dropping all of it, so that it is not visible in part";
      lost.insert(number);
    }
  }
  return lost;
}

Status StreamTransactions::LoadPartsLocked(Txn& t, int64_t now_ms, uint64_t* short_by) {
  std::lock_guard<std::mutex> txn_lock(t.mu);
  auto it = live_files_.find(t.number);
  if (it != live_files_.end()) {
    for (uint32_t i : it->second) {
      auto part =
          std::make_unique<TxnPart>(stream_->streamlet(i), &stream_->config(), env_, t.number);
      RETURN_IF_ERROR(part->Recover(now_ms));
      t.bytes.fetch_add(part->bytes());
      t.chunks.fetch_add(part->chunks());
      t.parts[i] = std::move(part);
    }
  }
  t.streamlets.store(static_cast<uint32_t>(t.parts.size()));
  t.last_activity_ms.store(now_ms);  // the open timeout restarts with the broker
  *short_by = 0;
  for (const TxnLink& l : t.prepared_parts) {
    auto p = t.parts.find(l.streamlet);
    const uint64_t have = p == t.parts.end() ? 0 : p->second->bytes();
    if (have < l.bytes) *short_by += l.bytes - have;
  }
  return Status::Ok();
}

Status StreamTransactions::RecoverParts(int64_t now_ms, bool rewrite_log) {
  if (!durable_) return Status::Ok();
  MutexLock lock(&mu_);
  for (auto& [id, st] : ids_) {
    uint64_t short_by = 0;
    if (st.open != nullptr) RETURN_IF_ERROR(LoadPartsLocked(*st.open, now_ms, &short_by));
    std::vector<std::shared_ptr<Txn>> lost;
    for (auto& [serial, t] : st.prepared) {
      RETURN_IF_ERROR(LoadPartsLocked(*t, now_ms, &short_by));
      if (short_by > 0) {
        NS_LOG(kError) << "recovery: transaction " << serial << " of " << Quote(id)
                       << " was prepared, but " << short_by
                       << " of its bytes were not on disk (an `async` stream after a power "
                          "loss): aborting it, so that none of its records are ever visible";
        lost.push_back(t);
      }
    }
    for (const auto& t : lost) {
      std::lock_guard<std::mutex> txn_lock(t->mu);
      for (auto& [streamlet, part] : t->parts) part->Discard();
      t->parts.clear();
      t->phase = TxnPhase::kAborted;
      FinishLocked(st, t, false);
      totals_->aborted.fetch_add(1);
    }
  }
  live_files_.clear();
  if (log_ != nullptr && rewrite_log) RETURN_IF_ERROR(log_->Rewrite(StateRecordsLocked()));
  return Status::Ok();
}

void StreamTransactions::Forget() {
  MutexLock lock(&mu_);
  auto forget = [](const std::shared_ptr<Txn>& t) {
    std::lock_guard<std::mutex> txn_lock(t->mu);
    t->forgotten = true;
    t->parts.clear();  // the files stay
  };
  for (auto& [id, st] : ids_) {
    if (st.open != nullptr) forget(st.open);
    for (auto& [serial, t] : st.prepared) forget(t);
  }
  ids_.clear();
  live_files_.clear();
  totals_->files_awaiting_sync.fetch_sub(pending_renames_.size());
  pending_renames_.clear();
  log_.reset();
  {
    MutexLock stage(&stage_mu_);
    batch_ = MirrorBatch();
    // Dropped unsent: whatever a later send here (this broker leading the streamlet again)
    // confirms, it does not vouch for these.
    if (sent_ < staged_) dropped_.emplace_back(sent_ + 1, staged_);
    sent_ = staged_;
  }
  unpublished_.clear();
  published_.clear();
  mirror_pending_.store(false);
}

Result<std::vector<StreamTransactions::FilePiece>> StreamTransactions::FilesFrom(
    const std::map<std::string, uint64_t>& held, size_t max_part_bytes, bool* complete) {
  MutexLock lock(&mu_);
  *complete = true;
  std::vector<FilePiece> out;
  if (!durable_) return out;
  if (env_->Exists(dir_ + "/txn.log")) {
    // Whole: a compaction replaces it, so a prefix the follower holds proves nothing.
    ASSIGN_OR_RETURN(Bytes log, env_->ReadFile(dir_ + "/txn.log"));
    const uint64_t size = log.size();
    out.push_back({"txn.log", size, 0, std::move(log)});
  }
  size_t room = max_part_bytes;
  // A part only grows while it exists, and one leader never reuses its name (segment ids only
  // increase), so what the follower copied of it earlier is a prefix of it.
  auto add = [&](const Txn& t) {
    for (const auto& [streamlet, part] : t.parts) {
      part->ForEachFile([&](std::string name, const uint8_t* data, uint32_t size) {
        auto it = held.find(name);
        const uint64_t from = it == held.end() || it->second > size ? 0 : it->second;
        const size_t take = std::min<size_t>(size - from, room);
        room -= take;
        if (from + take < size) *complete = false;
        out.push_back({std::move(name), size, from, Bytes(data + from, data + from + take)});
      });
    }
  };
  for (const auto& [id, st] : ids_) {
    std::vector<std::shared_ptr<Txn>> live;
    if (st.open != nullptr) live.push_back(st.open);
    for (const auto& [serial, t] : st.prepared) live.push_back(t);
    for (const auto& t : live) {
      std::lock_guard<std::mutex> txn_lock(t->mu);
      add(*t);
    }
  }
  // A write staged before its part was read above is in this copy already: it goes to the
  // in-sync replicas now (the follower copying is not one yet), so that it cannot reach the
  // follower a second time once that joined them.
  RETURN_IF_ERROR(SendBatchLocked());
  return out;
}

}  // namespace nearstream::storage
