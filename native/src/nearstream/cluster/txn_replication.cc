// Replicated transactions (docs/cluster.md, "Replication"; docs/protocol.md, "Replicated
// transactions"): a replicated streamlet's transaction scope keeps its records (txn.log) and its
// transactions' parts in files of the streamlet's directory. The leader sends every write it
// makes to them to its in-sync followers (ReplicaTxn) before it acknowledges the request that
// made it, and a follower catching up copies them under the leader's seal (ReplicaTxnFiles).
// Followers only write the files; a promotion recovers the scope from them exactly as a restart
// does, so a new leader holds every transaction as last acknowledged.
#include <algorithm>
#include <set>

#include "nearstream/cluster/zk_cluster.h"
#include "nearstream/common/log.h"

namespace nearstream::cluster {

namespace {

// As long as a leader waits for a follower's ReplicaAppend answer (replication.cc).
constexpr int kReplicaTxnTimeoutMs = 10000;
// A catching-up follower's page of transaction files.
constexpr uint32_t kTxnFilesPageBytes = 8u << 20;

// Whether `name` is a file of a transaction scope: txn.log or a transaction part's file.
bool IsTxnFile(const std::string& name) {
  uint64_t txn = 0, segment = 0;
  return name == "txn.log" || storage::Streamlet::ParseTxnSegmentName(name, &txn, &segment);
}

std::string StreamletText(const std::string& name, uint32_t id) {
  return "streamlet " + std::to_string(id) + " of stream '" + name + "'";
}

// Writes `requests` over `link`, connecting first when needed, without awaiting their
// answers; returns the first one's id. A connection that failed is dropped so that the next call
// connects again.
Result<uint64_t> SendTxnWrites(ZkCluster::ReplicaLink& link, const std::string& address,
                               const std::vector<net::ReplicaTxnRequest>& requests) {
  std::optional<net::Client>& client = link.client;
  if (!client.has_value() || !client->ok()) {
    client.reset();
    Result<net::Client> connected = net::Client::Connect(address, kReplicaTxnTimeoutMs);
    if (!connected.ok()) return connected.status();
    connected->set_io_timeout_ms(kReplicaTxnTimeoutMs);
    client.emplace(std::move(*connected));
    ++link.connection;
  }
  Result<uint64_t> first = client->SendReplicaTxns(requests.data(), requests.size());
  if (!client->ok()) client.reset();
  return first;
}

}  // namespace

// One Send's writes on their way to the followers (TxnMirror::Send): the links stay locked,
// in follower order, until Finish has read their answers.
struct ZkCluster::TxnWritesSent : storage::TxnMirror::Sent {
  struct Target {
    uint32_t follower = 0;
    std::string address;  // empty: not registered now
    std::shared_ptr<ReplicaLink> link;
    Status sent;  // the send's outcome, then the answers'
    uint64_t first_id = 0;
  };
  std::string name;
  uint32_t id = 0;
  uint64_t epoch = 0;
  Status refused;  // nothing was sent: Finish returns it
  size_t count = 0;
  std::vector<Target> targets;
  std::vector<std::unique_lock<std::mutex>> held;
};

Status ZkCluster::Mirror(const std::string& name, uint32_t id,
                         const std::vector<storage::TxnFileOp>& ops) {
  return Finish(Send(name, id, ops));
}

std::unique_ptr<storage::TxnMirror::Sent> ZkCluster::Send(
    const std::string& name, uint32_t id, const std::vector<storage::TxnFileOp>& ops) {
  auto out = std::make_unique<TxnWritesSent>();
  out->name = name;
  out->id = id;
  std::vector<uint32_t> unconfirmed;
  {
    MutexLock lock(&mu_);
    auto it = streams_.find(name);
    if (it == streams_.end() || id >= it->second.replicas.size()) {
      out->refused = Status::StreamNotFound("stream '" + name + "' does not exist");
      return out;
    }
    const StreamRecord& record = it->second;
    if (record.owners[id] != options_.broker_id) {
      out->refused = NotHere(name, id, record.owners[id], brokers_);
      return out;
    }
    out->epoch = record.replicas[id].leader_epoch;
    if (auto u = txn_unconfirmed_.find({name, id}); u != txn_unconfirmed_.end()) {
      unconfirmed = u->second;
    }
    for (uint32_t f : record.replicas[id].isr) {
      if (f == options_.broker_id || ops.empty() ||
          std::find(unconfirmed.begin(), unconfirmed.end(), f) != unconfirmed.end()) {
        continue;
      }
      std::shared_ptr<ReplicaLink>& link = links_[{name, id, f}];
      if (link == nullptr) link = std::make_shared<ReplicaLink>();
      auto b = std::find_if(brokers_.begin(), brokers_.end(),
                            [f](const BrokerRecord& r) { return r.id == f; });
      out->targets.push_back({f, b == brokers_.end() ? std::string() : b->address, link, {}, 0});
    }
  }
  if (!unconfirmed.empty()) {
    // An earlier write did not reach these followers: they leave the in-sync set before
    // anything of the scope is acknowledged again.
    if (Status shrunk = ShrinkIsr(name, id, out->epoch, unconfirmed); !shrunk.ok()) {
      out->refused = shrunk;
      out->targets.clear();
      return out;
    }
    MutexLock lock(&mu_);
    txn_unconfirmed_.erase({name, id});
  }
  std::vector<net::ReplicaTxnRequest> requests;
  for (const storage::TxnFileOp& op : ops) {
    net::ReplicaTxnRequest r;
    r.stream = name;
    r.streamlet = id;
    r.leader = options_.broker_id;
    r.leader_epoch = out->epoch;
    r.op = static_cast<net::ReplicaTxnOp>(op.kind);
    r.file = op.name;
    r.offset = op.offset;
    r.to = op.to;
    r.data = op.data;
    r.data_size = op.size;
    requests.push_back(std::move(r));
  }
  out->count = requests.size();
  // Every write goes to every follower before any answer is awaited: the followers write at the
  // same time, and a commit's renames cost one round trip, not one each (a follower applies
  // them in order; one that refuses a write leaves the set and copies the files again). The
  // links are locked in follower order until their answers are in (Finish).
  std::sort(out->targets.begin(), out->targets.end(),
            [](const TxnWritesSent::Target& x, const TxnWritesSent::Target& y) {
              return x.follower < y.follower;
            });
  out->held.reserve(out->targets.size());
  for (const TxnWritesSent::Target& t : out->targets) out->held.emplace_back(t.link->mu);
  for (TxnWritesSent::Target& t : out->targets) {
    if (t.address.empty()) {
      t.sent =
          Status::BrokerUnavailable("broker " + std::to_string(t.follower) + " is not registered");
      continue;
    }
    Result<uint64_t> first = SendTxnWrites(*t.link, t.address, requests);
    if (first.ok()) {
      t.first_id = *first;
    } else {
      t.sent = first.status();
    }
  }
  return out;
}

Status ZkCluster::Finish(std::unique_ptr<storage::TxnMirror::Sent> sent) {
  auto* writes = static_cast<TxnWritesSent*>(sent.get());
  if (!writes->refused.ok()) return writes->refused;
  for (TxnWritesSent::Target& t : writes->targets) {
    if (!t.sent.ok()) continue;
    std::optional<net::Client>& client = t.link->client;
    t.sent = client->AwaitAnswers(net::Opcode::kReplicaTxn, t.first_id, writes->count);
    if (!client->ok()) client.reset();
  }
  writes->held.clear();  // the links are free again
  const std::string& name = writes->name;
  const uint32_t id = writes->id;
  std::vector<uint32_t> failed;
  for (const TxnWritesSent::Target& t : writes->targets) {
    if (t.sent.ok()) continue;
    if (t.sent.IsNotOwner()) {
      // Another broker leads now, or the follower is no replica any more: ShrinkIsr asks
      // ZooKeeper which (see AwaitReplicas).
      NS_LOG(kInfo) << "broker " << t.follower << " refused a transaction write of "
                    << StreamletText(name, id) << ": " << t.sent.ToString();
    } else {
      NS_LOG(kWarning) << "copying a transaction write of " << StreamletText(name, id)
                       << " to broker " << t.follower << " failed: " << t.sent.ToString()
                       << "; it leaves the in-sync set";
    }
    failed.push_back(t.follower);
  }
  if (failed.empty()) return Status::Ok();
  Status shrunk = ShrinkIsr(name, id, writes->epoch, failed);
  if (!shrunk.ok()) {
    MutexLock lock(&mu_);
    txn_unconfirmed_[{name, id}] = failed;
  }
  return shrunk;
}

Status ZkCluster::AcceptReplicaTxn(const net::ReplicaTxnRequest& m) {
  uint64_t group = 0, segment = 0;
  if (!IsTxnFile(m.file) || (m.op == net::ReplicaTxnOp::kRename &&
                             !storage::Streamlet::ParseGroupSegmentName(m.to, &group, &segment))) {
    return Status::InvalidArgument("'" + m.file + "' (to '" + m.to +
                                   "') is not a transaction file of a streamlet");
  }
  ASSIGN_OR_RETURN(FollowerTarget target,
                   FollowerWriteTarget(m.stream, m.streamlet, m.leader_epoch));
  std::lock_guard<std::mutex> lock(target.copy->mu);
  RETURN_IF_ERROR(CheckFollowerWrite(m.stream, m.streamlet, m.leader, m.leader_epoch));
  const std::string& dir = target.streamlet->dir();
  const std::string path = dir + "/" + m.file;
  const bool sync = target.stream->config().durability == storage::Durability::kSync;
  Status written = WriteTxnFile(m, dir, path, sync, *target.copy);
  if (!written.ok()) {
    // The leader pipelines a request's writes: the ones after a failed write must not land on
    // a copy that missed it (a commit's renames after its COMMIT record failed). This copy
    // takes nothing more until it copied the streamlet again.
    target.copy->txn_file.reset();  // its end is unknown now
    target.copy->txn_file_name.clear();
    MutexLock cache(&mu_);
    rebuilding_.insert({m.stream, m.streamlet});
  }
  return written;
}

Status ZkCluster::WriteTxnFile(const net::ReplicaTxnRequest& m, const std::string& dir,
                               const std::string& path, bool sync, FollowerCopy& copy) const {
  storage::Env* env = storage::Env::Default();
  // Any write but an append to it, or a failed one, closes the part file kept open.
  if (m.op != net::ReplicaTxnOp::kAppend || copy.txn_file_name != m.file) {
    copy.txn_file.reset();
    copy.txn_file_name.clear();
  }
  switch (m.op) {
    case net::ReplicaTxnOp::kAppend: {
      if (copy.txn_file == nullptr) {
        ASSIGN_OR_RETURN(copy.txn_file, env->OpenAppendable(path));
        copy.txn_file_name = m.file;
      }
      storage::WritableFile* file = copy.txn_file.get();
      if (file->size() != m.offset) {
        return Status::PositionOutOfRange(
            "broker " + std::to_string(options_.broker_id) + "'s copy of " + m.file + " of " +
            StreamletText(m.stream, m.streamlet) + " has " + std::to_string(file->size()) +
            " bytes; the write is at " + std::to_string(m.offset));
      }
      RETURN_IF_ERROR(file->Append(m.data, m.data_size));
      if (sync) {
        RETURN_IF_ERROR(file->Sync());
        if (m.offset == 0) RETURN_IF_ERROR(env->SyncDir(dir));  // a new file's name too
      }
      return Status::Ok();
    }
    case net::ReplicaTxnOp::kReplace:
      return env->WriteFileAtomically(path, Bytes(m.data, m.data + m.data_size));
    case net::ReplicaTxnOp::kRename: {
      if (!env->Exists(path)) {
        return Status::PositionOutOfRange("broker " + std::to_string(options_.broker_id) +
                                          "'s copy of " + StreamletText(m.stream, m.streamlet) +
                                          " has no " + m.file + " to commit");
      }
      // As the leader: a file takes its group's name only once the COMMIT record is durable
      // (recovery reads a renamed file as part of its group).
      ASSIGN_OR_RETURN(std::unique_ptr<storage::WritableFile> log,
                       env->OpenAppendable(dir + "/txn.log"));
      RETURN_IF_ERROR(log->Sync());
      RETURN_IF_ERROR(env->Rename(path, dir + "/" + m.to));
      return sync ? env->SyncDir(dir) : Status::Ok();
    }
    case net::ReplicaTxnOp::kDelete:
      return env->Exists(path) ? env->RemoveFile(path) : Status::Ok();
  }
  return Status::InvalidArgument("unknown ReplicaTxn op");
}

Result<net::ReplicaTxnFilesResponse> ZkCluster::TxnFiles(const net::ReplicaTxnFilesRequest& m,
                                                         size_t max_bytes) {
  std::shared_ptr<storage::Stream> stream = store_->Find(m.stream);
  storage::Streamlet* s = stream == nullptr ? nullptr : stream->streamlet(m.streamlet);
  if (s == nullptr) return Status::StreamNotFound("stream '" + m.stream + "' does not exist");
  storage::StreamTransactions* scope = stream->transactions_of(m.streamlet);
  if (scope == nullptr) {
    return Status::InvalidArgument("stream '" + m.stream +
                                   "' is not replicated: its transactions are its brokers' own");
  }
  RETURN_IF_ERROR(CheckLeaderFor({m.stream, m.streamlet, m.follower}).status());
  std::map<std::string, uint64_t> held;
  for (const net::ReplicaTxnHeld& h : m.held) held[h.name] = h.have;
  // Half the frame for the parts' bytes leaves the rest to txn.log and the names.
  net::ReplicaTxnFilesResponse r;
  ASSIGN_OR_RETURN(
      std::vector<storage::StreamTransactions::FilePiece> pieces,
      scope->FilesFrom(held, std::min<size_t>(m.max_bytes, max_bytes / 2), &r.complete));
  size_t total = 0;
  for (storage::StreamTransactions::FilePiece& p : pieces) {
    total += p.name.size() + p.data.size() + 22;
    r.files.push_back({std::move(p.name), p.size, p.offset, std::move(p.data)});
  }
  if (total > max_bytes) {
    return Status::StorageError("the transaction files of " + StreamletText(m.stream, m.streamlet) +
                                " need " + std::to_string(total) +
                                " bytes in one answer, more than a frame carries (" +
                                std::to_string(max_bytes) + ")");
  }
  return r;
}

Status ZkCluster::CopyTxnFiles(net::Client& leader, const std::string& name, uint32_t id,
                               storage::Streamlet& s, const storage::Position* sealed_tail,
                               TxnFilesCopy* copy) {
  storage::Env* env = storage::Env::Default();
  const std::string& dir = s.dir();
  auto path_of = [&dir](const std::string& file) { return std::string(dir).append("/" + file); };
  if (!copy->started) {
    // The copy's own transaction files go first: only the leader's count.
    ASSIGN_OR_RETURN(std::vector<std::string> present, env->ListDir(dir));
    for (const std::string& file : present) {
      if (IsTxnFile(file)) RETURN_IF_ERROR(env->RemoveFile(path_of(file)));
    }
    copy->started = true;
  }
  // Unsealed, the leader's files still change: copy about as much as its first answer lists
  // (the rest comes under the seal). Sealed, copy to the end.
  uint64_t to_copy = UINT64_MAX;
  uint64_t copied = 0;
  while (true) {
    net::ReplicaTxnFilesRequest request{name, id, options_.broker_id, kTxnFilesPageBytes, {}};
    for (const auto& [file, have] : copy->held) {
      if (file != "txn.log") request.held.push_back({file, have});
    }
    ASSIGN_OR_RETURN(net::ReplicaTxnFilesResponse page, leader.ReplicaTxnFiles(request));
    std::set<std::string> listed;
    uint64_t left = 0;
    uint64_t part_bytes = 0;
    for (const net::ReplicaTxnFile& f : page.files) {
      if (!IsTxnFile(f.name) || (f.name == "txn.log" && f.offset != 0)) {
        return Status::Internal("the leader of " + StreamletText(name, id) + " sent '" + f.name +
                                "' from offset " + std::to_string(f.offset) +
                                ", not a transaction file's piece");
      }
      listed.insert(f.name);
      left += f.size - f.offset;
      if (f.name == "txn.log") {
        RETURN_IF_ERROR(env->WriteFileAtomically(path_of(f.name), f.data));
      } else {
        ASSIGN_OR_RETURN(std::unique_ptr<storage::WritableFile> file,
                         env->OpenAppendable(path_of(f.name)));
        if (f.offset == 0 && file->size() > 0) RETURN_IF_ERROR(file->Truncate(0));
        if (file->size() != f.offset) {
          return Status::Internal("the copy of " + f.name + " holds " +
                                  std::to_string(file->size()) + " bytes; the leader sent from " +
                                  std::to_string(f.offset));
        }
        RETURN_IF_ERROR(file->Append(f.data.data(), f.data.size()));
        RETURN_IF_ERROR(file->Sync());
      }
      copy->held[f.name] = f.offset + f.data.size();
      copied += f.data.size();
      copy->bytes += f.data.size();
      if (f.name != "txn.log") part_bytes += f.data.size();
    }
    if (!page.complete && part_bytes == 0) {
      // A leader whose frames leave no room for part bytes (a tiny --max-frame-bytes).
      return Status::StorageError("the leader of " + StreamletText(name, id) +
                                  " answers pages of its transaction files without their bytes");
    }
    if (to_copy == UINT64_MAX) to_copy = left;
    if (page.complete && sealed_tail != nullptr) {
      // The scope's whole state: what the leader no longer lists (committed, aborted) goes.
      for (auto it = copy->held.begin(); it != copy->held.end();) {
        if (listed.contains(it->first)) {
          ++it;
          continue;
        }
        RETURN_IF_ERROR(env->RemoveFile(path_of(it->first)));
        it = copy->held.erase(it);
      }
      break;
    }
    if (sealed_tail == nullptr && (page.complete || copied >= to_copy)) break;
    if (sealed_tail != nullptr) {
      // Another page under the seal: renewed first, and still at the copy's end (a seal that
      // lapsed let requests change the files since the last page).
      ASSIGN_OR_RETURN(net::SealStreamletResponse renewed,
                       leader.SealStreamlet({name, id, kMoveSealMs}));
      if (!(renewed.tail == *sealed_tail)) {
        return Status::Internal("the seal of " + StreamletText(name, id) +
                                " lapsed while its transaction files were copied");
      }
    }
  }
  RETURN_IF_ERROR(env->SyncDir(dir));
  if (sealed_tail != nullptr) {
    catch_up_copied_bytes_.fetch_add(copy->bytes, std::memory_order_relaxed);
    if (copy->bytes > 0) {
      NS_LOG(kInfo) << "copied " << copy->held.size() << " transaction files (" << copy->bytes
                    << " bytes) of " << StreamletText(name, id) << " from its leader";
    }
  }
  return Status::Ok();
}

}  // namespace nearstream::cluster
