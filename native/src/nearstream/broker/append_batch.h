// The Append requests one worker took in one go whose answers wait for replication
// (storage/held_appends.h; docs/cluster.md, "Replication"): their chunks are written and held
// unpublished; RequestHandler::FlushAppends sends them to the followers, publishes them and
// answers the requests. One worker owns an instance.
#pragma once

#include <memory>
#include <vector>

#include "nearstream/broker/request.h"
#include "nearstream/net/protocol.h"
#include "nearstream/storage/held_appends.h"
#include "nearstream/storage/stream_store.h"

namespace nearstream::broker {

// What an Append request's answer counts, for the metrics.
struct AppendTally {
  uint64_t chunks = 0;
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t rejected = 0;
  uint64_t duplicates = 0;
};

// An Append request with held chunks: answered once they are published or discarded.
struct DeferredAppend {
  Request req;
  std::shared_ptr<storage::Stream> stream;
  net::AppendResponse response;
  AppendTally tally;
  // Per result: the streamlet holding its chunk until the flush (null once settled), and the
  // chunk's records and bytes (taken back from the tally when the chunk is discarded).
  std::vector<storage::Streamlet*> held;
  std::vector<uint64_t> records;
  std::vector<uint64_t> bytes;
  bool building = true;  // its Append is still running: answered by it, not by the flush
};

struct AppendBatch {
  storage::HeldAppends held;
  std::vector<DeferredAppend> deferred;
};

}  // namespace nearstream::broker
