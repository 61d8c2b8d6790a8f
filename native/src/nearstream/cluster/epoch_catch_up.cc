// Catching up by leader epoch (docs/protocol.md, "Catching up by leader epoch"): a follower that
// must be in sync again keeps the part of its copy it can prove equal to its leader's instead of
// copying the whole streamlet. Every segment is written by one leader in one epoch (a new leader
// loads its copy, which closes every group, and starts its epoch at the next group id), so two
// replicas' files of one segment are prefixes of one another unless one holds groups of an epoch
// the other never had: those go first, found by the epoch histories; the rest is cut to the
// leader's lengths and its chunks checked.
#include <algorithm>
#include <limits>
#include <map>

#include "nearstream/cluster/leader_epochs.h"
#include "nearstream/cluster/zk_cluster.h"
#include "nearstream/common/log.h"
#include "nearstream/storage/chunk.h"

namespace nearstream::cluster {

namespace {

// A replica's history as it stands, with the first epoch implied: copies made while the
// streamlet's first leader (epoch 0) still leads have no file.
Result<std::vector<LeaderEpoch>> HistoryOf(storage::Env* env, const std::string& dir,
                                           uint64_t epoch_now) {
  ASSIGN_OR_RETURN(std::vector<LeaderEpoch> history, ReadLeaderEpochs(env, dir));
  if (history.empty() && epoch_now == 0) history.push_back({0, 0});
  return history;
}

struct LocalSegment {
  std::string path;
  uint64_t bytes = 0;
};

// The segment files of a copy, by (group, segment).
Result<std::map<std::pair<uint64_t, uint64_t>, LocalSegment>> LocalSegments(
    storage::Env* env, const storage::Streamlet& s) {
  std::map<std::pair<uint64_t, uint64_t>, LocalSegment> out;
  if (!env->Exists(s.dir())) return out;
  ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(s.dir()));
  for (const std::string& name : names) {
    uint64_t group = 0, segment = 0;
    if (!storage::Streamlet::ParseGroupSegmentName(name, &group, &segment)) continue;
    const std::string path = s.GroupSegmentPath(group, segment);
    ASSIGN_OR_RETURN(std::unique_ptr<storage::WritableFile> file, env->OpenAppendable(path));
    out[{group, segment}] = LocalSegment{path, file->size()};
  }
  return out;
}

Status CutTo(storage::Env* env, const std::string& path, uint64_t bytes) {
  ASSIGN_OR_RETURN(std::unique_ptr<storage::WritableFile> file, env->OpenAppendable(path));
  if (file->size() <= bytes) return Status::Ok();
  RETURN_IF_ERROR(file->Truncate(bytes));
  return file->Sync();
}

}  // namespace

Result<uint64_t> ZkCluster::CheckLeaderFor(const net::ReplicaCheckRequest& m) {
  const std::string what =
      "streamlet " + std::to_string(m.streamlet) + " of stream '" + m.stream + "'";
  uint64_t epoch = 0;
  // Whether the cache names the sender a replica; the leader's epoch goes to `epoch`.
  auto check = [&]() -> Result<bool> {
    MutexLock lock(&mu_);
    auto it = streams_.find(m.stream);
    if (it == streams_.end() || m.streamlet >= it->second.owners.size()) {
      return Status::StreamNotFound("stream '" + m.stream + "' does not exist");
    }
    const StreamRecord& record = it->second;
    if (record.owners[m.streamlet] != options_.broker_id) {
      return Status::NotOwner("broker " + std::to_string(options_.broker_id) + " does not lead " +
                              what);
    }
    epoch = record.replicas[m.streamlet].leader_epoch;
    return record.Follows(m.streamlet, m.follower);
  };
  ASSIGN_OR_RETURN(bool follows, check());
  if (!follows) {
    // A replica move's target asks right after it joined the replicas: the watch may not have
    // told this broker yet.
    RETURN_IF_ERROR(ReadStream(m.stream).status());
    ASSIGN_OR_RETURN(follows, check());
  }
  if (!follows) {
    return Status::InvalidArgument("broker " + std::to_string(m.follower) +
                                   " is not a replica of " + what);
  }
  return epoch;
}

Result<net::ReplicaCheckResponse> ZkCluster::CheckReplica(const net::ReplicaCheckRequest& m) {
  std::shared_ptr<storage::Stream> stream = store_->Find(m.stream);
  storage::Streamlet* s = stream == nullptr ? nullptr : stream->streamlet(m.streamlet);
  if (s == nullptr) return Status::StreamNotFound("stream '" + m.stream + "' does not exist");
  net::ReplicaCheckResponse r;
  ASSIGN_OR_RETURN(r.leader_epoch, CheckLeaderFor(m));
  ASSIGN_OR_RETURN(std::vector<LeaderEpoch> history,
                   HistoryOf(storage::Env::Default(), s->dir(), r.leader_epoch));
  for (const LeaderEpoch& e : history) r.epochs.push_back({e.epoch, e.start_group});
  for (const storage::Streamlet::SegmentBytes& seg : s->Segments()) {
    r.segments.push_back({seg.group, seg.segment, seg.bytes});
  }
  return r;
}

