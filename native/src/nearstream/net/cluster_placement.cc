#include "nearstream/net/cluster_placement.h"

#include <sstream>

namespace nearstream::net {

Result<std::vector<std::string>> ClusterPlacement::SplitBootstrap(const std::string& bootstrap) {
  std::vector<std::string> out;
  std::istringstream in(bootstrap);
  std::string address;
  while (std::getline(in, address, ',')) {
    if (!address.empty()) out.push_back(address);
  }
  if (out.empty()) return Status::InvalidArgument("no broker address in '" + bootstrap + "'");
  return out;
}

Result<ClusterPlacement> ClusterPlacement::Load(const std::string& bootstrap,
                                                const std::string& stream) {
  ASSIGN_OR_RETURN(std::vector<std::string> addresses, SplitBootstrap(bootstrap));
  Status last;
  for (const std::string& address : addresses) {
    auto client = Client::Connect(address);
    if (!client.ok()) {
      last = client.status();
      continue;
    }
    auto view = client->ClusterMetadata({stream});
    if (!view.ok()) {
      last = view.status();
      continue;
    }
    if (view->streams.empty()) {
      return Status::StreamNotFound("stream '" + stream + "' does not exist");
    }
    ClusterPlacement p;
    p.owners_ = view->streams[0].owners;
    for (const BrokerInfo& b : view->brokers) p.addresses_[b.id] = b.address;
    // A broker alone (standalone, or a cluster of one) is reached where it was just reached: a
    // standalone broker listening on 0.0.0.0 has no better address to give.
    if (view->brokers.size() == 1) p.addresses_[view->brokers[0].id] = address;
    for (uint32_t s = 0; s < p.owners_.size(); ++s) {
      if (!p.addresses_.contains(p.owners_[s])) {
        return Status::BrokerUnavailable(
            "streamlet " + std::to_string(s) + " of stream '" + stream + "' is stored by broker " +
            std::to_string(p.owners_[s]) + ", which is not registered now");
      }
    }
    return p;
  }
  return Status(last.code(), "no broker of " + bootstrap + " answered: " + last.message());
}

std::map<std::string, std::vector<uint32_t>> ClusterPlacement::ByBroker(
    const std::vector<uint32_t>& streamlets) const {
  std::map<std::string, std::vector<uint32_t>> out;
  for (uint32_t s : streamlets) out[AddressOf(s)].push_back(s);
  return out;
}

}  // namespace nearstream::net
