// ZooKeeper C client return codes as the broker's statuses, shared by the files of ZkCluster.
#pragma once

#include <string>

#include "nearstream/common/status.h"

namespace nearstream::cluster {

// ZooKeeper's largest node (jute.maxbuffer): every read fits.
inline constexpr int kMaxZkNodeBytes = 1 << 20;

// Errors of a call that did not reach a quorum: ZooKeeper is out of reach for now.
bool ZkUnreachable(int rc);

// CLUSTER_UNAVAILABLE for an unreachable ZooKeeper, INTERNAL for anything else, naming `what`.
Status ZkError(const std::string& what, int rc);

}  // namespace nearstream::cluster
