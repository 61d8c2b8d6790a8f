#include "nearstream/cluster/zk_cluster.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <atomic>

#include "nearstream/cluster/leader_epochs.h"
#include "nearstream/cluster/zk_status.h"
#include "nearstream/common/clock.h"
#include "nearstream/common/log.h"
#include "nearstream/common/thread_name.h"

namespace nearstream::cluster {

namespace {

// How much one Fetch of a move's or a catch-up's copy asks for.
constexpr uint32_t kMoveFetchBytes = 1u << 20;
// How long a move waits for the transactions that hold chunks of the streamlet to end.
constexpr int64_t kMoveTxnWaitMs = 60000;

}  // namespace

ZkCluster::ZkCluster(ClusterOptions options, storage::StreamStore* store)
    : options_(std::move(options)), store_(store) {
  // Replicated streams' transactions reach their followers through this cluster.
  store_->set_txn_mirror(this);
}

ZkCluster::~ZkCluster() {
  Stop();
  store_->set_txn_mirror(nullptr);
}

void ZkCluster::Watcher(zhandle_t* /*zh*/, int type, int state, const char* path, void* context) {
  auto* self = static_cast<ZkCluster*>(context);
  MutexLock lock(&self->mu_);
  if (type == ZOO_SESSION_EVENT) {
    if (state == ZOO_CONNECTED_STATE) {
      if (!self->connected_) NS_LOG(kInfo) << "connected to ZooKeeper at " << self->servers_;
      self->connected_ = true;
    } else if (state == ZOO_EXPIRED_SESSION_STATE) {
      NS_LOG(kWarning) << "ZooKeeper session expired";
      self->connected_ = false;
      self->expired_ = true;
      // The session held /controller, if this broker was the controller: it is gone with it.
      self->is_controller_ = false;
      self->controller_id_ = net::kNoController;
    } else {
      // Connecting again: the cache serves meanwhile, placement changes are refused.
      if (self->connected_) {
        NS_LOG(kWarning) << "lost ZooKeeper at " << self->servers_ << "; reconnecting";
      }
      self->connected_ = false;
    }
  } else {
    const std::string p = path == nullptr ? "" : path;
    const std::string streams = self->Path("/streams/");
    if (p.rfind(self->Path("/brokers"), 0) == 0) self->brokers_dirty_ = true;
    if (p == self->Path("/controller")) self->controller_dirty_ = true;
    if (type == ZOO_DELETED_EVENT && p.rfind(streams, 0) == 0) {
      self->deleted_.insert(p.substr(streams.size()));
    } else if (type == ZOO_CHANGED_EVENT && p.rfind(streams, 0) == 0) {
      self->changed_streams_.insert(p.substr(streams.size()));
    } else if (p.rfind(self->Path("/streams"), 0) == 0) {
      self->streams_dirty_ = true;
    }
  }
  self->changed_.SignalAll();
}

Status ZkCluster::Start(const std::string& address) {
  address_ = address;
  ASSIGN_OR_RETURN(ZkAddress zookeeper, ParseZkAddress(options_.zookeeper));
  servers_ = zookeeper.servers;
  root_ = zookeeper.root;
  // The C client logs every failed reconnect, dozens a second while ZooKeeper is down; the
  // watcher logs each change of the session's state instead.
  zoo_set_debug_level(static_cast<ZooLogLevel>(0));
  RETURN_IF_ERROR(Connect());
  RETURN_IF_ERROR(EnsureNodes());
  RETURN_IF_ERROR(Register());
  RETURN_IF_ERROR(ReadBrokers());
  RETURN_IF_ERROR(ReadStreams());
  RETURN_IF_ERROR(Elect());
  CreateLocalStreams();
  RETURN_IF_ERROR(ClaimLeadersIsr());
  joined_.store(true, std::memory_order_release);
  refresher_ = std::thread([this] { RefreshLoop(); });
  NameThread(refresher_, "zk-refresh");
  catchup_ = std::thread([this] { CatchUpLoop(); });
  NameThread(catchup_, "ns-catchup");
  if (options_.follower_reads) {
    views_ = std::thread([this] { ViewsLoop(); });
    NameThread(views_, "ns-views");
  }
  NS_LOG(kInfo) << "broker " << options_.broker_id << " joined the cluster at " << servers_ << root_
                << " as " << address_ << " on host " << options_.host;
  return Status::Ok();
}

void ZkCluster::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    changed_.SignalAll();
  }
  if (refresher_.joinable()) refresher_.join();
  if (catchup_.joinable()) catchup_.join();
  if (views_.joinable()) views_.join();
  MutexLock lock(&zk_mu_);
  if (zh_ != nullptr) {
    zookeeper_close(zh_);  // ends the session: the broker's node goes at once
    zh_ = nullptr;
  }
}

