// The ReplicaAppend requests one worker of a follower took and has not answered yet: their
// chunks are checked as they come and go to their copies' files a run at a time
// (ZkCluster::StageReplica; docs/cluster.md, "Replication"). RequestHandler::AnswerReplicas
// writes what is left and answers them in the order they came, before the worker answers any
// later request: a leader matches a follower's answers to its requests in order.
#pragma once

#include <cstddef>
#include <vector>

#include "nearstream/broker/request.h"
#include "nearstream/cluster/zk_cluster.h"
#include "nearstream/common/status.h"

namespace nearstream::broker {

struct StagedReplicaAppend {
  Request req;     // holds the frame its chunk points into
  Status refused;  // its own error; when OK it is answered with the outcome of `run`
  size_t run = 0;
};

struct ReplicaWriteBatch {
  cluster::ZkCluster::ReplicaWrites writes;
  std::vector<StagedReplicaAppend> staged;
};

}  // namespace nearstream::broker
