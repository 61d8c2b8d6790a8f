// Moving a replica of a replicated streamlet (docs/protocol.md, "Moving a replica";
// docs/cluster.md, "Moving and draining"): the target joins the streamlet's replicas, copies the
// streamlet from its leader as a catching-up follower does, and, while the leader's seal holds,
// either joins the in-sync set (the replica it replaces was a follower, which then leaves) or
// takes the leadership over with the next leader epoch. Every step is one compare-and-set of
// the stream's node, so a target that dies half way leaves a valid record: at worst an extra
// replica, which catches up as a follower and which the next move of that replica uses.
#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "nearstream/cluster/zk_cluster.h"
#include "nearstream/common/log.h"

namespace nearstream::cluster {

namespace {

bool Contains(const std::vector<uint32_t>& ids, uint32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

void Erase(std::vector<uint32_t>& ids, uint32_t id) {
  ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
}

}  // namespace

Status ZkCluster::ChangeReplicas(const std::string& name,
                                 const std::function<Result<bool>(StreamRecord& record)>& change) {
  while (true) {
    ASSIGN_OR_RETURN(std::optional<StreamRecord> read, FetchStream(name, /*watch=*/false));
    if (!read.has_value()) return Status::StreamNotFound("stream '" + name + "' was deleted");
    StreamRecord record = std::move(*read);
    ASSIGN_OR_RETURN(bool write, change(record));
    if (write) {
      bool stale = false;
      RETURN_IF_ERROR(SetStreamNode(name, record, /*fenced=*/false, &stale));
      if (stale) continue;
      record.version += 1;
    }
    Install(name, std::move(record));
    return Status::Ok();
  }
}

Status ZkCluster::MoveReplica(const std::string& name, uint32_t id, uint32_t from, bool swap) {
  const uint32_t me = options_.broker_id;
  const std::string what = "streamlet " + std::to_string(id) + " of stream '" + name + "'";
  {
    MutexLock lock(&mu_);
    if (!connected_) return Status::ClusterUnavailable("ZooKeeper is out of reach: no move now");
    if (!moving_in_.insert({name, id}).second) {
      return Status::StreamletMoving("a move of " + what + " to broker " + std::to_string(me) +
                                     " is running already");
    }
  }
  struct Unmark {
    ZkCluster* cluster;
    std::pair<std::string, uint32_t> key;
    ~Unmark() {
      MutexLock lock(&cluster->mu_);
      cluster->moving_in_.erase(key);
    }
  } unmark{this, {name, id}};

  // The checks on the record as ZooKeeper has it now, not as the last watch left it.
  ASSIGN_OR_RETURN(std::optional<StreamRecord> read, FetchStream(name, /*watch=*/false));
  if (!read.has_value()) return Status::StreamNotFound("stream '" + name + "' does not exist");
  const StreamRecord& record = *read;
  if (id >= record.owners.size()) {
    return Status::StreamletNotFound("stream '" + name + "' has no streamlet " +
                                     std::to_string(id) + " (it has " +
                                     std::to_string(record.owners.size()) + ")");
  }
  if (record.config.replication < 2) {
    return Status::InvalidArgument(what + " is not replicated: MoveStreamlet moves it");
  }
  const std::vector<uint32_t>& replicas = record.replicas[id].replicas;
  const uint32_t leader = record.owners[id];
  const bool member = Contains(replicas, me);
  if (from == me) {
    return Status::InvalidArgument("broker " + std::to_string(me) + " cannot take its own place");
  }
  if (!Contains(replicas, from)) {
    return Status::InvalidArgument("broker " + std::to_string(from) + " holds no replica of " +
                                   what);
  }
  if (swap && (!member || from != leader)) {
    return Status::Internal("a leadership swap needs a follower target and the leader as from");
  }
  if (member && !swap && replicas.size() <= record.config.replication) {
    return Status::InvalidArgument("broker " + std::to_string(me) + " holds a replica of " + what +
                                   " already");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<storage::Stream> stream, Find(name));
  if (stream == nullptr || stream->streamlet(id) == nullptr) {
    return Status::StreamNotFound("stream '" + name + "' does not exist");
  }

  // 1. Among the replicas, out of the in-sync set: the leader sends nothing here until the
  // join, and the controller never elects this copy while it is being made.
  bool added = false;
  if (!member) {
    RETURN_IF_ERROR(ChangeReplicas(name, [&](StreamRecord& r) -> Result<bool> {
      if (!Contains(r.replicas[id].replicas, from)) {
        return Status::InvalidArgument("broker " + std::to_string(from) + " holds no replica of " +
                                       what + " any more");
      }
      if (Contains(r.replicas[id].replicas, me)) return false;
      r.replicas[id].replicas.push_back(me);
      return true;
    }));
    added = true;
  } else {
    RETURN_IF_ERROR(LeaveIsr(name, id));
  }
  auto undo = [&](const Status& failed) -> Status {
    if (added) {
      Status removed = ChangeReplicas(name, [&](StreamRecord& r) -> Result<bool> {
        if (r.owners[id] == me) return Status::InvalidArgument("it leads the streamlet now");
        Erase(r.replicas[id].replicas, me);
        Erase(r.replicas[id].isr, me);
        return true;
      });
      if (!removed.ok()) {
        NS_LOG(kWarning) << "broker " << me << " stays an extra replica of " << what
                         << " after a failed move (it catches up as a follower): "
                         << removed.ToString();
      }
    }
    return Status(failed.code(), "moving the replica of " + what + " on broker " +
                                     std::to_string(from) + " to broker " + std::to_string(me) +
                                     " failed: " + std::string(failed.message()));
  };

  // 2. The copy, ending with the leader sealed at its tail.
  Result<LeaderCopy> copied = CopyFromLeader(name, id);
  if (!copied.ok()) return undo(copied.status());
  LeaderCopy& copy = *copied;

  if (from != copy.leader) {
    // 3a. `from` follows: join the in-sync set as a catching-up follower does (the leader lifts
    // its seal), then `from` leaves. Shrinking the set is always safe: the leader copies every
    // chunk to at least the members ZooKeeper names.
    Bytes body;
    ByteWriter w(&body);
    net::EncodeReplicaJoinRequest(w, {name, id, me, copy.epoch, copy.tail});
    Status joined = copy.client->Call(net::Opcode::kReplicaJoin, body).status();
    if (!joined.ok()) {
      LiftSeal(copy, name, id);
      return undo(Status(joined.code(), copy.at + ": " + std::string(joined.message())));
    }
    RETURN_IF_ERROR(ChangeReplicas(name, [&](StreamRecord& r) -> Result<bool> {
      if (r.owners[id] == from) {
        return Status::NotOwner("broker " + std::to_string(from) + " leads " + what +
                                " now; broker " + std::to_string(me) + " is in sync and stays");
      }
      Erase(r.replicas[id].replicas, from);
      Erase(r.replicas[id].isr, from);
      return true;
    }));
    NS_LOG(kInfo) << "broker " << me << " took broker " << from << "'s replica of " << what
                  << " (tail " << copy.tail.ToString() << ")";
    return Status::Ok();
  }

  // 3b. `from` leads: it hands the leadership over (ReplicaJoin with take_over), checking on
  // the thread that answers every ReplicaJoin that it is still sealed at this copy's end, and
  // stays sealed. This broker loads its copy once it reads the new record.
  Bytes body;
  ByteWriter w(&body);
  net::EncodeReplicaJoinRequest(w, {name, id, me, copy.epoch, copy.tail,
                                    swap ? net::ReplicaJoinRequest::TakeOver::kLeaderFollows
                                         : net::ReplicaJoinRequest::TakeOver::kLeaderLeaves});
  Status led = copy.client->Call(net::Opcode::kReplicaJoin, body).status();
  if (!led.ok() && !copy.client->ok()) {
    // The answer was lost: the leader may have handed over. ZooKeeper says.
    Result<std::optional<StreamRecord>> now = FetchStream(name, /*watch=*/false);
    if (!now.ok()) {
      return Status(now.status().code(),
                    "the leadership of " + what +
                        " may or may not have moved (ZooKeeper out of reach): " +
                        std::string(now.status().message()));
    }
    if (now->has_value() && (**now).owners[id] == me) led = Status::Ok();
  }
  if (!led.ok()) {
    LiftSeal(copy, name, id);
    return undo(Status(led.code(), copy.at + ": " + std::string(led.message())));
  }
  // Installed from ZooKeeper: the promotion loads the copy before requests reach it here.
  RETURN_IF_ERROR(ReadStream(name).status());
  NS_LOG(kInfo) << "broker " << me << " leads " << what << " in place of broker " << from
                << (swap ? " (which follows now)" : "") << " (tail " << copy.tail.ToString() << ")";
  return Status::Ok();
}

}  // namespace nearstream::cluster
