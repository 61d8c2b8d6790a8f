// A follower catching up (docs/cluster.md, "Replication"): a replica that is not in its
// streamlet's in-sync set (it failed a copy, it was down, it was the leader before a failover,
// or it just restarted) makes a new copy of the whole streamlet from the leader, as a move's
// target does (most of it while the leader takes appends, the rest while it is sealed), and
// joins the in-sync set with ReplicaJoin while the seal holds, so no chunk is acknowledged
// between the end of its copy and its first ReplicaAppend. Its old files go first: a copy that
// may hold chunks nobody acknowledged (a deposed leader's) or miss some (a restart) is never
// patched, only replaced.
#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "nearstream/cluster/leader_epochs.h"
#include "nearstream/cluster/zk_cluster.h"
#include "nearstream/common/clock.h"
#include "nearstream/common/log.h"

namespace nearstream::cluster {

namespace {

// How long the catch-up thread waits between looks for streamlets out of sync, and after a
// failed catch-up before that streamlet is tried again.
constexpr int64_t kCatchUpPollMs = 500;
constexpr int64_t kCatchUpRetryMs = 2000;
// How often followers drop what their leaders' retention dropped (TrimFollowerCopies).
constexpr int64_t kTrimIntervalMs = 1000;

bool Contains(const std::vector<uint32_t>& ids, uint32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

void ZkCluster::CatchUpLoop() {
  std::map<std::pair<std::string, uint32_t>, int64_t> retry_at;
  std::map<std::pair<std::string, uint32_t>, int64_t> handover_retry_at;
  int64_t trim_at = MonotonicNowMs() + kTrimIntervalMs;
  while (true) {
    if (MonotonicNowMs() >= trim_at) {
      TrimFollowerCopies();
      trim_at = MonotonicNowMs() + kTrimIntervalMs;
    }
    HandOverFailedLeaderships(&handover_retry_at);
    std::vector<std::pair<std::string, uint32_t>> due;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      const int64_t now = MonotonicNowMs();
      for (const auto& [name, record] : streams_) {
        if (record.config.replication < 2) continue;
        for (uint32_t i = 0; i < record.owners.size(); ++i) {
          // A replica move brings its own copy here.
          if (!record.Follows(i, options_.broker_id) || moving_in_.contains({name, i})) continue;
          const bool in_sync = Contains(record.replicas[i].isr, options_.broker_id) &&
                               !rebuilding_.contains({name, i});
          const uint32_t leader = record.owners[i];
          const bool leader_up =
              std::any_of(brokers_.begin(), brokers_.end(),
                          [leader](const BrokerRecord& b) { return b.id == leader; });
          auto it = retry_at.find({name, i});
          if (!in_sync && leader_up && connected_ && (it == retry_at.end() || it->second <= now)) {
            due.emplace_back(name, i);
          }
        }
      }
      if (due.empty()) {
        changed_.WaitFor(&mu_, std::chrono::milliseconds(kCatchUpPollMs));
        continue;
      }
    }
    for (const auto& [name, id] : due) {
      {
        MutexLock lock(&mu_);
        if (stopping_) return;
      }
      Status caught_up = CatchUp(name, id);
      if (caught_up.ok()) {
        retry_at.erase({name, id});
        continue;
      }
      NS_LOG(kWarning) << "catching up streamlet " << id << " of stream " << name
                       << " failed (retrying): " << caught_up.ToString();
      retry_at[{name, id}] = MonotonicNowMs() + kCatchUpRetryMs;
    }
  }
}

Status ZkCluster::LeaveIsr(const std::string& name, uint32_t id) {
  while (true) {
    ASSIGN_OR_RETURN(std::optional<StreamRecord> read, FetchStream(name, /*watch=*/false));
    if (!read.has_value()) return Status::StreamNotFound("stream '" + name + "' was deleted");
    StreamRecord record = std::move(*read);
    if (id >= record.replicas.size()) return Status::StreamletNotFound("no such streamlet");
    std::vector<uint32_t>& isr = record.replicas[id].isr;
    if (record.owners[id] == options_.broker_id) {
      return Status::InvalidArgument("broker " + std::to_string(options_.broker_id) + " leads it");
    }
    if (!Contains(isr, options_.broker_id)) return Status::Ok();
    // Shrinking the set is always safe: the leader copies to at least the brokers ZooKeeper
    // names, so every acknowledged chunk is on every member that stays.
    isr.erase(std::remove(isr.begin(), isr.end(), options_.broker_id), isr.end());
    bool stale = false;
    RETURN_IF_ERROR(SetStreamNode(name, record, /*fenced=*/false, &stale));
    if (stale) continue;
    NS_LOG(kInfo) << "broker " << options_.broker_id << " left the in-sync set of streamlet " << id
                  << " of stream " << name << " to copy it again";
    record.version += 1;
    // Through Install: the node read may also carry another streamlet's new leader.
    Install(name, std::move(record));
    return Status::Ok();
  }
}

Status ZkCluster::ClaimLeadersIsr() {
  std::vector<std::pair<std::string, uint32_t>> led;
  {
    MutexLock lock(&mu_);
    for (const auto& [name, record] : streams_) {
      if (record.config.replication < 2) continue;
      for (uint32_t i = 0; i < record.owners.size(); ++i) {
        if (record.owners[i] == options_.broker_id) led.emplace_back(name, i);
      }
    }
  }
  for (const auto& [name, id] : led) {
    while (true) {
      ASSIGN_OR_RETURN(std::optional<StreamRecord> read, FetchStream(name, /*watch=*/false));
      if (!read.has_value()) break;
      StreamRecord record = std::move(*read);
      if (id >= record.owners.size() || record.owners[id] != options_.broker_id) break;
      net::ReplicaSet& set = record.replicas[id];
      set.isr = {options_.broker_id};
      // A new epoch too: the files loaded may have lost chunks the followers hold (a crash under
      // `async`), and groups opened from now on may reuse those groups' ids; the epoch history
      // tells the followers to drop them.
      set.leader_epoch += 1;
      bool stale = false;
      RETURN_IF_ERROR(SetStreamNode(name, record, /*fenced=*/false, &stale));
      if (stale) continue;
      if (std::shared_ptr<storage::Stream> stream = store_->Find(name)) {
        if (storage::Streamlet* s = stream->streamlet(id)) {
          StartLeaderEpoch(name, id, *s, set.leader_epoch);
        }
      }
      NS_LOG(kInfo) << "broker " << options_.broker_id << " leads streamlet " << id << " of stream "
                    << name << " again after a restart, at epoch " << set.leader_epoch
                    << "; its followers catch up again";
      record.version += 1;
      Install(name, std::move(record));
      break;
    }
  }
  return Status::Ok();
}

void ZkCluster::RemoveCopy(const std::string& dir) {
  storage::Env* env = storage::Env::Default();
  Result<std::vector<std::string>> files = env->ListDir(dir);
  if (!files.ok()) return;  // no directory: nothing to remove
  for (const std::string& file : *files) {
    uint64_t group = 0, segment = 0;
    if (!storage::Streamlet::ParseGroupSegmentName(file, &group, &segment) &&
        !storage::Streamlet::ParseTxnSegmentName(file, &group, &segment) &&
        file != kLeaderEpochsFile && file != "txn.log") {
      continue;
    }
    std::string path = dir;
    path.append("/").append(file);
    Status removed = env->RemoveFile(path);
    if (!removed.ok()) NS_LOG(kWarning) << "removing " << file << ": " << removed.ToString();
  }
}

Status ZkCluster::CatchUp(const std::string& name, uint32_t id) {
  RETURN_IF_ERROR(LeaveIsr(name, id));
  {
    MutexLock lock(&mu_);
    rebuilding_.erase({name, id});  // out of the set: the leader sends nothing until the join
  }
  ASSIGN_OR_RETURN(LeaderCopy copy, CopyFromLeader(name, id));
  Bytes body;
  ByteWriter w(&body);
  net::EncodeReplicaJoinRequest(w, {name, id, options_.broker_id, copy.epoch, copy.tail});
  Status joined = copy.client->Call(net::Opcode::kReplicaJoin, body).status();
  if (!joined.ok()) {
    LiftSeal(copy, name, id);
    return Status(joined.code(), copy.at + ": " + std::string(joined.message()));
  }
  // Learn of the join now rather than at the watch: the leader's next chunk is checked against
  // this broker's view of the in-sync set.
  // (Failing that, the follower reads the node at the leader's next chunk.)
  if (Result<bool> read = ReadStream(name); !read.ok()) {
    NS_LOG(kWarning) << "reading stream " << name
                     << " after the join: " << read.status().ToString();
  }
  NS_LOG(kInfo) << "broker " << options_.broker_id << " is in sync for streamlet " << id
                << " of stream " << name << " again (tail " << copy.tail.ToString() << ")";
  return Status::Ok();
}

Result<ZkCluster::LeaderCopy> ZkCluster::CopyFromLeader(const std::string& name, uint32_t id) {
  LeaderCopy copy;
  std::string address;
  {
    MutexLock lock(&mu_);
    auto it = streams_.find(name);
    if (it == streams_.end() || id >= it->second.owners.size()) {
      return Status::StreamNotFound("stream '" + name + "' does not exist");
    }
    copy.leader = it->second.owners[id];
    copy.epoch = it->second.replicas[id].leader_epoch;
    for (const BrokerRecord& b : brokers_) {
      if (b.id == copy.leader) address = b.address;
    }
  }
  if (address.empty()) return Status::BrokerUnavailable("the leader is not registered");
  std::shared_ptr<storage::Stream> stream = store_->Find(name);
  storage::Streamlet* s = stream == nullptr ? nullptr : stream->streamlet(id);
  if (s == nullptr) return Status::StreamNotFound("no local copy of stream '" + name + "'");
  copy.at = "broker " + std::to_string(copy.leader) + " at " + address;
  Result<net::Client> client = net::Client::Connect(address);
  if (!client.ok()) {
    return Status(client.status().code(), copy.at + ": " + std::string(client.status().message()));
  }
  copy.client.emplace(std::move(*client));
  storage::Position from;  // all-zero: the whole streamlet
  bool kept_some = false;
  {
    // What of the old copy cannot be proved equal to the leader's goes (all of it without an
    // epoch history); a ReplicaAppend cannot come in between (this broker is not in sync).
    std::shared_ptr<FollowerCopy> follower;
    {
      MutexLock lock(&mu_);
      std::shared_ptr<FollowerCopy>& c = copies_[{name, id}];
      if (c == nullptr) c = std::make_shared<FollowerCopy>();
      follower = c;
    }
    std::lock_guard<std::mutex> lock(follower->mu);
    follower->Close();
    follower->ResetMirror(*s);  // its readers wait for a whole view after the join
    s->SetMirror(false);
    s->Reopen();
    Result<storage::Position> kept =
        options_.whole_catch_up
            ? Result<storage::Position>(Status::InvalidArgument("--catch-up whole"))
            : KeepWhatMatches(*copy.client, name, id, *s, copy.epoch);
    if (kept.ok()) {
      from = *kept;
      kept_some = true;
    } else {
      NS_LOG(kInfo) << "streamlet " << id << " of stream " << name
                    << " is copied whole: " << kept.status().ToString();
      RemoveCopy(s->dir());
    }
  }
  NS_LOG(kInfo) << "copying streamlet " << id << " of stream " << name << " from its leader, "
                << copy.at << " (epoch " << copy.epoch << ") from " << from.ToString();
  // The transaction scope's files first, while the leader takes requests: most of the bytes of
  // its open transactions' parts, so that the seal covers little of them.
  TxnFilesCopy txn_files;
  const bool scoped = stream->transactions_of(id) != nullptr;
  Status copied =
      scoped ? CopyTxnFiles(*copy.client, name, id, *s, nullptr, &txn_files) : Status::Ok();
  if (!copied.ok()) return Status(copied.code(), copy.at + ": " + std::string(copied.message()));
  uint64_t bytes = 0;
  copied = CopyStreamlet(*copy.client, name, id, *s, &copy.tail, /*load=*/false, from, &bytes);
  catch_up_copied_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  if (copied.ok()) copied = MatchSealedLeader(*copy.client, name, id, *s);
  // Under the seal, which holds off the scope's transaction requests too: the rest of its files.
  if (copied.ok() && scoped) {
    copied = CopyTxnFiles(*copy.client, name, id, *s, &copy.tail, &txn_files);
  }
  if (!copied.ok() && kept_some &&
      (copied.IsPositionOutOfRange() || copied.code() == StatusCode::kInternal)) {
    // What was kept does not continue the leader's copy (a position the leader does not know,
    // a gap, a segment shorter than the sealed leader's): the next try copies the whole
    // streamlet.
    RemoveCopy(s->dir());
  }
  if (!copied.ok()) {
    LiftSeal(copy, name, id);
    return Status(copied.code(), copy.at + ": " + std::string(copied.message()));
  }
  return copy;
}

void ZkCluster::LiftSeal(LeaderCopy& copy, const std::string& name, uint32_t id) {
  // The leader's seal would lift itself; lift it now so its appends wait no longer.
  Result<net::SealStreamletResponse> lifted = copy.client->SealStreamlet({name, id, 0});
  if (!lifted.ok()) {
    NS_LOG(kWarning) << "lifting the seal of streamlet " << id << " of stream " << name << " on "
                     << copy.at
                     << " failed; it lifts itself when it runs out: " << lifted.status().ToString();
  }
}

Status ZkCluster::JoinIsr(const net::ReplicaJoinRequest& m) {
  const std::string what =
      "streamlet " + std::to_string(m.streamlet) + " of stream '" + m.stream + "'";
  std::shared_ptr<storage::Stream> stream = store_->Find(m.stream);
  storage::Streamlet* s = stream == nullptr ? nullptr : stream->streamlet(m.streamlet);
  if (s == nullptr) return Status::StreamNotFound("stream '" + m.stream + "' does not exist");
  while (true) {
    ASSIGN_OR_RETURN(std::optional<StreamRecord> read, FetchStream(m.stream, /*watch=*/false));
    if (!read.has_value()) return Status::StreamNotFound("stream '" + m.stream + "' was deleted");
    StreamRecord record = std::move(*read);
    if (m.streamlet >= record.replicas.size()) return Status::StreamletNotFound(what);
    if (record.owners[m.streamlet] != options_.broker_id ||
        record.replicas[m.streamlet].leader_epoch != m.leader_epoch) {
      return Status::NotOwner("broker " + std::to_string(options_.broker_id) + " does not lead " +
                              what + " at epoch " + std::to_string(m.leader_epoch));
    }
    if (!record.Follows(m.streamlet, m.follower)) {
      return Status::InvalidArgument("broker " + std::to_string(m.follower) +
                                     " is not a replica of " + what);
    }
    // Sealed with that tail: no chunk was acknowledged after the copy's end, and none is until
    // the seal lifts, after the follower is in the set.
    if (!s->sealed() || !(s->tail() == m.tail)) {
      return Status::PositionOutOfRange("the copy of " + what + " ends at " + m.tail.ToString() +
                                        "; the leader's tail is " + s->tail().ToString() +
                                        (s->sealed() ? "" : " and it is not sealed"));
    }
    if (m.take_over != net::ReplicaJoinRequest::TakeOver::kNo) {
      // A replica move hands the leadership over (docs/protocol.md, "Moving a replica"). Here,
      // on the thread that answers every ReplicaJoin, while sealed at the copy's end: no other
      // catch-up can lift the seal in between, so the new leader holds every chunk this broker
      // acknowledged. Alone in the in-sync set, as after a failover; this broker stays sealed
      // (Install gives the streamlet up) and acknowledges nothing more.
      net::ReplicaSet& set = record.replicas[m.streamlet];
      record.owners[m.streamlet] = m.follower;
      set.leader_epoch += 1;
      set.isr = {m.follower};
      if (m.take_over == net::ReplicaJoinRequest::TakeOver::kLeaderLeaves) {
        set.replicas.erase(
            std::remove(set.replicas.begin(), set.replicas.end(), options_.broker_id),
            set.replicas.end());
      }
      bool stale = false;
      RETURN_IF_ERROR(SetStreamNode(m.stream, record, /*fenced=*/false, &stale));
      if (stale) continue;
      record.version += 1;
      const uint64_t epoch = set.leader_epoch;
      Install(m.stream, std::move(record));
      NS_LOG(kInfo) << "broker " << m.follower << " leads " << what << " at epoch " << epoch
                    << " in place of broker " << options_.broker_id;
      return Status::Ok();
    }
    std::vector<uint32_t>& isr = record.replicas[m.streamlet].isr;
    if (!Contains(isr, m.follower)) {
      isr.push_back(m.follower);
      bool stale = false;
      RETURN_IF_ERROR(SetStreamNode(m.stream, record, /*fenced=*/false, &stale));
      if (stale) continue;
      record.version += 1;
    }
    // Before the seal lifts: the next chunk goes to the follower too. Through Install: the node
    // read may also carry another streamlet's new leader.
    Install(m.stream, std::move(record));
    NS_LOG(kInfo) << "broker " << m.follower << " joined the in-sync set of " << what;
    RETURN_IF_ERROR(Seal(*stream, m.streamlet, *s, 0).status());  // lifts it
    return Status::Ok();
  }
}

}  // namespace nearstream::cluster
