#include "nearstream/cluster/zk_status.h"

#include <zookeeper/zookeeper.h>

namespace nearstream::cluster {

bool ZkUnreachable(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONEXPIRED ||
         rc == ZINVALIDSTATE || rc == ZCLOSING;
}

Status ZkError(const std::string& what, int rc) {
  std::string message = what + ": " + zerror(rc);
  if (ZkUnreachable(rc)) {
    return Status::ClusterUnavailable("ZooKeeper is out of reach: " + message);
  }
  return Status::Internal(message);
}

}  // namespace nearstream::cluster