void ZkCluster::StartLeaderEpoch(const std::string& name, uint32_t id, storage::Streamlet& s,
                                 uint64_t epoch) {
  storage::Env* env = storage::Env::Default();
  // The copy this broker leads from was made in the epoch before (its history, taken at its
  // join, ends there; none at all while the first leader led).
  Result<std::vector<LeaderEpoch>> history = HistoryOf(env, s.dir(), epoch == 0 ? 0 : epoch - 1);
  Status written = history.status();
  if (history.ok()) {
    if (history->empty() || history->back().epoch < epoch) {
      history->push_back(
          {epoch, std::max(s.next_group_id(), history->empty() ? 0 : history->back().start_group)});
    }
    written = WriteLeaderEpochs(env, s.dir(), *history);
  }
  if (written.ok()) return;
  // A history that ends before this epoch makes followers copy the whole streamlet
  // (KeepWhatMatches checks it against the leader's epoch), so nothing else is needed.
  NS_LOG(kError) << "recording leader epoch " << epoch << " of streamlet " << id << " of stream "
                 << name << " failed (" << written.ToString() << "); its followers copy it whole";
}

Result<storage::Position> ZkCluster::KeepWhatMatches(net::Client& leader, const std::string& name,
                                                     uint32_t id, storage::Streamlet& s,
                                                     uint64_t epoch_now) {
  storage::Env* env = storage::Env::Default();
  ASSIGN_OR_RETURN(std::vector<LeaderEpoch> mine, HistoryOf(env, s.dir(), epoch_now));
  if (mine.empty()) return Status::InvalidArgument("no epoch history here");
  ASSIGN_OR_RETURN(net::ReplicaCheckResponse check,
                   leader.ReplicaCheck({name, id, options_.broker_id}));
  std::vector<LeaderEpoch> theirs;
  for (const net::EpochStart& e : check.epochs) theirs.push_back({e.epoch, e.start_group});
  // A history that does not reach the epoch the leader leads in (its record failed to be
  // written at its promotion) cannot say where that epoch's groups start.
  if (theirs.empty() || theirs.back().epoch != check.leader_epoch) {
    return Status::InvalidArgument("the leader's epoch history does not reach its epoch " +
                                   std::to_string(check.leader_epoch));
  }
  ASSIGN_OR_RETURN(uint64_t diverges_at, DivergesAt(theirs, mine.back().epoch));
  ASSIGN_OR_RETURN(auto local, LocalSegments(env, s));
  std::map<std::pair<uint64_t, uint64_t>, uint32_t> leader_bytes;
  for (const net::SegmentExtent& seg : check.segments) {
    leader_bytes[{seg.group, seg.segment}] = seg.bytes;
  }
  uint64_t kept = 0;
  for (auto& [key, file] : local) {
    auto it = leader_bytes.find(key);
    if (key.first >= diverges_at || it == leader_bytes.end()) {
      // Another epoch's group, or a segment the leader does not retain.
      RETURN_IF_ERROR(env->RemoveFile(file.path));
      file.bytes = 0;
      continue;
    }
    // One leader wrote both: a prefix of the leader's, up to the last whole chunk that checks.
    uint64_t keep = std::min<uint64_t>(file.bytes, it->second);
    if (keep > 0) {
      ASSIGN_OR_RETURN(Bytes data, env->ReadFile(file.path));
      keep = storage::ScanWholeChunks(data.data(), std::min<size_t>(keep, data.size()),
                                      [](const storage::ChunkHeader&, size_t) {});
    }
    RETURN_IF_ERROR(CutTo(env, file.path, keep));
    file.bytes = keep;
    kept += keep;
  }
  // The copy goes on from the first segment this copy holds less of (leader order).
  for (const net::SegmentExtent& seg : check.segments) {
    auto it = local.find({seg.group, seg.segment});
    const uint64_t have = it == local.end() ? 0 : it->second.bytes;
    if (have < seg.bytes) {
      catch_up_kept_bytes_.fetch_add(kept, std::memory_order_relaxed);
      NS_LOG(kInfo) << "catching up streamlet " << id << " of stream " << name << ": keeps " << kept
                    << " bytes, copies from group " << seg.group << " segment " << seg.segment
                    << " offset " << have;
      return storage::Position{seg.group, seg.segment, static_cast<uint32_t>(have)};
    }
  }
  // Everything the leader has published: from its end.
  catch_up_kept_bytes_.fetch_add(kept, std::memory_order_relaxed);
  if (check.segments.empty()) return storage::Position{};
  const net::SegmentExtent& last = check.segments.back();
  return storage::Position{last.group, last.segment, last.bytes};
}

Status ZkCluster::MatchSealedLeader(net::Client& leader, const std::string& name, uint32_t id,
                                    storage::Streamlet& s) {
  storage::Env* env = storage::Env::Default();
  ASSIGN_OR_RETURN(net::ReplicaCheckResponse check,
                   leader.ReplicaCheck({name, id, options_.broker_id}));
  ASSIGN_OR_RETURN(auto local, LocalSegments(env, s));
  for (const net::SegmentExtent& seg : check.segments) {
    auto it = local.find({seg.group, seg.segment});
    const uint64_t have = it == local.end() ? 0 : it->second.bytes;
    if (have < seg.bytes) {
      return Status::PositionOutOfRange("the copy holds " + std::to_string(have) +
                                        " bytes of group " + std::to_string(seg.group) +
                                        " segment " + std::to_string(seg.segment) +
                                        "; the sealed leader holds " + std::to_string(seg.bytes));
    }
    // Longer: a chunk the leader cut off after its replication failed, never acknowledged.
    if (it == local.end()) continue;
    if (have > seg.bytes) RETURN_IF_ERROR(CutTo(env, it->second.path, seg.bytes));
    local.erase(it);
  }
  for (const auto& [key, file] : local) RETURN_IF_ERROR(env->RemoveFile(file.path));
  std::vector<LeaderEpoch> history;
  for (const net::EpochStart& e : check.epochs) history.push_back({e.epoch, e.start_group});
  return WriteLeaderEpochs(env, s.dir(), history);
}

}  // namespace nearstream::cluster
