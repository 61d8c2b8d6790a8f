#include "nearstream/cluster/placement.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "nearstream/storage/stream_store.h"

namespace nearstream::cluster {

namespace {

constexpr const char kDefaultRoot[] = "/nearstream";

bool ParseU32(const std::string& s, uint32_t* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

// The value of `key=` lines in `text`; false when absent.
bool Value(const std::string& text, const std::string& key, std::string* out) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
        line[key.size()] == '=') {
      *out = line.substr(key.size() + 1);
      return true;
    }
  }
  return false;
}

}  // namespace

Result<ZkAddress> ParseZkAddress(const std::string& text) {
  ZkAddress a;
  size_t slash = text.find('/');
  a.servers = text.substr(0, slash);
  a.root = slash == std::string::npos ? kDefaultRoot : text.substr(slash);
  while (a.root.size() > 1 && a.root.back() == '/') a.root.pop_back();
  if (a.servers.empty() || a.root == "/" || a.root.find("//") != std::string::npos) {
    return Status::InvalidArgument("--zookeeper wants host:port[,host:port...][/root], got '" +
                                   text + "'");
  }
  return a;
}

Result<std::vector<uint32_t>> AssignOwners(const std::string& stream, uint32_t streamlets,
                                           std::vector<uint32_t> live) {
  std::sort(live.begin(), live.end());
  live.erase(std::unique(live.begin(), live.end()), live.end());
  if (live.empty()) return Status::InvalidArgument("no broker is registered to store the stream");
  // FNV-1a: stable across runs and builds (std::hash need not be), so a placement is
  // reproducible from the name and the brokers alone.
  uint32_t hash = 2166136261u;
  for (unsigned char c : stream) hash = (hash ^ c) * 16777619u;
  std::vector<uint32_t> owners(streamlets);
  for (uint32_t i = 0; i < streamlets; ++i) owners[i] = live[(hash + i) % live.size()];
  return owners;
}

Result<std::vector<net::ReplicaSet>> AssignReplicas(const std::string& stream, uint32_t streamlets,
                                                    uint32_t replication,
                                                    std::vector<uint32_t> live) {
  std::sort(live.begin(), live.end());
  live.erase(std::unique(live.begin(), live.end()), live.end());
  if (live.size() < replication) {
    return Status::InvalidArgument("replication " + std::to_string(replication) + " needs " +
                                   std::to_string(replication) + " registered brokers; " +
                                   std::to_string(live.size()) + " are registered");
  }
  ASSIGN_OR_RETURN(std::vector<uint32_t> owners, AssignOwners(stream, streamlets, live));
  std::vector<net::ReplicaSet> sets(streamlets);
  for (uint32_t i = 0; i < streamlets; ++i) {
    const size_t first =
        static_cast<size_t>(std::find(live.begin(), live.end(), owners[i]) - live.begin());
    for (uint32_t k = 0; k < replication; ++k) {
      sets[i].replicas.push_back(live[(first + k) % live.size()]);
    }
    sets[i].isr = sets[i].replicas;
  }
  return sets;
}

bool StreamRecord::Follows(uint32_t streamlet, uint32_t broker) const {
  if (streamlet >= replicas.size() || owners[streamlet] == broker) return false;
  const std::vector<uint32_t>& r = replicas[streamlet].replicas;
  return std::find(r.begin(), r.end(), broker) != r.end();
}

bool StreamRecord::FollowsInSync(uint32_t streamlet, uint32_t broker) const {
  if (!Follows(streamlet, broker)) return false;
  const std::vector<uint32_t>& isr = replicas[streamlet].isr;
  return std::find(isr.begin(), isr.end(), broker) != isr.end();
}

std::string FormatBrokerRecord(const BrokerRecord& broker) {
  return "format=1\naddress=" + broker.address + "\nhost=" + broker.host + "\n";
}

Result<BrokerRecord> ParseBrokerRecord(uint32_t id, const std::string& text) {
  BrokerRecord b;
  b.id = id;
  std::string format;
  if (!Value(text, "format", &format) || format != "1" || !Value(text, "address", &b.address) ||
      !Value(text, "host", &b.host)) {
    return Status::InvalidArgument("broker " + std::to_string(id) +
                                   "'s registration is not a format 1 record: '" + text + "'");
  }
  return b;
}

std::string FormatControllerRecord(const ControllerRecord& controller) {
  return "format=1\nbroker=" + std::to_string(controller.broker) +
         "\nepoch=" + std::to_string(controller.epoch) + "\n";
}

Result<ControllerRecord> ParseControllerRecord(const std::string& text) {
  ControllerRecord c;
  std::string format, broker, epoch;
  if (!Value(text, "format", &format) || format != "1" || !Value(text, "broker", &broker) ||
      !ParseU32(broker, &c.broker) || !Value(text, "epoch", &epoch)) {
    return Status::InvalidArgument("the controller record is not a format 1 record: '" + text +
                                   "'");
  }
  auto [end, ec] = std::from_chars(epoch.data(), epoch.data() + epoch.size(), c.epoch);
  if (epoch.empty() || ec != std::errc() || end != epoch.data() + epoch.size()) {
    return Status::InvalidArgument("the controller record has a bad epoch: '" + text + "'");
  }
  return c;
}