Status ZkCluster::Connect() {
  {
    MutexLock lock(&mu_);
    connected_ = false;
    expired_ = false;
  }
  {
    MutexLock lock(&zk_mu_);
    if (zh_ != nullptr) zookeeper_close(zh_);
    zh_ = zookeeper_init(servers_.c_str(), &ZkCluster::Watcher, options_.session_timeout_ms,
                         nullptr, this, 0);
    if (zh_ == nullptr) {
      return Status::InvalidArgument("cannot start a ZooKeeper client for '" + servers_ + "'");
    }
  }
  const int64_t deadline = MonotonicNowMs() + options_.connect_timeout_ms;
  int64_t next_log = MonotonicNowMs() + 5000;
  MutexLock lock(&mu_);
  while (!connected_ && !stopping_) {
    const int64_t now = MonotonicNowMs();
    if (now >= deadline) {
      return Status::ClusterUnavailable("cannot reach ZooKeeper at " + servers_ + " within " +
                                        std::to_string(options_.connect_timeout_ms) + " ms");
    }
    if (now >= next_log) {
      NS_LOG(kWarning) << "still waiting for ZooKeeper at " << servers_;
      next_log = now + 5000;
    }
    changed_.WaitFor(&mu_, std::chrono::milliseconds(std::min<int64_t>(deadline - now, 500)));
  }
  if (stopping_) return Status::ShuttingDown("the broker is stopping");
  return Status::Ok();
}

