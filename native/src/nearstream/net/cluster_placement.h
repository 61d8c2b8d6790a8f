// Where a stream's streamlets live, as a tool (nearstream, nearstream-perf) needs it to send each
// streamlet's requests to its broker (docs/cluster.md): asked with ClusterMetadata of the first
// reachable broker of a bootstrap list "host:port[,host:port...]". A standalone broker answers with
// itself as the owner of every streamlet, so tools have one code path.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nearstream/common/status.h"
#include "nearstream/net/client.h"

namespace nearstream::net {

class ClusterPlacement {
 public:
  // Asks the brokers of `bootstrap` in turn; STREAM_NOT_FOUND when the stream is not placed,
  // BROKER_UNAVAILABLE when one of its streamlets' brokers is not registered.
  static Result<ClusterPlacement> Load(const std::string& bootstrap, const std::string& stream);

  // The bootstrap list's addresses (INVALID_ARGUMENT for an empty one).
  static Result<std::vector<std::string>> SplitBootstrap(const std::string& bootstrap);

  uint32_t streamlets() const { return static_cast<uint32_t>(owners_.size()); }
  // The address of the broker that stores `streamlet` (< streamlets()).
  const std::string& AddressOf(uint32_t streamlet) const {
    return addresses_.at(owners_[streamlet]);
  }
  uint32_t OwnerOf(uint32_t streamlet) const { return owners_[streamlet]; }
  // Each broker's streamlets among `streamlets`, keyed by its address, ascending streamlet.
  std::map<std::string, std::vector<uint32_t>> ByBroker(
      const std::vector<uint32_t>& streamlets) const;

 private:
  std::vector<uint32_t> owners_;               // broker id of streamlet i
  std::map<uint32_t, std::string> addresses_;  // broker id -> address
};

}  // namespace nearstream::net
