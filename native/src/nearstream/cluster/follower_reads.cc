// Follower reads (docs/cluster.md, "Follower reads"): a leader tells each in-sync follower what
// its readers can see (ReplicaPublished views), and a follower keeps its copy in memory as well
// as in files and serves reads from it, never past what the leader's readers saw.
//
// Views go from the ns-views thread here, every few milliseconds when a streamlet changed, on
// connections of their own: never on the append path, so a slow or stopped follower's view
// holds no batch of chunks. A view publishes only what the leader published, which every
// in-sync follower acknowledged before, so it never overtakes the chunks it names; and the
// follower checks that it holds every byte a view publishes anyway. A view the follower cannot
// apply changes nothing in the in-sync set: the files the ReplicaAppends keep are the copy; only
// its readers wait (or go to the leader) until a whole view applies.
#include <algorithm>
#include <map>
#include <tuple>

#include "nearstream/cluster/zk_cluster.h"
#include "nearstream/common/clock.h"
#include "nearstream/common/log.h"

namespace nearstream::cluster {

namespace {

// How often ns-views looks for streamlets whose followers were not told of their last changes
// (a quiet streamlet's readers on followers trail its leader's by about this much).
constexpr int kViewsPollMs = 5;
// How long ns-views waits for a follower's answer (a whole view loads the follower's files).
constexpr int kViewTimeoutMs = 30000;

}  // namespace

Status ZkCluster::AcceptPublished(const net::ReplicaPublishedRequest& m) {
  ASSIGN_OR_RETURN(FollowerTarget target,
                   FollowerWriteTarget(m.stream, m.streamlet, m.leader_epoch));
  storage::Streamlet& s = *target.streamlet;
  FollowerCopy& copy = *target.copy;
  // The segments a whole view (or one after a commit or a catch-up) publishes from files are
  // read before the copy's lock, which every chunk from the leader takes: see
  // Streamlet::LoadMirrorSegments.
  const bool whole = m.since == 0;
  storage::Streamlet::MirrorLoads loaded = s.LoadMirrorSegments(m.view, whole, WallNowMs());
  std::lock_guard<std::mutex> lock(copy.mu);
  RETURN_IF_ERROR(CheckFollowerWrite(m.stream, m.streamlet, m.leader, m.leader_epoch));
  if (!whole && (!copy.mirror_valid.load(std::memory_order_acquire) ||
                 copy.mirror_epoch != m.leader_epoch || copy.mirror_version != m.since)) {
    return Status::PositionOutOfRange("broker " + std::to_string(options_.broker_id) +
                                      "'s copy in memory of streamlet " +
                                      std::to_string(m.streamlet) + " of stream '" + m.stream +
                                      "' holds no view " + std::to_string(m.since) + " of epoch " +
                                      std::to_string(m.leader_epoch) + "; it needs a whole view");
  }
  // Push subscriptions served from a copy in memory that is dropped end (their readers
  // subscribe again); parked fetches find the streamlet again after the view.
  bool lost = false;
  if (whole) {
    lost = copy.ResetMirror(s);
    s.SetMirror(true);
  }
  if (Status applied = s.ApplyPublished(m.view, WallNowMs(), &loaded); !applied.ok()) {
    lost = copy.ResetMirror(s) || lost;
    if (lost && on_lost_) on_lost_(target.stream);
    return applied;
  }
  if (lost && on_lost_) on_lost_(target.stream);
  copy.mirror_epoch = m.leader_epoch;
  copy.mirror_version = m.view.version;
  copy.mirror_valid.store(true, std::memory_order_release);
  if (on_published_) on_published_(target.stream, m.streamlet);
  return Status::Ok();
}

bool ZkCluster::ServesFollowerRead(const std::string& stream, uint32_t streamlet) const {
  std::shared_ptr<FollowerCopy> copy;
  {
    MutexLock lock(&mu_);
    auto it = streams_.find(stream);
    if (!joined() || it == streams_.end() || streamlet >= it->second.replicas.size()) return false;
    if (!it->second.FollowsInSync(streamlet, options_.broker_id) ||
        rebuilding_.contains({stream, streamlet})) {
      return false;
    }
    auto c = copies_.find({stream, streamlet});
    if (c == copies_.end()) return false;
    copy = c->second;
  }
  return copy->mirror_valid.load(std::memory_order_acquire);
}

std::optional<net::ReplicaPublishedRequest> ZkCluster::ViewFor(const std::string& name, uint32_t id,
                                                               uint64_t epoch,
                                                               const ViewLink& link) {
  std::shared_ptr<storage::Stream> stream = store_->Find(name);
  storage::Streamlet* s = stream == nullptr ? nullptr : stream->streamlet(id);
  if (s == nullptr) return std::nullopt;
  // What the follower applied last is of this leadership only: another epoch starts whole.
  const uint64_t since = link.told_epoch == epoch ? link.told : 0;
  if (since != 0 && s->published_version() <= since) return std::nullopt;
  net::ReplicaPublishedRequest m;
  m.stream = name;
  m.streamlet = id;
  m.leader = options_.broker_id;
  m.leader_epoch = epoch;
  m.since = since;
  m.view = s->PublishedSince(since);
  return m;
}

void ZkCluster::ViewTold(ViewLink& link, const net::ReplicaPublishedRequest& m,
                         const Status& answer) {
  if (answer.ok()) {
    link.told = m.view.version;
    link.told_epoch = m.leader_epoch;
    return;
  }
  // The follower's copy in memory is not where the view started (it restarted, caught up, or
  // failed a view): a whole view next.
  link.told = 0;
  if (!answer.IsPositionOutOfRange()) {
    NS_LOG(kWarning) << "a view of streamlet " << m.streamlet << " of stream '" << m.stream
                     << "' was refused: " << answer.ToString();
  }
}

void ZkCluster::ViewsLoop() {
  // This thread's alone: no lock.
  std::map<std::tuple<std::string, uint32_t, uint32_t>, ViewLink> links;
  while (true) {
    struct Due {
      std::string name;
      uint32_t id;
      uint64_t epoch;
      std::string address;
      ViewLink* link;
    };
    std::vector<Due> due;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      changed_.WaitFor(&mu_, std::chrono::milliseconds(kViewsPollMs));
      if (stopping_) return;
      for (const auto& [name, record] : streams_) {
        if (record.config.replication < 2) continue;
        for (uint32_t i = 0; i < record.owners.size(); ++i) {
          if (record.owners[i] != options_.broker_id) continue;
          for (uint32_t f : record.replicas[i].isr) {
            if (f == options_.broker_id) continue;
            auto b = std::find_if(brokers_.begin(), brokers_.end(),
                                  [f](const BrokerRecord& r) { return r.id == f; });
            if (b == brokers_.end()) continue;
            due.push_back(
                Due{name, i, record.replicas[i].leader_epoch, b->address, &links[{name, i, f}]});
          }
        }
      }
    }
    for (Due& d : due) {
      std::optional<net::ReplicaPublishedRequest> view = ViewFor(d.name, d.id, d.epoch, *d.link);
      if (!view.has_value()) continue;
      std::optional<net::Client>& client = d.link->client;
      if (!client.has_value() || !client->ok()) {
        client.reset();
        Result<net::Client> connected = net::Client::Connect(d.address, kReplicaTimeoutMs);
        if (!connected.ok()) continue;  // the next chunk finds the follower failed, if it is
        connected->set_io_timeout_ms(kReplicaTimeoutMs);
        client.emplace(std::move(*connected));
      }
      Bytes body;
      ByteWriter w(&body);
      net::EncodeReplicaPublishedRequest(w, *view);
      Result<uint64_t> sent = client->Send(net::Opcode::kReplicaPublished, body);
      Status answer =
          sent.ok() ? client->AwaitAnswers(net::Opcode::kReplicaPublished, *sent, 1, kViewTimeoutMs)
                    : sent.status();
      // A timeout leaves the connection up with the answer still to come, which the next view
      // would take for its own: a new connection instead.
      if (!client->ok() || answer.IsIoError()) client.reset();
      ViewTold(*d.link, *view, answer);
    }
  }
}

}  // namespace nearstream::cluster