Status ZkCluster::EnsureNodes() {
  MutexLock lock(&zk_mu_);
  for (const std::string& node :
       {std::string(), std::string("/brokers"), std::string("/brokers/ids"),
        std::string("/streams"), std::string("/controller_epoch")}) {
    const std::string path = Path(node);
    int rc = zoo_create(zh_, path.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
    if (rc != ZOK && rc != ZNODEEXISTS) return ZkError("create " + path, rc);
  }
  return Status::Ok();
}

Status ZkCluster::Register() {
  const std::string path = Path("/brokers/ids/" + std::to_string(options_.broker_id));
  const std::string data = FormatBrokerRecord({options_.broker_id, address_, options_.host});
  // A node left by this id's previous process lives until that session expires: wait it out.
  const int64_t deadline = MonotonicNowMs() + 2 * int64_t{options_.session_timeout_ms};
  while (true) {
    int rc;
    {
      MutexLock lock(&zk_mu_);
      rc = zoo_create(zh_, path.c_str(), data.data(), static_cast<int>(data.size()),
                      &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, nullptr, 0);
    }
    if (rc == ZOK) return Status::Ok();
    if (rc != ZNODEEXISTS) return ZkError("register " + path, rc);
    if (MonotonicNowMs() >= deadline) {
      return Status::InvalidArgument("broker id " + std::to_string(options_.broker_id) +
                                     " is registered by another live broker (" + path + ")");
    }
    NS_LOG(kWarning) << path << " exists (a previous session of this id?); waiting for it to go";
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

Result<std::vector<std::string>> ZkCluster::Children(const std::string& relative, bool watch) {
  MutexLock lock(&zk_mu_);
  String_vector children{};
  int rc = zoo_get_children(zh_, Path(relative).c_str(), watch ? 1 : 0, &children);
  if (rc != ZOK) return ZkError("list " + Path(relative), rc);
  std::vector<std::string> out(children.data, children.data + children.count);
  deallocate_String_vector(&children);
  return out;
}

Status ZkCluster::ReadBrokers() {
  {
    MutexLock lock(&mu_);
    brokers_dirty_ = false;
  }
  ASSIGN_OR_RETURN(std::vector<std::string> ids, Children("/brokers/ids", /*watch=*/true));
  std::vector<BrokerRecord> brokers;
  std::string buffer(kMaxZkNodeBytes, '\0');
  for (const std::string& id_text : ids) {
    uint32_t id = 0;
    try {
      id = static_cast<uint32_t>(std::stoul(id_text));
    } catch (const std::exception&) {
      continue;  // not a broker node
    }
    int len = kMaxZkNodeBytes;
    int rc;
    {
      MutexLock lock(&zk_mu_);
      rc = zoo_get(zh_, Path("/brokers/ids/" + id_text).c_str(), 0, buffer.data(), &len, nullptr);
    }
    if (rc == ZNONODE) continue;  // gone since the listing
    if (rc != ZOK) return ZkError("read broker " + id_text, rc);
    auto record = ParseBrokerRecord(id, buffer.substr(0, std::max(len, 0)));
    if (!record.ok()) {
      NS_LOG(kWarning) << record.status().ToString();
      continue;
    }
    brokers.push_back(*record);
  }
  std::sort(brokers.begin(), brokers.end(),
            [](const BrokerRecord& a, const BrokerRecord& b) { return a.id < b.id; });
  std::vector<BrokerRecord> before;
  {
    MutexLock lock(&mu_);
    before.swap(brokers_);
    brokers_ = std::move(brokers);
  }
  ReportLostBrokers(before);
  return Status::Ok();
}

Result<std::optional<StreamRecord>> ZkCluster::FetchStream(const std::string& name, bool watch) {
  std::string buffer(kMaxZkNodeBytes, '\0');
  int len = kMaxZkNodeBytes;
  Stat stat{};
  int rc;
  {
    MutexLock lock(&zk_mu_);
    rc = zoo_get(zh_, Path("/streams/" + name).c_str(), watch ? 1 : 0, buffer.data(), &len, &stat);
  }
  if (rc == ZNONODE) return std::optional<StreamRecord>();
  if (rc != ZOK) return ZkError("read stream " + name, rc);
  ASSIGN_OR_RETURN(StreamRecord record,
                   ParseStreamRecord(buffer.substr(0, std::max(len, 0)), stat.version));
  return std::optional<StreamRecord>(std::move(record));
}

Result<bool> ZkCluster::ReadStream(const std::string& name) {
  ASSIGN_OR_RETURN(std::optional<StreamRecord> record, FetchStream(name, /*watch=*/true));
  if (!record.has_value()) return false;
  Install(name, std::move(*record));
  return true;
}

Status ZkCluster::ReadStreams() {
  {
    MutexLock lock(&mu_);
    streams_dirty_ = false;
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, Children("/streams", /*watch=*/true));
  {
    MutexLock lock(&mu_);
    for (auto it = streams_.begin(); it != streams_.end();) {
      if (std::find(names.begin(), names.end(), it->first) != names.end()) {
        ++it;
        continue;
      }
      if (!deleted_.contains(it->first)) {
        NS_LOG(kWarning) << "stream " << it->first << " is gone from ZooKeeper without a deletion"
                         << " this broker saw; its local data is kept";
      }
      it = streams_.erase(it);
    }
  }
  for (const std::string& name : names) {
    bool known;
    {
      MutexLock lock(&mu_);
      known = streams_.contains(name);
    }
    // Placements do not change after the create yet: a known stream needs no re-read.
    if (!known) RETURN_IF_ERROR(ReadStream(name).status());
  }
  return Status::Ok();
}

void ZkCluster::DeleteLocalStreams() {
  std::set<std::string> deleted;
  {
    MutexLock lock(&mu_);
    deleted.swap(deleted_);
    for (const std::string& name : deleted) streams_.erase(name);
  }
  // Only on a deletion a watch saw: never for a stream that merely is not in ZooKeeper (a broker
  // joining with old data, an ensemble that lost its data), so no data goes by accident.
  for (const std::string& name : deleted) {
    std::shared_ptr<storage::Stream> stream = store_->Find(name);
    if (stream != nullptr && store_->Delete(name).ok()) {
      NS_LOG(kInfo) << "stream " << name << " was deleted through another broker";
      if (on_deleted_) on_deleted_(stream);
    }
  }
}

void ZkCluster::CreateLocalStreams() {
  std::vector<StreamRecord> placed;
  {
    MutexLock lock(&mu_);
    for (const auto& [name, record] : streams_) placed.push_back(record);
  }
  for (const StreamRecord& record : placed) {
    const storage::StreamConfig& config = record.config;
    if (store_->Find(config.name) != nullptr) continue;
    Status s = store_->Create(config);
    if (!s.ok() && !s.IsStreamExists()) {
      NS_LOG(kError) << "cannot create the local copy of stream " << config.name << ": "
                     << s.ToString();
      continue;
    }
    if (!s.ok() || config.replication < 2) continue;
    // A new replica of a streamlet still led by its first leader holds that epoch's chunks
    // only: its history says so, so that its first catch-up can keep them (docs/protocol.md,
    // "Catching up by leader epoch").
    std::shared_ptr<storage::Stream> stream = store_->Find(config.name);
    for (uint32_t i = 0; stream != nullptr && i < record.replicas.size(); ++i) {
      storage::Streamlet* streamlet = stream->streamlet(i);
      if (streamlet == nullptr || record.replicas[i].leader_epoch != 0) continue;
      storage::Env* env = storage::Env::Default();
      Status seeded = env->CreateDirs(streamlet->dir());
      if (seeded.ok() && !env->Exists(streamlet->dir() + "/" + kLeaderEpochsFile)) {
        seeded = WriteLeaderEpochs(env, streamlet->dir(), {{0, 0}});
      }
      if (!seeded.ok()) {
        NS_LOG(kWarning) << "no epoch history for streamlet " << i << " of stream " << config.name
                         << " (its first catch-up copies it whole): " << seeded.ToString();
      }
    }
  }
}

void ZkCluster::RefreshLoop() {
  while (true) {
    bool expired, brokers, streams, controller;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && !expired_ && !brokers_dirty_ && !streams_dirty_ && !controller_dirty_ &&
             deleted_.empty() && changed_streams_.empty() && !SealDueLocked(MonotonicNowMs())) {
        changed_.WaitFor(&mu_, std::chrono::milliseconds(1000));
      }
      if (stopping_) return;
      expired = expired_;
      brokers = brokers_dirty_;
      streams = streams_dirty_;
      controller = controller_dirty_;
    }
    DeleteLocalStreams();
    Status s;
    if (expired) {
      // The session (and so this broker's node) is gone: a new session registers again. The
      // cache keeps serving meanwhile.
      NS_LOG(kWarning) << "ZooKeeper session expired; registering broker " << options_.broker_id
                       << " again";
      s = Connect();
      if (s.ok()) s = EnsureNodes();
      if (s.ok()) s = Register();
      brokers = streams = controller = s.ok();
      if (s.ok()) {
        // The old session's watches went with it: read every known stream again, which watches
        // it anew and catches a move made meanwhile.
        MutexLock lock(&mu_);
        for (const auto& [name, record] : streams_) changed_streams_.insert(name);
      }
    }
    if (s.ok() && brokers) s = ReadBrokers();
    if (s.ok() && streams) s = ReadStreams();
    if (s.ok() && controller) s = Elect();
    if (s.ok()) {
      CreateLocalStreams();
      RereadChanged();
      CheckSeals();
      if (brokers || controller) ElectLeaders();
    } else {
      NS_LOG(kWarning) << "cluster refresh failed (retrying): " << s.ToString();
      MutexLock lock(&mu_);
      if (brokers) brokers_dirty_ = true;
      if (streams) streams_dirty_ = true;
      if (controller) controller_dirty_ = true;
      changed_.WaitFor(&mu_, std::chrono::milliseconds(500));
    }
  }
}

void ZkCluster::RereadChanged() {
  std::set<std::string> names;
  {
    MutexLock lock(&mu_);
    names.swap(changed_streams_);
  }
  for (const std::string& name : names) {
    std::vector<uint32_t> before;
    {
      MutexLock lock(&mu_);
      auto it = streams_.find(name);
      if (it != streams_.end()) before = it->second.owners;
    }
    Result<bool> read = ReadStream(name);
    if (!read.ok()) {
      NS_LOG(kWarning) << "re-reading stream " << name
                       << " failed (retrying): " << read.status().ToString();
      MutexLock lock(&mu_);
      changed_streams_.insert(name);
      continue;
    }
    if (!*read) continue;  // deleted: its watch reported that too
    std::vector<uint32_t> after;
    {
      MutexLock lock(&mu_);
      const StreamRecord& record = streams_[name];
      // A replicated streamlet's leader change keeps the old leader's files (it follows now):
      // Install made that change.
      if (record.config.replication > 1) continue;
      after = record.owners;
    }
    for (uint32_t id = 0; id < before.size() && id < after.size(); ++id) {
      if (before[id] == options_.broker_id && after[id] != options_.broker_id) LetGo(name, id);
    }
  }
}

bool ZkCluster::SealDueLocked(int64_t now_ms) const {
  for (const auto& [key, deadline] : seals_) {
    if (deadline <= now_ms) return true;
  }
  return false;
}

void ZkCluster::CheckSeals() {
  std::vector<std::pair<std::string, uint32_t>> due;
  {
    MutexLock lock(&mu_);
    const int64_t now = MonotonicNowMs();
    for (const auto& [key, deadline] : seals_) {
      if (deadline <= now) due.push_back(key);
    }
  }
  for (const auto& [name, id] : due) {
    // Asked of ZooKeeper, not the cache: the move's switch may not have reached this broker.
    Result<bool> read = ReadStream(name);
    uint32_t owner = options_.broker_id;
    {
      MutexLock lock(&mu_);
      if (!read.ok()) {
        NS_LOG(kWarning) << "streamlet " << id << " of stream " << name
                         << " stays sealed: ZooKeeper cannot say who owns it ("
                         << read.status().ToString() << ")";
        seals_[{name, id}] = MonotonicNowMs() + 1000;
        continue;
      }
      auto it = streams_.find(name);
      if (*read && it != streams_.end() && id < it->second.owners.size()) {
        owner = it->second.owners[id];
      }
      seals_.erase({name, id});
    }
    if (owner != options_.broker_id) {
      LetGo(name, id);
      continue;
    }
    NS_LOG(kWarning) << "the seal of streamlet " << id << " of stream " << name
                     << " ran out (a move or a follower's catch-up did not finish in time); it "
                        "takes appends here again";
    if (std::shared_ptr<storage::Stream> stream = store_->Find(name)) {
      if (storage::Streamlet* s = stream->streamlet(id)) {
        s->Reopen();
      }
    }
  }
}

void ZkCluster::DropLocalCopy(storage::Streamlet& s) {
  for (const std::string& file : s.DropAll()) {
    Status removed = storage::Env::Default()->RemoveFile(file);
    // The chunks are forgotten either way; a file left behind only takes disk space.
    if (!removed.ok()) NS_LOG(kWarning) << "removing " << file << ": " << removed.ToString();
  }
}

void ZkCluster::LetGo(const std::string& name, uint32_t id) {
  {
    MutexLock lock(&mu_);
    seals_.erase({name, id});
  }
  std::shared_ptr<storage::Stream> stream = store_->Find(name);
  storage::Streamlet* s = stream == nullptr ? nullptr : stream->streamlet(id);
  if (s == nullptr) return;
  DropLocalCopy(*s);
  NS_LOG(kInfo) << "streamlet " << id << " of stream " << name
                << " moved to another broker; its copy here is removed";
  if (on_lost_) on_lost_(stream);
}

Result<storage::Position> ZkCluster::Seal(storage::Stream& stream, uint32_t id,
                                          storage::Streamlet& s, uint32_t seal_ms) {
  const std::pair<std::string, uint32_t> key{stream.config().name, id};
  if (seal_ms == 0) {
    s.Reopen();
    MutexLock lock(&mu_);
    seals_.erase(key);
    return storage::Position{};
  }
  // The seal first, then the transactions, then the tail: no transaction can add a part to the
  // sealed streamlet, one that holds a part now defers the move (the part could not follow),
  // and a commit that linked chunks into the streamlet before the check (the check waits for
  // commits in progress) is inside the tail.
  // The transactions begun before the first request of this move may still write the streamlet
  // (an exactly-once writer flushes its transaction before its checkpoint commits it); later
  // ones may not, so the earlier ones only end. The mark stays across the target's requests.
  if (stream.config().replication > 1) {
    // A replicated streamlet's transactions are its own scope, whose files the copy takes with
    // it (CopyTxnFiles): nothing to wait for. The seal holds off the scope's requests from now
    // on; taking the scope's lock waits for those in progress (a commit linking its group).
    s.Seal();
    (void)stream.transactions_of(id)->NextNumber();
    s.CloseActiveGroups();
    const storage::Position tail = s.tail();
    MutexLock lock(&mu_);
    seals_[key] = MonotonicNowMs() + seal_ms;
    return tail;
  }
  storage::StreamTransactions& txns = stream.transactions();
  uint64_t mark = s.new_parts_mark();
  if (mark == 0) mark = txns.NextNumber();
  s.HoldOffNewParts(mark);
  s.Seal();
  if (const uint32_t holding = txns.HoldingPartsIn(id, mark); holding > 0) {
    // Appends go on while those transactions end. Until seal_ms runs out: the target asks
    // again while it waits.
    s.Unseal();
    MutexLock lock(&mu_);
    seals_[key] = MonotonicNowMs() + seal_ms;
    return Status::InvalidTxnState(
        std::to_string(holding) + " open or prepared transactions hold chunks of streamlet " +
        std::to_string(id) + " of stream '" + key.first + "' on broker " +
        std::to_string(options_.broker_id) +
        " or may still write it: it moves once they are committed or aborted; no transaction"
        " begun since writes it until then");
  }
  // Read order stops at the first open group: with several active groups the copy could not
  // reach the tail. Closed, every chunk is on the way to it (appends open new groups later).
  s.CloseActiveGroups();
  const storage::Position tail = s.tail();
  MutexLock lock(&mu_);
  seals_[key] = MonotonicNowMs() + seal_ms;
  return tail;
}

Status ZkCluster::MoveIn(const std::string& name, uint32_t id) {
  {
    MutexLock lock(&mu_);
    if (!connected_) return Status::ClusterUnavailable("ZooKeeper is out of reach: no move now");
  }
  // The placement as ZooKeeper has it now, not as the last watch left it.
  ASSIGN_OR_RETURN(bool found, ReadStream(name));
  if (!found) return Status::StreamNotFound("stream '" + name + "' does not exist");
  StreamRecord record;
  std::vector<BrokerRecord> brokers;
  {
    MutexLock lock(&mu_);
    record = streams_[name];
    brokers = brokers_;
  }
  const std::string what = "streamlet " + std::to_string(id) + " of stream '" + name + "'";
  if (id >= record.owners.size()) {
    return Status::StreamletNotFound("stream '" + name + "' has no streamlet " +
                                     std::to_string(id) + " (it has " +
                                     std::to_string(record.owners.size()) + ")");
  }
  const uint32_t from = record.owners[id];
  if (from == options_.broker_id) {
    return Status::InvalidArgument(what + " is on broker " + std::to_string(from) + " already");
  }
  if (record.config.replication > 1) {
    // This broker leads afterwards: in the leader's place among the replicas, or, a follower
    // already, in a swap that keeps the old leader as a follower.
    const std::vector<uint32_t>& replicas = record.replicas[id].replicas;
    const bool member =
        std::find(replicas.begin(), replicas.end(), options_.broker_id) != replicas.end();
    return MoveReplica(name, id, from, /*swap=*/member);
  }
  if (record.config.durability == storage::Durability::kNone) {
    return Status::InvalidArgument(what +
                                   " cannot move: the stream is memory-only (durability "
                                   "none), its chunks exist in its broker's memory alone");
  }
  auto source = std::find_if(brokers.begin(), brokers.end(),
                             [from](const BrokerRecord& b) { return b.id == from; });
  if (source == brokers.end()) {
    return Status::BrokerUnavailable(what + " is on broker " + std::to_string(from) +
                                     ", which is not registered");
  }
  const std::string at = "broker " + std::to_string(from) + " at " + source->address;
  ASSIGN_OR_RETURN(std::shared_ptr<storage::Stream> stream, Find(name));
  storage::Streamlet* into = stream == nullptr ? nullptr : stream->streamlet(id);
  if (into == nullptr) return Status::StreamNotFound("stream '" + name + "' does not exist");
  // A copy left from an earlier time this broker owned the streamlet is stale.
  DropLocalCopy(*into);

  auto named = [&at](const Status& s) {
    return Status(s.code(), at + ": " + std::string(s.message()));
  };
  Result<net::Client> client = net::Client::Connect(source->address);
  if (!client.ok()) return named(client.status());
  storage::Position tail;
  Status moved = CopyStreamlet(*client, name, id, *into, &tail, /*load=*/true);
  bool unknown = false;
  if (moved.ok()) moved = SwitchOwner(name, id, from, &unknown);
  if (moved.ok()) {
    NS_LOG(kInfo) << what << " moved here from " << at << " (tail " << tail.ToString() << ")";
    return Status::Ok();
  }
  if (unknown) {
    // The switch may have happened: keep the copy, and the source's seal, whose expiry asks
    // ZooKeeper for the outcome.
    return moved;
  }
  DropLocalCopy(*into);
  Result<net::SealStreamletResponse> lifted = client->SealStreamlet({name, id, 0});
  if (!lifted.ok()) {
    NS_LOG(kWarning) << "lifting the seal of " << what << " on " << at
                     << " failed; it lifts itself in " << kMoveSealMs
                     << " ms: " << lifted.status().ToString();
  }
  return Status(moved.code(), "moving " + what + " from " + at +
                                  " failed, nothing changed: " + std::string(moved.message()));
}

Status ZkCluster::CopyStreamlet(net::Client& source, const std::string& name, uint32_t id,
                                storage::Streamlet& into, storage::Position* sealed_tail, bool load,
                                storage::Position from, uint64_t* copied) {
  storage::Env* env = storage::Env::Default();
  RETURN_IF_ERROR(env->CreateDirs(into.dir()));
  std::unique_ptr<storage::WritableFile> file;
  storage::Position file_at;      // the segment `file` holds, and where its next byte goes
  storage::Position at = from;    // all-zero: the earliest retained chunk
  storage::Position source_tail;  // as the last Fetch answered it
  // One Fetch from `at`, its blocks appended to the files of their segments; returns the bytes.
  auto copy_once = [&]() -> Result<uint32_t> {
    ASSIGN_OR_RETURN(net::FetchReply reply, source.Fetch({name, 0, {{id, at, kMoveFetchBytes}}}));
    if (reply.response.results.size() != 1) {
      return Status::Internal("a Fetch of one streamlet answered " +
                              std::to_string(reply.response.results.size()) + " results");
    }
    const net::FetchResult& r = reply.response.results[0];
    if (r.status != 0) return Status(static_cast<StatusCode>(r.status), r.message);
    uint32_t bytes = 0;
    for (const net::FetchBlock& b : r.blocks) {
      if (file == nullptr || b.at.group != file_at.group || b.at.segment != file_at.segment) {
        if (file != nullptr) RETURN_IF_ERROR(file->Sync());
        ASSIGN_OR_RETURN(file,
                         env->OpenAppendable(into.GroupSegmentPath(b.at.group, b.at.segment)));
        file_at = storage::Position{b.at.group, b.at.segment, static_cast<uint32_t>(file->size())};
      }
      // A catch-up by epoch keeps the bytes it proved equal to the source's: not written again.
      const uint32_t held =
          file_at.offset > b.at.offset ? std::min(b.size, file_at.offset - b.at.offset) : 0;
      if (b.at.offset + held != file_at.offset) {
        return Status::Internal("the copy of segment " + std::to_string(b.at.segment) +
                                " would leave a gap at offset " + std::to_string(file_at.offset));
      }
      RETURN_IF_ERROR(file->Append(b.data + held, b.size - held));
      file_at.offset += b.size - held;
      if (copied != nullptr) *copied += b.size - held;
      bytes += b.size;
    }
    at = r.next;
    source_tail = r.tail;
    return bytes;
  };
  // Before the seal, while the streamlet still takes appends: copy until a Fetch comes back
  // less than half full (caught up with the appends, or nearly), so the seal only covers the
  // rest and appends pause for that short copy, not for the whole streamlet. At most up to the
  // tail the first Fetch saw: appends faster than the copy would never let it catch up.
  ASSIGN_OR_RETURN(uint32_t bytes, copy_once());
  const storage::Position precopy_end = source_tail;
  while (bytes >= kMoveFetchBytes / 2 && at < precopy_end) {
    ASSIGN_OR_RETURN(bytes, copy_once());
  }
  // The seal holds kMoveSealMs from its last renewal. Renewing also answers the tail again: the
  // same, unless the seal lapsed (a copy slower than the seal) and the source took appends
  // meanwhile, which are then copied too.
  int64_t sealed_at = 0;
  auto renew = [&]() -> Result<storage::Position> {
    ASSIGN_OR_RETURN(net::SealStreamletResponse r, source.SealStreamlet({name, id, kMoveSealMs}));
    sealed_at = MonotonicNowMs();
    return r.tail;
  };
  // Transactions that hold chunks of the streamlet on the source defer the seal: their parts
  // could not follow. The source starts no new part there meanwhile, so they only end (an
  // exactly-once sink commits its transaction at each checkpoint); the copy keeps up while they
  // do, and the move gives up after kMoveTxnWaitMs.
  const int64_t txn_deadline = MonotonicNowMs() + kMoveTxnWaitMs;
  Result<storage::Position> first = renew();
  if (!first.ok() && first.status().IsInvalidTxnState()) {
    NS_LOG(kInfo) << "the move of streamlet " << id << " of stream " << name
                  << " waits: " << first.status().message();
  }
  while (!first.ok() && first.status().IsInvalidTxnState() && MonotonicNowMs() < txn_deadline) {
    RETURN_IF_ERROR(copy_once().status());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    first = renew();
  }
  ASSIGN_OR_RETURN(storage::Position tail, std::move(first));
  while (true) {
    while (at < tail) {
      const storage::Position before = at;
      ASSIGN_OR_RETURN(uint32_t got, copy_once());
      if (!(before < at) && got == 0 && source_tail == tail) {
        // Nothing to read past `at`, though the tail is further on: only empty segments lie in
        // between (a leader that took an append back keeps the segment it opened for it, empty
        // and sealed).
        at = tail;
        break;
      }
      if (!(before < at)) {
        return Status::Internal("the copy stopped at " + at.ToString() + " before the tail " +
                                tail.ToString());
      }
      if (MonotonicNowMs() - sealed_at > kMoveSealMs / 3) {
        ASSIGN_OR_RETURN(tail, renew());
      }
    }
    ASSIGN_OR_RETURN(storage::Position renewed, renew());
    if (renewed == tail) break;
    tail = renewed;
  }
  if (file != nullptr) RETURN_IF_ERROR(file->Sync());
  RETURN_IF_ERROR(env->SyncDir(into.dir()));
  if (load) {
    // Loading reads every copied segment, which for a large streamlet can outlast the seal:
    // renew it meanwhile, on a connection of its own (a Client serves one caller).
    std::atomic<bool> loaded{false};
    std::thread renewer([&] {
      Result<net::Client> second = net::Client::Connect(source.address());
      int64_t next = MonotonicNowMs() + kMoveSealMs / 3;
      while (!loaded.load(std::memory_order_acquire)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (loaded.load(std::memory_order_acquire) || MonotonicNowMs() < next) continue;
        next = MonotonicNowMs() + kMoveSealMs / 3;
        Status renewed =
            second.ok() ? second->SealStreamlet({name, id, kMoveSealMs}).status() : second.status();
        if (!renewed.ok()) {
          NS_LOG(kWarning) << "renewing the seal of streamlet " << id << " of stream " << name
                           << " while its copy loads: " << renewed.ToString();
        }
      }
    });
    Status recovered = into.Recover(WallNowMs());
    loaded.store(true, std::memory_order_release);
    renewer.join();
    RETURN_IF_ERROR(recovered);
  }
  // One more renewal, which must find the tail unchanged, right before the switch (which takes
  // far less than the seal).
  ASSIGN_OR_RETURN(storage::Position last, renew());
  if (!(last == tail)) {
    return Status::Internal("the source took appends while the copy loaded (its seal lapsed)");
  }
  *sealed_tail = tail;
  return Status::Ok();
}

Status ZkCluster::SwitchOwner(const std::string& name, uint32_t id, uint32_t from, bool* unknown) {
  const std::string path = Path("/streams/" + name);
  std::string buffer(kMaxZkNodeBytes, '\0');
  const int64_t deadline = MonotonicNowMs() + 2 * int64_t{options_.session_timeout_ms};
  bool set_sent = false;  // a set whose answer was lost may have been applied
  while (true) {
    int len = kMaxZkNodeBytes;
    Stat stat{};
    int rc;
    {
      MutexLock lock(&zk_mu_);
      rc = zoo_get(zh_, path.c_str(), 0, buffer.data(), &len, &stat);
    }
    if (ZkUnreachable(rc)) {
      if (MonotonicNowMs() >= deadline) {
        *unknown = set_sent;
        return ZkError("switch the owner of stream " + name, rc);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    if (rc == ZNONODE) return Status::StreamNotFound("stream '" + name + "' was deleted");
    if (rc != ZOK) return ZkError("read stream " + name, rc);
    ASSIGN_OR_RETURN(StreamRecord record,
                     ParseStreamRecord(buffer.substr(0, std::max(len, 0)), stat.version));
    if (id < record.owners.size() && record.owners[id] == options_.broker_id) {
      Install(name, std::move(record));  // a lost answer of our own set
      return Status::Ok();
    }
    if (id >= record.owners.size() || record.owners[id] != from) {
      return Status::InvalidArgument("streamlet " + std::to_string(id) + " of stream '" + name +
                                     "' changed owner during the move");
    }
    record.owners[id] = options_.broker_id;
    const std::string data = FormatStreamRecord(record);
    {
      MutexLock lock(&zk_mu_);
      rc = zoo_set(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), stat.version);
    }
    set_sent = true;
    if (rc == ZOK) {
      record.version = static_cast<uint32_t>(stat.version) + 2;  // the node's new version + 1
      Install(name, std::move(record));
      return Status::Ok();
    }
    if (rc != ZBADVERSION && !ZkUnreachable(rc)) return ZkError("switch the owner of " + name, rc);
    // Another change came first, or the answer was lost: read again and decide.
  }
}

Status ZkCluster::CheckOwner(const std::string& stream, uint32_t streamlet) const {
  if (!joined()) {
    return Status::BrokerUnavailable(
        "broker " + std::to_string(options_.broker_id) +
        " is joining the cluster: it serves no streamlet before it has read where they live");
  }
  MutexLock lock(&mu_);
  auto it = streams_.find(stream);
  if (it == streams_.end() || streamlet >= it->second.owners.size()) return Status::Ok();
  const uint32_t owner = it->second.owners[streamlet];
  if (owner == options_.broker_id) return Status::Ok();
  return NotHere(stream, streamlet, owner, brokers_);
}

Result<std::shared_ptr<storage::Stream>> ZkCluster::Find(const std::string& name) {
  std::shared_ptr<storage::Stream> stream = store_->Find(name);
  if (stream != nullptr) return stream;
  bool known;
  {
    MutexLock lock(&mu_);
    known = streams_.contains(name);
  }
  if (!known) {
    ASSIGN_OR_RETURN(bool found, ReadStream(name));
    if (!found) return std::shared_ptr<storage::Stream>();
  }
  CreateLocalStreams();
  return store_->Find(name);
}

Status ZkCluster::CreateStream(const storage::StreamConfig& config, bool forwarded) {
  RETURN_IF_ERROR(config.Validate());
  bool self = false;
  BrokerRecord controller;
  RETURN_IF_ERROR(ControllerFor(forwarded, &self, &controller));
  if (!self) {
    Bytes body;
    ByteWriter w(&body);
    net::EncodeStreamConfig(w, config);
    RETURN_IF_ERROR(Forward(controller, net::Opcode::kCreateStream, body));
    AfterCreate(config.name);
    return Status::Ok();
  }
  // The registered brokers as of now, not as of the last watch: a broker that just joined gets
  // its share of the new stream.
  RETURN_IF_ERROR(ReadBrokers());
  std::vector<uint32_t> live;
  {
    MutexLock lock(&mu_);
    for (const BrokerRecord& b : brokers_) live.push_back(b.id);
  }
  StreamRecord record;
  record.config = config;
  ASSIGN_OR_RETURN(record.owners, AssignOwners(config.name, config.streamlets, live));
  ASSIGN_OR_RETURN(record.replicas, AssignReplicas(config.name, config.streamlets,
                                                   config.replication, std::move(live)));
  record.version = 1;
  const std::string data = FormatStreamRecord(record);
  RETURN_IF_ERROR(FencedChange(config.name, &data));
  Install(config.name, std::move(record));
  AfterCreate(config.name);
  return Status::Ok();
}

void ZkCluster::AfterCreate(const std::string& name) {
  // Watch the new node as every other broker does (their read sets the watch): this broker too
  // must hear of its later changes (a streamlet moved) and of its deletion through another
  // broker; and the client that created it through this broker may use it at once. The cache
  // answers if ZooKeeper is lost right now (for a create made here).
  Result<bool> watched = ReadStream(name);
  if (!watched.ok()) {
    NS_LOG(kWarning) << "cannot watch stream " << name << " yet: " << watched.status().ToString()
                     << "; the next refresh does";
    MutexLock lock(&mu_);
    changed_streams_.insert(name);
  }
  CreateLocalStreams();
}

Result<std::shared_ptr<storage::Stream>> ZkCluster::DeleteStream(const std::string& name,
                                                                 bool forwarded) {
  bool self = false;
  BrokerRecord controller;
  RETURN_IF_ERROR(ControllerFor(forwarded, &self, &controller));
  if (self) {
    RETURN_IF_ERROR(FencedChange(name, nullptr));
  } else {
    Bytes body;
    ByteWriter w(&body);
    net::EncodeStreamNameRequest(w, {name});
    RETURN_IF_ERROR(Forward(controller, net::Opcode::kDeleteStream, body));
  }
  return AfterDelete(name);
}

Result<std::shared_ptr<storage::Stream>> ZkCluster::AfterDelete(const std::string& name) {
  // At once, not when the watch fires: the client that deleted it through this broker may
  // create it again right away.
  {
    MutexLock lock(&mu_);
    streams_.erase(name);
  }
  std::shared_ptr<storage::Stream> stream = store_->Find(name);
  if (stream != nullptr) {
    // The node's watch may have removed the local copy since Find: the delete is done either way.
    Status deleted = store_->Delete(name);
    if (!deleted.ok() && !deleted.IsStreamNotFound()) return deleted;
  }
  return stream;
}

std::vector<std::string> ZkCluster::List() {
  // Asked of ZooKeeper, not the cache: a stream just created through another broker is listed
  // before this broker's watch fires. The cache answers while ZooKeeper is out of reach.
  Result<std::vector<std::string>> listed = Children("/streams", /*watch=*/false);
  std::vector<std::string> names = listed.ok() ? *listed : std::vector<std::string>{};
  if (names.empty()) {
    MutexLock lock(&mu_);
    for (const auto& [name, record] : streams_) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<storage::StreamConfig> ZkCluster::Describe(const std::string& name) {
  {
    MutexLock lock(&mu_);
    auto it = streams_.find(name);
    if (it != streams_.end()) return it->second.config;
  }
  ASSIGN_OR_RETURN(bool found, ReadStream(name));
  MutexLock lock(&mu_);
  auto it = streams_.find(name);
  if (!found || it == streams_.end()) {
    return Status::StreamNotFound("stream '" + name + "' does not exist");
  }
  return it->second.config;
}

net::ClusterMetadataResponse ZkCluster::Metadata(const std::vector<std::string>& streams) {
  for (const std::string& name : streams) {
    bool known;
    {
      MutexLock lock(&mu_);
      known = streams_.contains(name);
    }
    if (!known) (void)ReadStream(name);  // absent or unreadable: left out of the answer
  }
  net::ClusterMetadataResponse r;
  r.broker_id = options_.broker_id;
  MutexLock lock(&mu_);
  r.controller_id = controller_id_;
  for (const BrokerRecord& b : brokers_) r.brokers.push_back({b.id, b.address, b.host});
  auto add = [&](const std::string& name, const StreamRecord& record) {
    r.streams.push_back({name, record.version, record.owners, record.replicas});
  };
  if (streams.empty()) {
    for (const auto& [name, record] : streams_) add(name, record);
  } else {
    for (const std::string& name : streams) {
      auto it = streams_.find(name);
      if (it != streams_.end()) add(name, it->second);
    }
  }
  return r;
}

}  // namespace nearstream::cluster
