// ZkCluster's controller role (docs/cluster.md, "The controller"): the election in ZooKeeper,
// creates and deletes made by the controller alone (forwarded there by the other brokers), and
// the report of a lost broker's streamlets.
//
// Why a controller when each create or delete is one atomic ZooKeeper operation anyway: one
// broker then decides every placement from one view of the brokers (two brokers placing at once
// from views a watch apart would unbalance them), and the decisions a lost broker calls for have
// one place to be made (with replication: which copy takes over).
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <map>
#include <set>

#include "nearstream/cluster/zk_cluster.h"
#include "nearstream/cluster/zk_status.h"
#include "nearstream/common/log.h"

namespace nearstream::cluster {

Status ZkCluster::Elect() {
  {
    MutexLock lock(&mu_);
    controller_dirty_ = false;
  }
  const std::string node = Path("/controller");
  const std::string epoch_node = Path("/controller_epoch");
  std::string buffer(kMaxZkNodeBytes, '\0');
  // Each round either finds a controller or runs once; a lost race means one was elected.
  for (int round = 0; round < 10; ++round) {
    int len = kMaxZkNodeBytes;
    Stat stat{};
    int64_t session = 0;
    int rc;
    {
      MutexLock lock(&zk_mu_);
      // exists() watches the node whether or not it is there: its creation or deletion wakes
      // the refresher, which comes back here.
      rc = zoo_exists(zh_, node.c_str(), 1, &stat);
      if (rc == ZOK) rc = zoo_get(zh_, node.c_str(), 0, buffer.data(), &len, &stat);
      session = zoo_client_id(zh_)->client_id;
    }
    if (rc == ZOK) {
      ASSIGN_OR_RETURN(ControllerRecord record,
                       ParseControllerRecord(buffer.substr(0, std::max(len, 0))));
      // Ours only if this session made it: a node of this id's earlier session is not.
      const bool mine = stat.ephemeralOwner == session && record.broker == options_.broker_id;
      bool fenced;
      {
        MutexLock lock(&mu_);
        fenced = mine && epoch_version_ < 0;
      }
      if (fenced) {
        // Our node, but the epoch moved on without us (FencedChange found it bumped): give the
        // role up and run again, so that whoever acts as controller holds the current epoch.
        NS_LOG(kWarning) << "the controller epoch changed under broker " << options_.broker_id
                         << "; electing again";
        {
          MutexLock lock(&zk_mu_);
          rc = zoo_delete(zh_, node.c_str(), stat.version);
        }
        if (rc != ZOK && rc != ZNONODE) return ZkError("give up " + node, rc);
        continue;
      }
      MutexLock lock(&mu_);
      if (is_controller_ && !mine) {
        NS_LOG(kWarning) << "broker " << options_.broker_id << " is no longer the controller";
      }
      is_controller_ = mine;
      if (!mine) epoch_version_ = -1;
      if (controller_id_ != record.broker) {
        NS_LOG(kInfo) << "the controller is broker " << record.broker << " (epoch " << record.epoch
                      << ")";
      }
      controller_id_ = record.broker;
      return Status::Ok();
    }
    if (rc != ZNONODE) return ZkError("read " + node, rc);

    // None: run for it. The epoch node's version is the fencing token.
    len = kMaxZkNodeBytes;
    {
      MutexLock lock(&zk_mu_);
      rc = zoo_get(zh_, epoch_node.c_str(), 0, buffer.data(), &len, &stat);
    }
    if (rc != ZOK) return ZkError("read " + epoch_node, rc);
    uint64_t last_epoch = 0;
    if (len > 0) {
      ASSIGN_OR_RETURN(ControllerRecord last,
                       ParseControllerRecord(buffer.substr(0, std::max(len, 0))));
      last_epoch = last.epoch;
    }
    const ControllerRecord mine{options_.broker_id, last_epoch + 1};
    const std::string data = FormatControllerRecord(mine);
    zoo_op_t ops[2];
    zoo_op_result_t results[2];
    zoo_create_op_init(&ops[0], node.c_str(), data.data(), static_cast<int>(data.size()),
                       &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, nullptr, 0);
    Stat epoch_stat{};
    zoo_set_op_init(&ops[1], epoch_node.c_str(), data.data(), static_cast<int>(data.size()),
                    stat.version, &epoch_stat);
    {
      MutexLock lock(&zk_mu_);
      rc = zoo_multi(zh_, 2, ops, results);
    }
    if (rc == ZOK) {
      {
        MutexLock lock(&mu_);
        is_controller_ = true;
        controller_id_ = options_.broker_id;
        epoch_version_ = stat.version + 1;
      }
      NS_LOG(kInfo) << "broker " << options_.broker_id << " is the controller (epoch " << mine.epoch
                    << ")";
      // A new controller takes stock: new leaders for replicated streamlets whose leader is not
      // registered, then the streamlets left without one.
      ElectLeaders();
      ReportUnavailable({});
      return Status::Ok();
    }
    // Another broker won (the node exists, or it bumped the epoch first): read it.
    if (rc != ZNODEEXISTS && rc != ZBADVERSION) return ZkError("elect a controller", rc);
  }
  return Status::ClusterUnavailable("no controller could be elected (ten lost races)");
}

ZkCluster::Gauges ZkCluster::gauges() const {
  MutexLock lock(&mu_);
  return {is_controller_ ? 1u : 0u, connected_ ? 1u : 0u, brokers_.size(),
          catch_up_copied_bytes_.load(std::memory_order_relaxed),
          catch_up_kept_bytes_.load(std::memory_order_relaxed)};
}

Status ZkCluster::ControllerFor(bool forwarded, bool* self, BrokerRecord* controller) {
  MutexLock lock(&mu_);
  if (!connected_) {
    return Status::ClusterUnavailable("ZooKeeper is out of reach: no placement change now");
  }
  *self = is_controller_;
  if (is_controller_) return Status::Ok();
  const std::string me = "broker " + std::to_string(options_.broker_id);
  if (controller_id_ == net::kNoController) {
    return Status::ClusterUnavailable(me + " knows of no controller now (an election is on)");
  }
  const std::string named = "broker " + std::to_string(controller_id_);
  if (forwarded) {
    // Its sender saw this broker as the controller: one of the two views is behind. Forwarding
    // again could go round in a circle; the client retries instead.
    return Status::ClusterUnavailable(me + " is not the controller (" + named + " is)");
  }
  const uint32_t id = controller_id_;
  auto it = std::find_if(brokers_.begin(), brokers_.end(),
                         [id](const BrokerRecord& b) { return b.id == id; });
  if (it == brokers_.end()) {
    return Status::ClusterUnavailable("the controller, " + named + ", is not registered");
  }
  *controller = *it;
  return Status::Ok();
}

Status ZkCluster::Forward(const BrokerRecord& controller, net::Opcode opcode, const Bytes& body) {
  const std::string at =
      "the controller, broker " + std::to_string(controller.id) + " at " + controller.address;
  Result<net::Client> client = net::Client::Connect(controller.address);
  if (!client.ok()) {
    return Status::ClusterUnavailable(
        at + ", is out of reach: " + std::string(client.status().message()));
  }
  client->set_forwarding(true);
  Result<net::Response> answer = client->Call(opcode, body);
  if (!answer.ok()) {
    // Lost on the way: the change may or may not be made; the client's retry finds out (a
    // create then answers STREAM_EXISTS, a delete STREAM_NOT_FOUND).
    return Status::ClusterUnavailable(
        at + ", did not answer: " + std::string(answer.status().message()));
  }
  return answer->status;
}

Status ZkCluster::FencedChange(const std::string& name, const std::string* data) {
  int32_t epoch_version;
  {
    MutexLock lock(&mu_);
    epoch_version = epoch_version_;
  }
  const std::string epoch_node = Path("/controller_epoch");
  const std::string path = Path("/streams/" + name);
  zoo_op_t ops[2];
  zoo_op_result_t results[2];
  zoo_check_op_init(&ops[0], epoch_node.c_str(), epoch_version);
  if (data != nullptr) {
    zoo_create_op_init(&ops[1], path.c_str(), data->data(), static_cast<int>(data->size()),
                       &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
  } else {
    zoo_delete_op_init(&ops[1], path.c_str(), -1);
  }
  int rc;
  {
    MutexLock lock(&zk_mu_);
    rc = zoo_multi(zh_, 2, ops, results);
  }
  if (rc == ZOK) return Status::Ok();
  if (ZkUnreachable(rc)) return ZkError((data ? "create stream " : "delete stream ") + name, rc);
  if (results[0].err == ZBADVERSION) return Deposed();
  if (results[1].err == ZNODEEXISTS) {
    return Status::StreamExists("stream '" + name + "' already exists");
  }
  if (results[1].err == ZNONODE) {
    return Status::StreamNotFound("stream '" + name + "' does not exist");
  }
  return ZkError((data ? "create stream " : "delete stream ") + name, rc);
}

Status ZkCluster::Deposed() {
  // A newer election bumped the epoch: this broker was deposed and has not heard yet.
  MutexLock lock(&mu_);
  is_controller_ = false;
  epoch_version_ = -1;
  controller_dirty_ = true;
  changed_.SignalAll();
  return Status::ClusterUnavailable("broker " + std::to_string(options_.broker_id) +
                                    " is no longer the controller");
}

void ZkCluster::ReportLostBrokers(const std::vector<BrokerRecord>& before) {
  std::set<uint32_t> gone;
  {
    MutexLock lock(&mu_);
    if (!is_controller_) return;
    for (const BrokerRecord& b : before) {
      if (std::none_of(brokers_.begin(), brokers_.end(),
                       [&b](const BrokerRecord& now) { return now.id == b.id; })) {
        gone.insert(b.id);
      }
    }
  }
  if (gone.empty()) return;
  ElectLeaders();
  ReportUnavailable(gone);
}

void ZkCluster::ReportUnavailable(const std::set<uint32_t>& only) {
  MutexLock lock(&mu_);
  // broker -> " stream[ids]" of each stream it owns streamlets of, and how many.
  std::map<uint32_t, std::pair<std::string, size_t>> lost;
  for (const auto& [name, record] : streams_) {
    std::map<uint32_t, std::string> ids;
    for (size_t i = 0; i < record.owners.size(); ++i) {
      const uint32_t owner = record.owners[i];
      const bool registered = std::any_of(brokers_.begin(), brokers_.end(),
                                          [owner](const BrokerRecord& b) { return b.id == owner; });
      if (registered || (!only.empty() && !only.contains(owner))) continue;
      ids[owner] += (ids[owner].empty() ? "" : ",") + std::to_string(i);
      ++lost[owner].second;
    }
    for (const auto& [owner, list] : ids) {
      std::string& text = lost[owner].first;
      text.append(" ").append(name).append("[").append(list).append("]");
    }
  }
  for (uint32_t id : only) lost.try_emplace(id);
  // No other broker has their data (not replicated, or no in-sync copy is registered): they
  // wait for their broker to return.
  for (const auto& [id, streamlets] : lost) {
    NS_LOG(kWarning) << "controller: broker " << id << " is not registered; " << streamlets.second
                     << (streamlets.second == 1 ? " streamlet is" : " streamlets are")
                     << " unavailable until it returns" << (streamlets.second > 0 ? ":" : "")
                     << streamlets.first;
  }
}

}  // namespace nearstream::cluster
