// What the cluster stores in ZooKeeper (docs/cluster.md), as plain values: a broker's
// registration, a stream's placement, and the rule that places a new stream's streamlets. No
// ZooKeeper calls here, so all of it is unit-tested without a server.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nearstream/common/status.h"
#include "nearstream/net/protocol.h"
#include "nearstream/storage/stream_config.h"

namespace nearstream::cluster {

// A broker's ephemeral node /brokers/ids/<id>.
struct BrokerRecord {
  uint32_t id = 0;
  std::string address;  // host:port where clients reach it
  std::string host;     // the machine it runs on
};

// A stream's node /streams/<name>: its configuration and the owner of each streamlet, which
// is its leader when the stream is replicated.
struct StreamRecord {
  storage::StreamConfig config;
  std::vector<uint32_t> owners;  // broker id of streamlet i
  // Streamlet i's copies: replicas (config.replication brokers), the in-sync set (owners[i]
  // first) and the leader epoch. A stream without replication has replicas = isr = {owner}.
  std::vector<net::ReplicaSet> replicas;
  uint32_t version = 0;  // the node's version + 1 (ClusterMetadata's placement version)

  bool Follows(uint32_t streamlet, uint32_t broker) const;  // a replica, not the leader
  // A follower in the in-sync set.
  bool FollowsInSync(uint32_t streamlet, uint32_t broker) const;
};

// The controller's election (docs/cluster.md, "The controller"): the ephemeral /controller
// names the elected broker and its epoch; the persistent /controller_epoch keeps the last
// election's record, and its ZooKeeper version fences a deposed controller.
struct ControllerRecord {
  uint32_t broker = 0;
  uint64_t epoch = 0;  // elections so far, this one included
};

// Where ZooKeeper is: "host:port[,host:port...][/root]". Every node of the cluster lives under
// `root` ("/nearstream" when none is given), so one ensemble can serve several clusters.
struct ZkAddress {
  std::string servers;
  std::string root;
};
Result<ZkAddress> ParseZkAddress(const std::string& text);

// Round-robin over `live` (sorted, deduplicated here), starting at a broker chosen by the stream
// name's hash so that many small streams do not all start on the lowest id.
// INVALID_ARGUMENT when `live` is empty.
Result<std::vector<uint32_t>> AssignOwners(const std::string& stream, uint32_t streamlets,
                                           std::vector<uint32_t> live);

std::string FormatBrokerRecord(const BrokerRecord& broker);
Result<BrokerRecord> ParseBrokerRecord(uint32_t id, const std::string& text);

std::string FormatControllerRecord(const ControllerRecord& controller);
Result<ControllerRecord> ParseControllerRecord(const std::string& text);

// The copies of each streamlet: `replication` brokers of `live` (sorted, deduplicated here) in
// round-robin order from the streamlet's owner (AssignOwners), so the first is the owner and
// the others are the brokers that follow it. INVALID_ARGUMENT when fewer brokers are live.
Result<std::vector<net::ReplicaSet>> AssignReplicas(const std::string& stream, uint32_t streamlets,
                                                    uint32_t replication,
                                                    std::vector<uint32_t> live);

// `replicas` may be empty: every streamlet then has its owner as its one replica.
std::string FormatStreamRecord(const storage::StreamConfig& config,
                               const std::vector<uint32_t>& owners,
                               const std::vector<net::ReplicaSet>& replicas = {});
std::string FormatStreamRecord(const StreamRecord& record);
// `node_version` is the ZooKeeper node's version (0 after the create).
Result<StreamRecord> ParseStreamRecord(const std::string& text, int32_t node_version);

// The status of a request for a streamlet that `owner` stores: NOT_OWNER naming it when it is
// registered (`brokers`), BROKER_UNAVAILABLE naming it when it is not.
Status NotHere(const std::string& stream, uint32_t streamlet, uint32_t owner,
               const std::vector<BrokerRecord>& brokers);

}  // namespace nearstream::cluster
