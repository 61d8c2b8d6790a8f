// Retention on followers (docs/cluster.md, "Replication"). A follower keeps its copy as segment
// files only, so the leader's retention pass (Streamlet::Maintain, on the streamlet in memory)
// never sees it. Rather than apply the retention rules again to files whose groups it cannot
// tell open from closed, the follower asks the leader what it still retains (Metadata: each
// group's first segment) and removes every file before that: the leader decides once, and a
// follower that becomes leader holds what the old leader held, never less.
#include <algorithm>
#include <memory>
#include <vector>

#include "nearstream/cluster/zk_cluster.h"
#include "nearstream/common/log.h"

namespace nearstream::cluster {

namespace {

constexpr int kMetadataTimeoutMs = 2000;
// Files a pass detaches from one copy at most: each keeps a descriptor open until the copy's
// lock is released, and a copy far behind its leader's retention (its leader was out of reach
// for a while) must not take a broker's descriptors. The rest go at the next pass, a second
// later.
constexpr size_t kMaxDetachedPerPass = 128;

// Whether segment `segment` of group `group` comes before what `leader` retains: in a group
// before its first retained one, or before the first retained segment of its own group.
bool BeforeHead(const net::StreamletMetadata& leader, uint64_t group, uint64_t segment) {
  if (leader.groups.empty()) return false;
  if (group < leader.groups.front().group_id) return true;
  for (const net::GroupMetadata& g : leader.groups) {
    if (g.group_id == group) return g.segment_count > 0 && segment < g.first_segment;
  }
  return false;  // a group the leader holds no segment of, after its head: kept
}

}  // namespace

void ZkCluster::TrimFollowerCopies() {
  struct Followed {
    std::string stream;
    uint32_t id;
    std::string leader_address;
    std::shared_ptr<FollowerCopy> copy;
  };
  std::vector<Followed> followed;
  {
    MutexLock lock(&mu_);
    if (stopping_ || !connected_) return;
    for (const auto& [name, record] : streams_) {
      if (record.config.replication < 2) continue;
      if (record.config.retention_bytes <= 0 && record.config.retention_ms <= 0) continue;
      for (uint32_t i = 0; i < record.owners.size(); ++i) {
        if (!FollowsInSyncLocked(record, name, i)) continue;
        const uint32_t leader = record.owners[i];
        auto b = std::find_if(brokers_.begin(), brokers_.end(),
                              [leader](const BrokerRecord& r) { return r.id == leader; });
        if (b == brokers_.end()) continue;
        std::shared_ptr<FollowerCopy>& c = copies_[{name, i}];
        if (c == nullptr) c = std::make_shared<FollowerCopy>();
        followed.push_back({name, i, b->address, c});
      }
    }
  }
  for (const Followed& f : followed) {
    std::shared_ptr<storage::Stream> stream = store_->Find(f.stream);
    storage::Streamlet* s = stream == nullptr ? nullptr : stream->streamlet(f.id);
    if (s == nullptr) continue;
    Result<net::Client> client = net::Client::Connect(f.leader_address, kMetadataTimeoutMs);
    Result<net::MetadataResponse> meta = client.status();
    if (client.ok()) {
      client->set_io_timeout_ms(kMetadataTimeoutMs);
      meta = client->Metadata(f.stream, {f.id});
    }
    if (!meta.ok() || meta->streamlets.size() != 1) {
      // Tried again at the next pass; until then the copy keeps what it has.
      NS_LOG(kWarning) << "retention on a follower: what the leader of streamlet " << f.id
                       << " of stream " << f.stream << " retains is unknown ("
                       << (meta.ok() ? std::string("no such streamlet in its answer")
                                     : meta.status().ToString())
                       << "); its files stay for now";
      continue;
    }
    const net::StreamletMetadata& leader = meta->streamlets[0];
    // Under the copy's lock, which a promotion takes before it loads the files, and with the
    // role checked again: a leader's files are never trimmed here. The lock also holds this
    // copy's writes, and with them every acknowledgement of the streamlet, so under it the files
    // only lose their names; their blocks are freed once it is released (`detached`, declared
    // first, is destroyed after `lock`). Freed under it, a pass that removed a few segments
    // held the streamlet's appends for up to 0.28 s on a file system mounted with `discard`.
    std::vector<std::unique_ptr<storage::DetachedFile>> detached;
    std::lock_guard<std::mutex> lock(f.copy->mu);
    {
      MutexLock cache(&mu_);
      auto it = streams_.find(f.stream);
      if (it == streams_.end() || !FollowsInSyncLocked(it->second, f.stream, f.id)) continue;
    }
    storage::Env* env = storage::Env::Default();
    Result<std::vector<std::string>> files = env->ListDir(s->dir());
    if (!files.ok()) continue;
    for (const std::string& file : *files) {
      if (detached.size() >= kMaxDetachedPerPass) break;
      uint64_t group = 0, segment = 0;
      if (!storage::Streamlet::ParseGroupSegmentName(file, &group, &segment)) continue;
      if (!BeforeHead(leader, group, segment)) continue;
      if (f.copy->file != nullptr && f.copy->file_at.group == group &&
          f.copy->file_at.segment == segment) {
        continue;  // the file the next chunk goes to
      }
      std::string path = s->dir();
      path.append("/").append(file);
      Result<std::unique_ptr<storage::DetachedFile>> removed = env->DetachFile(path);
      if (!removed.ok()) {
        NS_LOG(kWarning) << "retention on a follower: " << removed.status().ToString();
        continue;
      }
      detached.push_back(std::move(*removed));
    }
  }
}

bool ZkCluster::FollowsInSyncLocked(const StreamRecord& record, const std::string& name,
                                    uint32_t id) const {
  if (id >= record.owners.size() || !record.Follows(id, options_.broker_id)) return false;
  const std::vector<uint32_t>& isr = record.replicas[id].isr;
  return std::find(isr.begin(), isr.end(), options_.broker_id) != isr.end() &&
         !rebuilding_.contains({name, id});
}

}  // namespace nearstream::cluster