namespace {

std::string JoinIds(const std::vector<uint32_t>& ids, char separator) {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) text += separator;
    text += std::to_string(ids[i]);
  }
  return text;
}

bool SplitIds(const std::string& text, char separator, std::vector<uint32_t>* ids) {
  std::istringstream in(text);
  std::string id;
  while (std::getline(in, id, separator)) {
    uint32_t v = 0;
    if (!ParseU32(id, &v)) return false;
    ids->push_back(v);
  }
  return !ids->empty();
}

}  // namespace

std::string FormatStreamRecord(const storage::StreamConfig& config,
                               const std::vector<uint32_t>& owners,
                               const std::vector<net::ReplicaSet>& replicas) {
  std::string text = storage::FormatStreamMeta(config) + "owners=" + JoinIds(owners, ',') + "\n";
  if (replicas.empty() || config.replication == 1) return text;
  // Streamlets separated by ',', the brokers of one streamlet by ':'.
  std::string sets, isr, epochs;
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (i > 0) {
      sets += ',';
      isr += ',';
      epochs += ',';
    }
    sets += JoinIds(replicas[i].replicas, ':');
    isr += JoinIds(replicas[i].isr, ':');
    epochs += std::to_string(replicas[i].leader_epoch);
  }
  return text + "replicas=" + sets + "\nisr=" + isr + "\nleader_epochs=" + epochs + "\n";
}

std::string FormatStreamRecord(const StreamRecord& record) {
  return FormatStreamRecord(record.config, record.owners, record.replicas);
}

Result<StreamRecord> ParseStreamRecord(const std::string& text, int32_t node_version) {
  StreamRecord r;
  ASSIGN_OR_RETURN(r.config, storage::ParseStreamMeta(text));
  std::string owners;
  if (!Value(text, "owners", &owners)) {
    return Status::InvalidArgument("stream record of '" + r.config.name + "' has no owners");
  }
  std::istringstream in(owners);
  std::string id;
  while (std::getline(in, id, ',')) {
    uint32_t owner = 0;
    if (!ParseU32(id, &owner)) {
      return Status::InvalidArgument("stream record of '" + r.config.name + "' has a bad owner '" +
                                     id + "'");
    }
    r.owners.push_back(owner);
  }
  if (r.owners.size() != r.config.streamlets) {
    return Status::InvalidArgument("stream record of '" + r.config.name + "' names " +
                                   std::to_string(r.owners.size()) + " owners for " +
                                   std::to_string(r.config.streamlets) + " streamlets");
  }
  r.replicas.resize(r.owners.size());
  std::string sets, isr, epochs;
  if (!Value(text, "replicas", &sets)) {
    for (size_t i = 0; i < r.owners.size(); ++i) {
      r.replicas[i].replicas = {r.owners[i]};
      r.replicas[i].isr = {r.owners[i]};
    }
  } else {
    const std::string bad = "stream record of '" + r.config.name + "' has bad replica sets";
    if (!Value(text, "isr", &isr) || !Value(text, "leader_epochs", &epochs)) {
      return Status::InvalidArgument(bad + ": isr or leader_epochs missing");
    }
    std::istringstream set_in(sets), isr_in(isr), epoch_in(epochs);
    for (size_t i = 0; i < r.owners.size(); ++i) {
      std::string one_set, one_isr, one_epoch;
      net::ReplicaSet& set = r.replicas[i];
      if (!std::getline(set_in, one_set, ',') || !std::getline(isr_in, one_isr, ',') ||
          !std::getline(epoch_in, one_epoch, ',') || !SplitIds(one_set, ':', &set.replicas) ||
          !SplitIds(one_isr, ':', &set.isr)) {
        return Status::InvalidArgument(bad + " for streamlet " + std::to_string(i));
      }
      auto [end, ec] =
          std::from_chars(one_epoch.data(), one_epoch.data() + one_epoch.size(), set.leader_epoch);
      if (ec != std::errc() || end != one_epoch.data() + one_epoch.size() ||
          set.isr.front() != r.owners[i]) {
        return Status::InvalidArgument(bad + " for streamlet " + std::to_string(i) +
                                       ": its leader must come first in its in-sync set");
      }
    }
  }
  r.version = static_cast<uint32_t>(node_version) + 1;
  return r;
}

Status NotHere(const std::string& stream, uint32_t streamlet, uint32_t owner,
               const std::vector<BrokerRecord>& brokers) {
  const std::string what =
      "streamlet " + std::to_string(streamlet) + " of stream '" + stream + "' is stored by broker ";
  for (const BrokerRecord& b : brokers) {
    if (b.id == owner) return Status::NotOwner(what + std::to_string(owner) + " at " + b.address);
  }
  return Status::BrokerUnavailable(
      what + std::to_string(owner) +
      ", which is not registered now (stopped, crashed or cut off from ZooKeeper)");
}

}  // namespace nearstream::cluster
