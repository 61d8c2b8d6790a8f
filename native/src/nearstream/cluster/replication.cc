// Replication of streamlets (docs/cluster.md, "Replication"): synchronous primary-backup per
// streamlet. The leader (the streamlet's owner) writes a chunk, sends it to every other member
// of the in-sync set, and publishes and acknowledges it only once each holds it or has left the
// set in ZooKeeper. Followers keep their copy as segment files of the leader's group and segment
// ids at the leader's offsets, the layout a move copies and recovery loads, so a follower that
// becomes leader loads its files and every position stays valid. Leadership and the in-sync set
// live in the stream's node with a leader epoch per streamlet; every change is a
// compare-and-set of that node.
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <functional>

#include "nearstream/cluster/zk_cluster.h"
#include "nearstream/cluster/zk_status.h"
#include "nearstream/common/clock.h"
#include "nearstream/common/log.h"
#include "nearstream/storage/chunk.h"

namespace nearstream::cluster {

namespace {

std::string StreamletName(const std::string& name, uint32_t id) {
  return "streamlet " + std::to_string(id) + " of stream '" + name + "'";
}

std::string FormatIds(const std::vector<uint32_t>& ids) {
  std::string text = "{";
  for (size_t i = 0; i < ids.size(); ++i) text += (i > 0 ? ", " : "") + std::to_string(ids[i]);
  return text + "}";
}

// Sends `requests` over `link` in one gathered write, connecting first when needed (unless
// `may_connect` is false: requests of an earlier flight went out on a connection that failed
// since, and later ones must not overtake them on a new one); a connection that failed is
// dropped so that the next batch connects again. Returns the first request's id.
Result<uint64_t> SendOnLink(ZkCluster::ReplicaPipeline::FollowerLink& link,
                            const std::string& address, bool may_connect,
                            const std::vector<net::ReplicaAppendRequest>& requests) {
  std::optional<net::Client>& client = link.client;
  // A connection idle while its follower restarted would lose the next requests: the first
  // after the restart would time out and take the follower out of the in-sync set.
  if (!client.has_value() || !client->ok() || (may_connect && client->ClosedWhileIdle())) {
    client.reset();
    if (!may_connect) {
      return Status::IoError("the connection to " + address +
                             " failed with earlier chunks unanswered");
    }
    Result<net::Client> connected = net::Client::Connect(address, kReplicaTimeoutMs);
    if (!connected.ok()) return connected.status();
    connected->set_io_timeout_ms(kReplicaTimeoutMs);
    client.emplace(std::move(*connected));
    ++link.connection;
  }
  Result<uint64_t> first = client->SendReplicaAppends(requests.data(), requests.size());
  if (!client->ok()) client.reset();
  return first;
}

}  // namespace

void ZkCluster::SendReplicas(ReplicaPipeline* pipe, const std::vector<ReplicaBatch>& batches) {
  // One send per (batch, follower); every send is written before any answer is awaited, so the
  // followers of all the batches' streamlets write at the same time.
  using Send = ReplicaPipeline::Send;
  ReplicaPipeline::Flight flight;
  flight.out.resize(batches.size());
  flight.epochs.resize(batches.size(), 0);
  std::vector<std::string> addresses;  // per send; empty: not registered now
  {
    MutexLock lock(&mu_);
    for (size_t n = 0; n < batches.size(); ++n) {
      const ReplicaBatch& batch = batches[n];
      auto it = streams_.find(batch.name);
      if (it == streams_.end() || batch.id >= it->second.replicas.size()) {
        flight.out[n] = Status::StreamNotFound("stream '" + batch.name + "' does not exist");
        continue;
      }
      const StreamRecord& record = it->second;
      if (record.owners[batch.id] != options_.broker_id) {
        flight.out[n] = NotHere(batch.name, batch.id, record.owners[batch.id], brokers_);
        continue;
      }
      if (batch.chunks.empty()) continue;
      flight.epochs[n] = record.replicas[batch.id].leader_epoch;
      for (uint32_t f : record.replicas[batch.id].isr) {
        if (f == options_.broker_id) continue;
        auto b = std::find_if(brokers_.begin(), brokers_.end(),
                              [f](const BrokerRecord& r) { return r.id == f; });
        flight.sends.push_back(Send{n, f, &pipe->to_follower_[f], Status::Ok(), 0, 0});
        addresses.push_back(b == brokers_.end() ? std::string() : b->address);
      }
    }
  }

  std::vector<std::vector<net::ReplicaAppendRequest>> requests(batches.size());
  flight.names.resize(batches.size());
  flight.ids.resize(batches.size());
  flight.counts.resize(batches.size());
  for (size_t n = 0; n < batches.size(); ++n) {
    flight.names[n] = batches[n].name;
    flight.ids[n] = batches[n].id;
    flight.counts[n] = batches[n].chunks.size();
    if (!flight.out[n].ok()) continue;
    for (const storage::HeldAppends::Chunk& c : batches[n].chunks) {
      requests[n].push_back({batches[n].name, batches[n].id, options_.broker_id, flight.epochs[n],
                             c.at, c.data, c.size});
    }
  }
  // Every batch for one follower goes out in one gathered write on the pipeline's connection
  // to it, in the order of the sends, which is the order their answers are awaited in.
  std::vector<bool> sent(flight.sends.size(), false);
  for (size_t k = 0; k < flight.sends.size(); ++k) {
    if (sent[k]) continue;
    ReplicaPipeline::FollowerLink* link = flight.sends[k].link;
    std::vector<size_t> group;  // the sends on `link`, in order
    std::vector<net::ReplicaAppendRequest> together;
    for (size_t j = k; j < flight.sends.size(); ++j) {
      if (flight.sends[j].link != link) continue;
      sent[j] = true;
      Send& send = flight.sends[j];
      if (addresses[j].empty()) {
        send.status = Status::BrokerUnavailable("broker " + std::to_string(send.follower) +
                                                " is not registered");
        continue;
      }
      group.push_back(j);
      together.insert(together.end(), requests[send.batch].begin(), requests[send.batch].end());
    }
    if (group.empty()) continue;
    Result<uint64_t> first =
        SendOnLink(*link, addresses[group.front()], /*may_connect=*/link->flights == 0, together);
    uint64_t id = first.ok() ? *first : 0;
    for (size_t j : group) {
      Send& send = flight.sends[j];
      if (first.ok()) {
        send.first_id = id;
        send.connection = link->connection;
        id += requests[send.batch].size();
      } else {
        send.status = first.status();
      }
    }
  }
  for (auto& entry : pipe->to_follower_) {
    ReplicaPipeline::FollowerLink* link = &entry.second;
    if (std::any_of(flight.sends.begin(), flight.sends.end(),
                    [link](const Send& send) { return send.link == link; })) {
      ++link->flights;
    }
  }
  flight.deadline_ms = MonotonicNowMs() + kReplicaTimeoutMs;
  pipe->flights_.push_back(std::move(flight));
}

std::vector<Status> ZkCluster::AwaitReplicas(ReplicaPipeline* pipe) {
  using Send = ReplicaPipeline::Send;
  ReplicaPipeline::Flight flight = std::move(pipe->flights_.front());
  pipe->flights_.pop_front();
  for (Send& send : flight.sends) {
    if (!send.status.ok()) continue;
    std::optional<net::Client>& client = send.link->client;
    if (!client.has_value() || send.link->connection != send.connection) {
      // An earlier flight's answers broke the connection these requests went out on.
      send.status = Status::IoError("the connection to broker " + std::to_string(send.follower) +
                                    " failed before it answered");
      continue;
    }
    // A follower that stopped answering costs the flight one timeout, not one per send or per
    // flight before it.
    const int64_t left = std::max<int64_t>(1, flight.deadline_ms - MonotonicNowMs());
    send.status = client->AwaitReplicaAppends(send.first_id, flight.counts[send.batch],
                                              static_cast<int>(left));
    if (!client->ok()) client.reset();
  }
  for (auto& entry : pipe->to_follower_) {
    ReplicaPipeline::FollowerLink* link = &entry.second;
    if (std::any_of(flight.sends.begin(), flight.sends.end(),
                    [link](const Send& send) { return send.link == link; })) {
      --link->flights;
    }
  }

  std::vector<Status>& out = flight.out;
  std::vector<std::vector<uint32_t>> failed(out.size());
  for (const Send& send : flight.sends) {
    const std::string& name = flight.names[send.batch];
    const uint32_t id = flight.ids[send.batch];
    if (send.status.ok() || !out[send.batch].ok()) continue;
    if (send.status.IsNotOwner()) {
      // Either another broker leads now (the follower knows a newer leader epoch) or the
      // follower is no replica any more (a move took its place; this broker's watch has not
      // told it yet). ShrinkIsr asks ZooKeeper which: deposed, nothing is published; otherwise
      // the chunk stands on the members that stay. Taking it back would leave it on those
      // that hold it already, and the producer's retry would land a second time elsewhere.
      NS_LOG(kInfo) << "broker " << send.follower << " refused a chunk of "
                    << StreamletName(name, id) << ": " << send.status.ToString();
    } else {
      NS_LOG(kWarning) << "replicating " << StreamletName(name, id) << " to broker "
                       << send.follower << " failed: " << send.status.ToString()
                       << "; it leaves the in-sync set";
    }
    failed[send.batch].push_back(send.follower);
  }
  for (size_t n = 0; n < out.size(); ++n) {
    if (out[n].ok() && !failed[n].empty()) {
      out[n] = ShrinkIsr(flight.names[n], flight.ids[n], flight.epochs[n], failed[n]);
    }
  }
  return out;
}

Status ZkCluster::ShrinkIsr(const std::string& name, uint32_t id, uint64_t epoch,
                            const std::vector<uint32_t>& failed) {
  const std::string what = StreamletName(name, id);
  // Acknowledging without the failed followers needs the in-sync set to say so first. Out of
  // ZooKeeper's reach (in the read, or in the write, which may or may not have been applied:
  // the next read tells), wait while this broker's session lives; once it expired, the
  // controller may have chosen another leader, and this one must not publish. Giving up
  // earlier would take the chunks back while this broker still leads, and the followers that
  // took them would keep them.
  auto wait_for_zookeeper = [&]() -> Status {
    bool expired;
    {
      MutexLock lock(&mu_);
      expired = expired_ || stopping_;
    }
    if (expired) {
      return Status::ClusterUnavailable("cannot remove a failed follower of " + what +
                                        " from its in-sync set: ZooKeeper session expired");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return Status::Ok();
  };
  while (true) {
    Result<std::optional<StreamRecord>> read = FetchStream(name, /*watch=*/false);
    if (!read.ok() && read.status().IsClusterUnavailable()) {
      RETURN_IF_ERROR(wait_for_zookeeper());
      continue;
    }
    RETURN_IF_ERROR(read.status());
    if (!read->has_value()) return Status::StreamNotFound("stream '" + name + "' was deleted");
    StreamRecord record = std::move(**read);
    if (id >= record.replicas.size() || record.owners[id] != options_.broker_id ||
        record.replicas[id].leader_epoch != epoch) {
      // Not installed from here: this thread holds the streamlet's slot lock, which a demotion
      // waits for. The refresher re-reads the node.
      MutexLock lock(&mu_);
      changed_streams_.insert(name);
      changed_.SignalAll();
      return Status::NotOwner("broker " + std::to_string(options_.broker_id) + " no longer leads " +
                              what);
    }
    std::vector<uint32_t>& isr = record.replicas[id].isr;
    const size_t members = isr.size();
    isr.erase(std::remove_if(isr.begin(), isr.end(),
                             [&failed](uint32_t b) {
                               return std::find(failed.begin(), failed.end(), b) != failed.end();
                             }),
              isr.end());
    if (isr.size() == members) {
      // None of them is in the set any more (a replica move removed it): every member holds
      // the chunk. The cache, which still names them, is read again.
      MutexLock lock(&mu_);
      changed_streams_.insert(name);
      changed_.SignalAll();
      return Status::Ok();
    }
    bool stale = false;
    Status set = SetStreamNode(name, record, /*fenced=*/false, &stale);
    if (set.IsClusterUnavailable()) {
      RETURN_IF_ERROR(wait_for_zookeeper());
      continue;
    }
    RETURN_IF_ERROR(set);
    if (stale) continue;
    NS_LOG(kWarning) << "the in-sync set of " << what << " is now " << FormatIds(isr);
    // This thread holds the slot lock a demotion would wait for, so not through Install: into
    // the cache directly when no streamlet changed leader since the cache's record (then
    // Install would change nothing else); otherwise the refresher installs the node, and until
    // then the next chunk tries the failed followers again and finds them out of the set.
    record.version += 1;
    MutexLock lock(&mu_);
    auto it = streams_.find(name);
    if (it != streams_.end() && it->second.version < record.version &&
        it->second.owners == record.owners) {
      it->second = std::move(record);
    } else {
      changed_streams_.insert(name);
      changed_.SignalAll();
    }
    return Status::Ok();
  }
}

Status ZkCluster::SetStreamNode(const std::string& name, const StreamRecord& record, bool fenced,
                                bool* stale) {
  *stale = false;
  const std::string data = FormatStreamRecord(record);
  const std::string path = Path("/streams/" + name);
  const int32_t version = static_cast<int32_t>(record.version) - 1;
  if (!fenced) {
    int rc;
    {
      MutexLock lock(&zk_mu_);
      rc = zoo_set(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), version);
    }
    if (rc == ZBADVERSION) {
      *stale = true;
      return Status::Ok();
    }
    if (rc == ZNONODE) return Status::StreamNotFound("stream '" + name + "' was deleted");
    if (rc != ZOK) return ZkError("update stream " + name, rc);
    return Status::Ok();
  }
  int32_t epoch_version;
  {
    MutexLock lock(&mu_);
    if (!is_controller_) return Status::ClusterUnavailable("no longer the controller");
    epoch_version = epoch_version_;
  }
  const std::string epoch_node = Path("/controller_epoch");
  zoo_op_t ops[2];
  zoo_op_result_t results[2];
  zoo_check_op_init(&ops[0], epoch_node.c_str(), epoch_version);
  zoo_set_op_init(&ops[1], path.c_str(), data.data(), static_cast<int>(data.size()), version,
                  nullptr);
  int rc;
  {
    MutexLock lock(&zk_mu_);
    rc = zoo_multi(zh_, 2, ops, results);
  }
  if (rc == ZOK) return Status::Ok();
  if (ZkUnreachable(rc)) return ZkError("update stream " + name, rc);
  if (results[0].err == ZBADVERSION) return Deposed();
  if (results[1].err == ZBADVERSION) {
    *stale = true;
    return Status::Ok();
  }
  if (results[1].err == ZNONODE) return Status::StreamNotFound("stream '" + name + "' was deleted");
  return ZkError("update stream " + name, rc);
}

void ZkCluster::ElectLeaders() {
  std::vector<std::string> names;
  {
    MutexLock lock(&mu_);
    if (!is_controller_) return;
    for (const auto& [name, record] : streams_) {
      if (record.config.replication > 1) names.push_back(name);
    }
  }
  for (const std::string& name : names) {
    // Until the node is written or another change is seen and decided on again.
    for (int attempt = 0; attempt < 10; ++attempt) {
      Result<std::optional<StreamRecord>> read = FetchStream(name, /*watch=*/false);
      if (!read.ok() || !read->has_value()) break;
      StreamRecord record = std::move(**read);
      std::vector<std::string> changes;
      std::vector<BrokerRecord> brokers;
      {
        MutexLock lock(&mu_);
        brokers = brokers_;
      }
      auto registered = [&brokers](uint32_t b) {
        return std::any_of(brokers.begin(), brokers.end(),
                           [b](const BrokerRecord& r) { return r.id == b; });
      };
      {
        for (uint32_t i = 0; i < record.owners.size(); ++i) {
          const uint32_t leader = record.owners[i];
          if (registered(leader)) continue;
          net::ReplicaSet& set = record.replicas[i];
          auto next = std::find_if(set.isr.begin(), set.isr.end(),
                                   [&](uint32_t b) { return b != leader && registered(b); });
          if (next == set.isr.end()) continue;  // no copy that holds every acknowledged chunk
          const uint32_t chosen = *next;
          // The new leader is alone in the set. Its copy holds every acknowledged chunk, and
          // perhaps some the lost leader sent it but not yet to the others before it died;
          // loaded, those are published too, so the others copy again before they are back in
          // the set (and electable). The lost leader may hold chunks nobody acknowledged.
          set.isr = {chosen};
          ++set.leader_epoch;
          record.owners[i] = chosen;
          changes.push_back("streamlet " + std::to_string(i) + ": broker " +
                            std::to_string(leader) + " -> " + std::to_string(chosen) + " (epoch " +
                            std::to_string(set.leader_epoch) + ")");
        }
      }
      if (changes.empty()) break;
      bool stale = false;
      Status set = SetStreamNode(name, record, /*fenced=*/true, &stale);
      if (!set.ok()) {
        NS_LOG(kWarning) << "controller: electing leaders of stream " << name
                         << " failed: " << set.ToString();
        break;
      }
      if (stale) continue;
      for (const std::string& change : changes) {
        NS_LOG(kWarning) << "controller: new leader of stream " << name << " " << change;
      }
      record.version += 1;
      Install(name, std::move(record));
      break;
    }
  }
}

Result<ZkCluster::FollowerTarget> ZkCluster::FollowerWriteTarget(const std::string& name,
                                                                 uint32_t streamlet,
                                                                 uint64_t leader_epoch) {
  if (!joined()) {
    return Status::PositionOutOfRange("broker " + std::to_string(options_.broker_id) +
                                      " is joining the cluster; its copies are not in sync");
  }
  FollowerTarget t;
  t.stream = store_->Find(name);
  if (t.stream == nullptr) {
    ASSIGN_OR_RETURN(t.stream, Find(name));
    if (t.stream == nullptr) return Status::StreamNotFound("stream '" + name + "' does not exist");
  }
  t.streamlet = t.stream->streamlet(streamlet);
  if (t.streamlet == nullptr) {
    return Status::StreamletNotFound("stream '" + name + "' has no streamlet " +
                                     std::to_string(streamlet));
  }
  uint64_t known_epoch = 0;
  bool known_in_sync = false;
  {
    MutexLock lock(&mu_);
    std::shared_ptr<FollowerCopy>& c = copies_[{name, streamlet}];
    if (c == nullptr) c = std::make_shared<FollowerCopy>();
    t.copy = c;
    auto it = streams_.find(name);
    if (it != streams_.end() && streamlet < it->second.replicas.size()) {
      const net::ReplicaSet& set = it->second.replicas[streamlet];
      known_epoch = set.leader_epoch;
      known_in_sync =
          std::find(set.isr.begin(), set.isr.end(), options_.broker_id) != set.isr.end();
    }
  }
  // A leader of a newer epoch than this broker has seen, or an in-sync set this broker is not
  // in as it knows it (it just joined): read the node before deciding, so a new leader or a
  // join is never refused for a watch that has not fired yet.
  if (leader_epoch > known_epoch || (leader_epoch == known_epoch && !known_in_sync)) {
    RETURN_IF_ERROR(ReadStream(name).status());
  }
  return t;
}

Status ZkCluster::CheckFollowerWrite(const std::string& name, uint32_t streamlet, uint32_t leader,
                                     uint64_t leader_epoch) {
  MutexLock cache(&mu_);
  auto it = streams_.find(name);
  const std::string what = StreamletName(name, streamlet);
  if (it == streams_.end() || streamlet >= it->second.replicas.size()) {
    return Status::StreamNotFound("stream '" + name + "' does not exist");
  }
  const StreamRecord& record = it->second;
  const uint64_t epoch = record.replicas[streamlet].leader_epoch;
  if (!record.Follows(streamlet, options_.broker_id)) {
    return Status::NotOwner("broker " + std::to_string(options_.broker_id) + " does not follow " +
                            what + " (its leader is broker " +
                            std::to_string(record.owners[streamlet]) + ")");
  }
  if (record.owners[streamlet] != leader || epoch != leader_epoch) {
    return Status::NotOwner("broker " + std::to_string(leader) + " at leader epoch " +
                            std::to_string(leader_epoch) + " does not lead " + what + ": broker " +
                            std::to_string(record.owners[streamlet]) + " does, at epoch " +
                            std::to_string(epoch));
  }
  // Out of the in-sync set, or not checked since this broker started: the copy may miss
  // writes, so it takes none until it is whole again (the catch-up thread rebuilds it).
  const std::vector<uint32_t>& isr = record.replicas[streamlet].isr;
  if (std::find(isr.begin(), isr.end(), options_.broker_id) == isr.end() ||
      rebuilding_.contains({name, streamlet})) {
    return Status::PositionOutOfRange("broker " + std::to_string(options_.broker_id) +
                                      "'s copy of " + what +
                                      " is not in sync; it is being copied again");
  }
  return Status::Ok();
}

Result<size_t> ZkCluster::StageReplica(const net::ReplicaAppendRequest& m, ReplicaWrites* w) {
  ReplicaRun* last = w->runs_.empty() ? nullptr : &w->runs_.back();
  const bool continues = last != nullptr && !last->outcome.has_value() &&
                         last->stream == m.stream && last->streamlet == m.streamlet &&
                         last->leader == m.leader && last->leader_epoch == m.leader_epoch &&
                         last->at.group == m.at.group && last->at.segment == m.at.segment &&
                         last->end == m.at.offset;
  // A chunk that continues the run goes where the run goes; only a run's first is looked up.
  FollowerTarget fresh;
  if (!continues) {
    ASSIGN_OR_RETURN(fresh, FollowerWriteTarget(m.stream, m.streamlet, m.leader_epoch));
  }
  const storage::Stream& stream = continues ? *last->target.stream : *fresh.stream;
  RETURN_IF_ERROR(storage::ValidateChunk(m.chunk, m.chunk_size).status());
  if (m.at.offset + uint64_t{m.chunk_size} > stream.config().segment_bytes) {
    return Status::InvalidArgument("a chunk of " + std::to_string(m.chunk_size) +
                                   " bytes at offset " + std::to_string(m.at.offset) +
                                   " does not fit in a segment");
  }
  if (!continues) {
    // The run before goes to its file now: its bytes are not where this one's go.
    if (last != nullptr && !last->outcome.has_value()) last->outcome = WriteReplicaRun(*last);
    ReplicaRun run;
    run.target = std::move(fresh);
    run.stream = m.stream;
    run.streamlet = m.streamlet;
    run.leader = m.leader;
    run.leader_epoch = m.leader_epoch;
    run.at = m.at;
    run.end = m.at.offset;
    w->runs_.push_back(std::move(run));
  }
  ReplicaRun& run = w->runs_.back();
  run.chunks.push_back({const_cast<uint8_t*>(m.chunk), m.chunk_size});
  run.end += m.chunk_size;
  return w->runs_.size() - 1;
}

std::vector<Status> ZkCluster::WriteReplicas(ReplicaWrites* w) {
  std::vector<Status> outcomes;
  outcomes.reserve(w->runs_.size());
  for (ReplicaRun& run : w->runs_) {
    outcomes.push_back(run.outcome.has_value() ? *run.outcome : WriteReplicaRun(run));
  }
  w->runs_.clear();
  return outcomes;
}

Status ZkCluster::WriteReplicaRun(const ReplicaRun& run) {
  const std::shared_ptr<storage::Stream>& stream = run.target.stream;
  storage::Streamlet* s = run.target.streamlet;
  const std::shared_ptr<FollowerCopy>& copy = run.target.copy;
  // The checks and the write under the copy's lock, which a promotion takes too: no chunk of an
  // old epoch lands after this broker loaded its copy as the new leader. They are made here, not
  // when the chunks were staged: the run's chunks came in one batch, and the leadership may
  // have changed since.
  std::lock_guard<std::mutex> lock(copy->mu);
  if (store_->Find(run.stream) != stream) {
    return Status::StreamNotFound("stream '" + run.stream + "' was deleted");
  }
  RETURN_IF_ERROR(CheckFollowerWrite(run.stream, run.streamlet, run.leader, run.leader_epoch));
  RETURN_IF_ERROR(copy->SyncFailure());
  storage::Env* env = storage::Env::Default();
  if (copy->file == nullptr || copy->file_at.group != run.at.group ||
      copy->file_at.segment != run.at.segment) {
    if (copy->file != nullptr) {
      if (stream->config().durability == storage::Durability::kSync) {
        RETURN_IF_ERROR(copy->file->Sync());
      } else {
        // Synced off this thread: inline, the flush of a whole segment held the answer, and
        // with it every acknowledgement of the streamlet (docs/cluster.md, "Replication").
        copy_syncer_.Hand(std::move(copy->file), [copy](const Status& failed) {
          copy->NoteSyncFailure(Status(failed.code(),
                                       "syncing a finished segment file of the "
                                       "copy failed: " +
                                           std::string(failed.message())));
        });
      }
    }
    copy->file.reset();
    ASSIGN_OR_RETURN(std::unique_ptr<storage::WritableFile> file,
                     env->OpenAppendable(s->GroupSegmentPath(run.at.group, run.at.segment)));
    if (file->size() == 0 && stream->config().durability == storage::Durability::kSync) {
      RETURN_IF_ERROR(env->SyncDir(s->dir()));  // the new file's name survives a crash too
    }
    copy->file_at =
        storage::Position{run.at.group, run.at.segment, static_cast<uint32_t>(file->size())};
    copy->file = std::move(file);
  }
  if (copy->file_at.offset != run.at.offset) {
    return Status::PositionOutOfRange("broker " + std::to_string(options_.broker_id) +
                                      "'s copy of segment " + std::to_string(run.at.segment) +
                                      " of " + StreamletName(run.stream, run.streamlet) + " has " +
                                      std::to_string(copy->file_at.offset) +
                                      " bytes; the chunk is at " + std::to_string(run.at.offset));
  }
  Status written = copy->file->AppendV(run.chunks.data(), run.chunks.size());
  if (written.ok() && stream->config().durability == storage::Durability::kSync) {
    written = copy->file->Sync();
  }
  if (!written.ok()) {
    // The file's end is unknown now: the next chunk opens it again and checks its size.
    copy->file.reset();
    return written;
  }
  copy->file_at.offset = run.end;
  // And to the copy in memory, which a view publishes (follower reads). Failing there fails no
  // write: the file is the copy; the readers here wait for a whole view.
  storage::Position at = run.at;
  for (const iovec& chunk : run.chunks) {
    if (!copy->mirror_valid.load(std::memory_order_acquire)) break;
    const auto* data = static_cast<const uint8_t*>(chunk.iov_base);
    const auto size = static_cast<uint32_t>(chunk.iov_len);
    if (Status mirrored = s->MirrorChunk(at, data, size, WallNowMs()); !mirrored.ok()) {
      NS_LOG(kWarning) << "the copy in memory of " << StreamletName(run.stream, run.streamlet)
                       << " is dropped until a whole view: " << mirrored.ToString();
      if (copy->ResetMirror(*s) && on_lost_) on_lost_(stream);
    }
    at.offset += size;
  }
  return Status::Ok();
}

void ZkCluster::Install(const std::string& name, StreamRecord record) {
  MutexLock serial(&install_mu_);
  StreamRecord before;
  bool had = false;
  {
    MutexLock lock(&mu_);
    auto it = streams_.find(name);
    if (it != streams_.end()) {
      // A read that raced a newer one: keep the newer.
      if (it->second.version > record.version) return;
      before = it->second;
      had = true;
    }
  }
  std::shared_ptr<storage::Stream> stream = store_->Find(name);
  const uint32_t me = options_.broker_id;
  std::vector<std::shared_ptr<FollowerCopy>> held;  // promotions: locked until installed
  std::vector<std::unique_lock<std::mutex>> locks;
  // Streamlets this broker gives up (it no longer leads, or holds no replica any more): dropped
  // only once the cache names their new leader, so that a request that reaches one after the
  // drop finds NOT_OWNER, not an empty streamlet.
  std::vector<std::function<void()>> give_up;
  bool demoted = false;
  // Follower reads this broker served of a streamlet it no longer serves them of (it left the
  // in-sync set or leads now): their push subscriptions end, their readers go where it is.
  bool follower_reads_lost = false;
  if (stream != nullptr && record.config.replication > 1) {
    for (uint32_t i = 0; i < record.owners.size(); ++i) {
      storage::Streamlet* s = stream->streamlet(i);
      if (s == nullptr) continue;
      const bool leads = record.owners[i] == me;
      const bool led = had && i < before.owners.size() && before.owners[i] == me;
      if (had && before.FollowsInSync(i, me) && !record.FollowsInSync(i, me)) {
        follower_reads_lost = true;
      }
      if (leads && had && !led) {
        // Promotion: the copy's files become the streamlet, loaded as recovery loads them (torn
        // tails cut, groups closed, producer sequences rebuilt so retries are duplicates).
        std::shared_ptr<FollowerCopy> copy;
        {
          MutexLock lock(&mu_);
          std::shared_ptr<FollowerCopy>& c = copies_[{name, i}];
          if (c == nullptr) c = std::make_shared<FollowerCopy>();
          copy = c;
          txn_unconfirmed_.erase({name, i});  // an earlier leadership's
        }
        locks.emplace_back(copy->mu);
        held.push_back(copy);
        for (storage::WritableFile* f : {copy->file.get(), copy->txn_file.get()}) {
          if (f == nullptr) continue;
          Status synced = f->Sync();
          if (!synced.ok())
            NS_LOG(kError) << "syncing the copy of " << StreamletName(name, i) << ": "
                           << synced.ToString();
        }
        copy_syncer_.Drain();  // and the segment files it finished before (any copy's)
        if (Status failed = copy->SyncFailure(); !failed.ok()) {
          NS_LOG(kError) << "the copy of " << StreamletName(name, i) << ": " << failed.ToString();
        }
        copy->Close();
        // Its transactions too, from the files the old leader's writes made here, as a restart
        // loads them: committed ones' renames finished before the streamlet loads its files,
        // open and prepared ones' parts after. The log stays byte for byte the followers'.
        storage::StreamTransactions* txns = stream->transactions_of(i);
        if (txns != nullptr) {
          txns->Forget();
          if (Status r = txns->RecoverLog(); !r.ok()) {
            NS_LOG(kError) << "loading the transactions of " << StreamletName(name, i)
                           << " as its new leader: " << r.ToString();
          }
        }
        // Its copy in memory (follower reads) goes: the files are the copy, loaded whole.
        follower_reads_lost = copy->ResetMirror(*s) || follower_reads_lost;
        s->SetMirror(false);
        s->Reopen();
        Status loaded = s->Recover(WallNowMs());
        if (!loaded.ok()) {
          NS_LOG(kError) << "loading the copy of " << StreamletName(name, i)
                         << " as its new leader: " << loaded.ToString();
        }
        if (txns != nullptr) {
          if (Status r = txns->RecoverParts(WallNowMs(), /*rewrite_log=*/false); !r.ok()) {
            NS_LOG(kError) << "loading the transactions' parts of " << StreamletName(name, i)
                           << " as its new leader: " << r.ToString();
          }
        }
        StartLeaderEpoch(name, i, *s, record.replicas[i].leader_epoch);
        NS_LOG(kInfo) << "broker " << me << " leads " << StreamletName(name, i) << " at epoch "
                      << record.replicas[i].leader_epoch << " (tail " << s->tail().ToString()
                      << ")";
      } else if (!leads && had && !record.Follows(i, me) && (led || before.Follows(i, me))) {
        // No longer a replica (a replica move took this broker's place): the copy goes. Under
        // the copy's lock, which a ReplicaAppend holds while it checks the record and writes.
        std::shared_ptr<FollowerCopy> copy;
        {
          MutexLock lock(&mu_);
          std::shared_ptr<FollowerCopy>& c = copies_[{name, i}];
          if (c == nullptr) c = std::make_shared<FollowerCopy>();
          copy = c;
          rebuilding_.erase({name, i});
          seals_.erase({name, i});
        }
        locks.emplace_back(copy->mu);
        held.push_back(copy);
        copy->Close();
        // A leader that gave the streamlet up is sealed at once: no append slips in before the
        // cache names its successor (it would be acknowledged without the new leader).
        if (led) s->Seal();
        give_up.emplace_back([s, led, what = StreamletName(name, i),
                              txns = stream->transactions_of(i),
                              replicas = FormatIds(record.replicas[i].replicas), me, copy] {
          if (txns != nullptr) txns->Forget();
          copy->mirror_valid.store(false, std::memory_order_release);
          s->SetMirror(false);
          (void)s->DropAll(/*reopen=*/!led);
          RemoveCopy(s->dir());
          NS_LOG(kInfo) << "broker " << me << " holds no replica of " << what
                        << " any more (its replicas are " << replicas << "); its copy is removed";
        });
        demoted = demoted || led;
      } else if (!leads && (led || !had) && record.Follows(i, me)) {
        if (!had) {
          // Files from this broker's previous run: they may miss acknowledged chunks (a crash
          // under `async`) or hold some nobody acknowledged. Not in sync until copied again.
          const std::vector<uint32_t>& isr = record.replicas[i].isr;
          if (std::find(isr.begin(), isr.end(), me) != isr.end()) {
            MutexLock lock(&mu_);
            rebuilding_.insert({name, i});
          }
        }
        // A leader no longer (or a follower's first sight of the record, with chunks loaded at
        // start): in memory the streamlet holds nothing while this broker follows; its files
        // stay, the copy new chunks are appended to. A leader no longer is sealed (see above).
        if (led) s->Seal();
        // A follower's transactions are files only, as its streamlet is. The drop takes the
        // copy's lock: a view that applied meanwhile (the cache names this broker a follower
        // already) goes with it, so the leader's next view is refused and a whole one follows.
        std::shared_ptr<FollowerCopy> copy;
        {
          MutexLock lock(&mu_);
          std::shared_ptr<FollowerCopy>& c = copies_[{name, i}];
          if (c == nullptr) c = std::make_shared<FollowerCopy>();
          copy = c;
        }
        give_up.emplace_back(
            [s, led, txns = stream->transactions_of(i), copy, &follower_reads_lost] {
              if (txns != nullptr) txns->Forget();
              std::lock_guard<std::mutex> lock(copy->mu);
              follower_reads_lost = copy->ResetMirror(*s) || follower_reads_lost;
              if (!led) s->Reopen();
            });
        demoted = demoted || led;
        if (led) {
          // A seal held for a replica move that made another replica the leader: nothing to
          // lift or let go when it runs out.
          MutexLock lock(&mu_);
          seals_.erase({name, i});
        }
        if (led) {
          NS_LOG(kWarning) << "broker " << me << " no longer leads " << StreamletName(name, i)
                           << " (broker " << record.owners[i] << " does)";
        }
      }
    }
  }
  {
    MutexLock lock(&mu_);
    streams_[name] = std::move(record);
  }
  for (const auto& drop : give_up) drop();
  locks.clear();
  if ((demoted || follower_reads_lost) && on_lost_) on_lost_(stream);
}

}  // namespace nearstream::cluster
