#include "nearstream/cluster/zk_cluster.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "nearstream/common/clock.h"
#include "nearstream/common/log.h"
#include "nearstream/common/thread_name.h"

namespace nearstream::cluster {

namespace {

// ZooKeeper's largest node (jute.maxbuffer): every read fits.
constexpr int kMaxNodeBytes = 1 << 20;

// Errors of a call that did not reach a quorum: ZooKeeper is out of reach for now.
bool Unreachable(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONEXPIRED ||
         rc == ZINVALIDSTATE || rc == ZCLOSING;
}

Status ZkError(const std::string& what, int rc) {
  std::string message = what + ": " + zerror(rc);
  if (Unreachable(rc)) return Status::ClusterUnavailable("ZooKeeper is out of reach: " + message);
  return Status::Internal(message);
}

}  // namespace

ZkCluster::ZkCluster(ClusterOptions options, storage::StreamStore* store)
    : options_(std::move(options)), store_(store) {}

ZkCluster::~ZkCluster() { Stop(); }

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
    if (type == ZOO_DELETED_EVENT && p.rfind(streams, 0) == 0) {
      self->deleted_.insert(p.substr(streams.size()));
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
  CreateLocalStreams();
  refresher_ = std::thread([this] { RefreshLoop(); });
  NameThread(refresher_, "zk-refresh");
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
  for (const std::string& node : {std::string(), std::string("/brokers"),
                                  std::string("/brokers/ids"), std::string("/streams")}) {
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
  std::string buffer(kMaxNodeBytes, '\0');
  for (const std::string& id_text : ids) {
    uint32_t id = 0;
    try {
      id = static_cast<uint32_t>(std::stoul(id_text));
    } catch (const std::exception&) {
      continue;  // not a broker node
    }
    int len = kMaxNodeBytes;
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
  MutexLock lock(&mu_);
  brokers_ = std::move(brokers);
  return Status::Ok();
}

Result<bool> ZkCluster::ReadStream(const std::string& name) {
  std::string buffer(kMaxNodeBytes, '\0');
  int len = kMaxNodeBytes;
  Stat stat{};
  int rc;
  {
    MutexLock lock(&zk_mu_);
    rc = zoo_get(zh_, Path("/streams/" + name).c_str(), 1, buffer.data(), &len, &stat);
  }
  if (rc == ZNONODE) return false;
  if (rc != ZOK) return ZkError("read stream " + name, rc);
  ASSIGN_OR_RETURN(StreamRecord record,
                   ParseStreamRecord(buffer.substr(0, std::max(len, 0)), stat.version));
  MutexLock lock(&mu_);
  streams_[name] = std::move(record);
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
  std::vector<storage::StreamConfig> placed;
  {
    MutexLock lock(&mu_);
    for (const auto& [name, record] : streams_) placed.push_back(record.config);
  }
  for (const storage::StreamConfig& config : placed) {
    if (store_->Find(config.name) != nullptr) continue;
    Status s = store_->Create(config);
    if (!s.ok() && !s.IsStreamExists()) {
      NS_LOG(kError) << "cannot create the local copy of stream " << config.name << ": "
                     << s.ToString();
    }
  }
}

void ZkCluster::RefreshLoop() {
  while (true) {
    bool expired, brokers, streams;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && !expired_ && !brokers_dirty_ && !streams_dirty_ && deleted_.empty()) {
        changed_.WaitFor(&mu_, std::chrono::milliseconds(1000));
      }
      if (stopping_) return;
      expired = expired_;
      brokers = brokers_dirty_;
      streams = streams_dirty_;
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
      brokers = streams = s.ok();
    }
    if (s.ok() && brokers) s = ReadBrokers();
    if (s.ok() && streams) s = ReadStreams();
    if (s.ok()) {
      CreateLocalStreams();
    } else {
      NS_LOG(kWarning) << "cluster refresh failed (retrying): " << s.ToString();
      MutexLock lock(&mu_);
      if (brokers) brokers_dirty_ = true;
      if (streams) streams_dirty_ = true;
      changed_.WaitFor(&mu_, std::chrono::milliseconds(500));
    }
  }
}

Status ZkCluster::CheckOwner(const std::string& stream, uint32_t streamlet) const {
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

Status ZkCluster::CreateStream(const storage::StreamConfig& config) {
  RETURN_IF_ERROR(config.Validate());
  // The registered brokers as of now, not as of the last watch: a broker that just joined gets
  // its share of the new stream.
  RETURN_IF_ERROR(ReadBrokers());
  std::vector<uint32_t> live;
  {
    MutexLock lock(&mu_);
    for (const BrokerRecord& b : brokers_) live.push_back(b.id);
  }
  ASSIGN_OR_RETURN(std::vector<uint32_t> owners,
                   AssignOwners(config.name, config.streamlets, std::move(live)));
  const std::string path = Path("/streams/" + config.name);
  const std::string data = FormatStreamRecord(config, owners);
  int rc;
  {
    MutexLock lock(&zk_mu_);
    rc = zoo_create(zh_, path.c_str(), data.data(), static_cast<int>(data.size()),
                    &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
  }
  if (rc == ZNODEEXISTS) {
    return Status::StreamExists("stream '" + config.name + "' already exists");
  }
  if (rc != ZOK) return ZkError("create stream " + config.name, rc);
  {
    MutexLock lock(&mu_);
    streams_[config.name] = StreamRecord{config, owners, 1};
  }
  CreateLocalStreams();
  return Status::Ok();
}

Result<std::shared_ptr<storage::Stream>> ZkCluster::DeleteStream(const std::string& name) {
  const std::string path = Path("/streams/" + name);
  int rc;
  {
    MutexLock lock(&zk_mu_);
    rc = zoo_delete(zh_, path.c_str(), -1);
  }
  if (rc == ZNONODE) return Status::StreamNotFound("stream '" + name + "' does not exist");
  if (rc != ZOK) return ZkError("delete stream " + name, rc);
  {
    MutexLock lock(&mu_);
    streams_.erase(name);
  }
  std::shared_ptr<storage::Stream> stream = store_->Find(name);
  if (stream != nullptr) RETURN_IF_ERROR(store_->Delete(name));
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
  for (const BrokerRecord& b : brokers_) r.brokers.push_back({b.id, b.address, b.host});
  auto add = [&](const std::string& name, const StreamRecord& record) {
    r.streams.push_back({name, record.version, record.owners});
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
