// The nearstream CLI's connections to the brokers named by --broker: one address, or a cluster's
// bootstrap list "host:port[,host:port...]" (docs/cluster.md). Commands that are not per
// streamlet talk to the first reachable broker of the list; per-streamlet requests (produce,
// consume, metadata) go to each streamlet's owner when the list names several brokers, as
// nearstream-perf does, and transactions (per broker) to every registered broker. A single address
// takes every request, so a cluster broker answers NOT_OWNER for another broker's streamlet.
// Header-only: tools/ is not part of the library.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nearstream/common/status.h"
#include "nearstream/net/client.h"
#include "nearstream/net/cluster_placement.h"

namespace nearstream::tools {

class BrokerConnections {
 public:
  // `addresses`: the --broker list, already checked to parse; not empty.
  BrokerConnections(std::vector<std::string> addresses, std::string client_name)
      : addresses_(std::move(addresses)), client_name_(std::move(client_name)) {}

  // Whether per-streamlet requests are routed to the streamlets' owners.
  bool routed() const { return addresses_.size() > 1; }

  // The connection to the first broker of the list that accepts one and a handshake.
  Result<net::Client*> First() {
    if (!first_.empty()) {
      Result<net::Client*> client = To(first_);
      if (client.ok() || !routed()) return client;
      first_.clear();  // gone since: look for another
    }
    std::string failures;
    Status last;
    for (const std::string& address : addresses_) {
      Result<net::Client*> client = To(address);
      if (client.ok()) {
        first_ = address;
        return client;
      }
      last = client.status();
      failures += (failures.empty() ? "" : "; ") + last.message();
    }
    if (addresses_.size() == 1) return last;  // it names the address already
    return Status(last.code(), "no broker of " + Joined() + " answered: " + failures);
  }

  // The brokers registered now (ascending id), as the first reachable broker sees them; asked
  // with `stream`'s placement only, so a cluster of many streams answers briefly.
  Result<std::vector<net::BrokerInfo>> Registered(const std::string& stream) {
    ASSIGN_OR_RETURN(net::Client * client, First());
    ASSIGN_OR_RETURN(net::ClusterMetadataResponse m, client->ClusterMetadata({stream}));
    return std::move(m.brokers);
  }

  // The connection to `address`, connected and handshaken on first use.
  Result<net::Client*> To(const std::string& address) {
    auto it = clients_.find(address);
    if (it == clients_.end()) {
      ASSIGN_OR_RETURN(net::Client client, net::Client::Connect(address));
      RETURN_IF_ERROR(client.Handshake(client_name_).status());
      it = clients_.emplace(address, std::move(client)).first;
    }
    return &it->second;
  }

  // Each broker's streamlets among `streamlets` (ascending), keyed by its address. Empty
  // `streamlets` means every streamlet of the stream: then a single broker gets an empty list,
  // which is "all" in a Metadata request.
  Result<std::map<std::string, std::vector<uint32_t>>> ByBroker(const std::string& stream,
                                                                std::vector<uint32_t> streamlets) {
    if (!routed()) {
      RETURN_IF_ERROR(First().status());
      return std::map<std::string, std::vector<uint32_t>>{{first_, std::move(streamlets)}};
    }
    ASSIGN_OR_RETURN(const net::ClusterPlacement* placement, PlacementOf(stream));
    if (streamlets.empty()) {
      for (uint32_t s = 0; s < placement->streamlets(); ++s) streamlets.push_back(s);
    }
    for (uint32_t s : streamlets) RETURN_IF_ERROR(CheckStreamlet(stream, *placement, s));
    return placement->ByBroker(streamlets);
  }

  // Drops the placement of `stream`: the next request loads it again.
  void Forget(const std::string& stream) { placements_.erase(stream); }

  // Drops the connections that broke (their broker stopped or crashed): the next request to
  // that address connects again, and First() looks for a broker that answers.
  void DropBroken() {
    for (auto it = clients_.begin(); it != clients_.end();) {
      if (it->second.ok()) {
        ++it;
        continue;
      }
      if (it->first == first_) first_.clear();
      it = clients_.erase(it);
    }
  }

  // The connection for `streamlet`'s requests: its owner's, or the single broker's.
  Result<net::Client*> ForStreamlet(const std::string& stream, uint32_t streamlet) {
    if (!routed()) return First();
    ASSIGN_OR_RETURN(const net::ClusterPlacement* placement, PlacementOf(stream));
    RETURN_IF_ERROR(CheckStreamlet(stream, *placement, streamlet));
    return To(placement->AddressOf(streamlet));
  }

 private:
  std::string Joined() const {
    std::string out;
    for (const std::string& a : addresses_) out += (out.empty() ? "" : ",") + a;
    return out;
  }

  // Loaded once per stream, and again after Forget() (a NOT_OWNER: a streamlet moved).
  Result<const net::ClusterPlacement*> PlacementOf(const std::string& stream) {
    auto it = placements_.find(stream);
    if (it == placements_.end()) {
      // The first reachable broker first, so an unreachable one is not tried again.
      RETURN_IF_ERROR(First().status());
      std::string bootstrap = first_;
      for (const std::string& a : addresses_) {
        if (a != first_) bootstrap += "," + a;
      }
      ASSIGN_OR_RETURN(net::ClusterPlacement placement,
                       net::ClusterPlacement::Load(bootstrap, stream));
      it = placements_.emplace(stream, std::move(placement)).first;
    }
    return &it->second;
  }

  static Status CheckStreamlet(const std::string& stream, const net::ClusterPlacement& placement,
                               uint32_t streamlet) {
    if (streamlet < placement.streamlets()) return Status::Ok();
    return Status::StreamletNotFound("streamlet " + std::to_string(streamlet) + " of stream '" +
                                     stream + "' does not exist (it has " +
                                     std::to_string(placement.streamlets()) + " streamlets)");
  }

  const std::vector<std::string> addresses_;
  const std::string client_name_;
  std::string first_;  // the address First() reached; empty before
  std::map<std::string, net::Client> clients_;
  std::map<std::string, net::ClusterPlacement> placements_;
};

}  // namespace nearstream::tools
