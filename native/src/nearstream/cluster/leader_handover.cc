// A leader whose disk fails hands its replicated streamlets over (docs/cluster.md, "Faults"):
// its appends or transactional writes fail with STORAGE_ERROR (a write or fsync failed, or
// under `async` the last flush did), and without this the streamlet would take none until the
// disk is back, although an in-sync follower holds every chunk and transactional write it
// acknowledged. Kafka moves the leaders off a log directory that failed for the same reason.
// The hand-over is the swap an operator's `move --to <follower>` makes (replica_move.cc): the
// follower seals the streamlet here, copies what it lacks from this broker's memory (the
// streamlet's transaction scope included, open and prepared transactions with it) and takes the
// leadership with one compare-and-set; this broker follows then, and catches up once its disk
// takes writes again.
#include <algorithm>

#include "nearstream/cluster/zk_cluster.h"
#include "nearstream/common/clock.h"
#include "nearstream/common/log.h"
#include "nearstream/net/client.h"

namespace nearstream::cluster {

namespace {

// After a hand-over that failed (no follower answered, ZooKeeper out of reach), the
// streamlet is tried again this much later.
constexpr int64_t kHandOverRetryMs = 1000;
// A failure noted longer ago than this and not handed over (no follower was in sync) is
// forgotten: appends that still fail note it again.
constexpr int64_t kFailureMemoryMs = 10000;

}  // namespace

void ZkCluster::NoteStorageFailure(const std::string& name, uint32_t id) {
  MutexLock lock(&mu_);
  const bool fresh = storage_failed_.insert_or_assign({name, id}, MonotonicNowMs()).second;
  if (fresh) changed_.SignalAll();
}

void ZkCluster::HandOverFailedLeaderships(
    std::map<std::pair<std::string, uint32_t>, int64_t>* retry_at) {
  struct HandOver {
    std::pair<std::string, uint32_t> streamlet;
    uint32_t to = 0;
    std::string address;
  };
  std::vector<HandOver> due;
  {
    MutexLock lock(&mu_);
    const int64_t now = MonotonicNowMs();
    for (auto it = storage_failed_.begin(); it != storage_failed_.end();) {
      const auto& [name, id] = it->first;
      auto s = streams_.find(name);
      const bool leads = s != streams_.end() && id < s->second.owners.size() &&
                         s->second.owners[id] == options_.broker_id &&
                         s->second.config.replication > 1;
      if (!leads || now - it->second > kFailureMemoryMs) {
        retry_at->erase(it->first);
        it = storage_failed_.erase(it);
        continue;
      }
      auto retry = retry_at->find(it->first);
      if (retry == retry_at->end() || retry->second <= now) {
        // The first registered follower in sync; with none the streamlet waits for one.
        for (uint32_t f : s->second.replicas[id].isr) {
          if (f == options_.broker_id) continue;
          auto b = std::find_if(brokers_.begin(), brokers_.end(),
                                [f](const BrokerRecord& r) { return r.id == f; });
          if (b == brokers_.end()) continue;
          due.push_back({it->first, f, b->address});
          break;
        }
      }
      ++it;
    }
  }
  for (const HandOver& h : due) {
    const auto& [name, id] = h.streamlet;
    const std::string what = "streamlet " + std::to_string(id) + " of stream '" + name + "'";
    // Bounded as a replica's answer is: this runs on the catch-up thread, which a stopped
    // follower would otherwise hold for the client's default 30 s, its own copies waiting.
    // An in-sync follower copies little; one that takes longer is asked again a second later
    // and, if it took the leadership meanwhile, this broker no longer leads and asks nothing.
    Result<net::Client> follower = net::Client::Connect(h.address, kReplicaTimeoutMs);
    if (follower.ok()) follower->set_io_timeout_ms(kReplicaTimeoutMs);
    Status moved = follower.ok() ? follower->MoveStreamlet({name, id}) : follower.status();
    if (!moved.ok()) {
      NS_LOG(kWarning) << "handing " << what << " over to broker " << h.to
                       << " after a failed write here failed (retrying): " << moved.ToString();
      (*retry_at)[h.streamlet] = MonotonicNowMs() + kHandOverRetryMs;
      continue;
    }
    NS_LOG(kWarning) << "broker " << h.to << " leads " << what
                     << " now: a write or flush of it failed on this broker's disk";
    MutexLock lock(&mu_);
    storage_failed_.erase(h.streamlet);
    retry_at->erase(h.streamlet);
  }
}

}  // namespace nearstream::cluster
