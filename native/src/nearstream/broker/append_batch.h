// The Append requests of one worker whose answers wait for replication (storage/held_appends.h;
// docs/cluster.md, "Replication"): their chunks are written and held unpublished;
// RequestHandler::SendAppends sends those of the requests taken since the last send to the
// followers as one flight, SettleAppends publishes the oldest flight's chunks once the answers
// are in and answers its requests. One worker owns an instance. Its transactional appends to
// replicated streams wait here too, for one round trip to the followers (SettleTxnAppends).
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "nearstream/broker/request.h"
#include "nearstream/cluster/zk_cluster.h"
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

// One SendAppends' chunks, on their way to the followers.
struct AppendFlight {
  uint64_t number = 0;  // the HeldAppends flight
  // Its streamlets in the order sent (those whose writes failed are not sent), each with the
  // outcome when it is settled without the followers' answers.
  std::vector<storage::Streamlet*> streamlets;
  std::vector<std::optional<Status>> refused;
  bool replicated = false;  // some were sent: the pipeline has a flight of replicas for it
  std::vector<DeferredAppend> deferred;
};

// A TxnAppend to a replicated stream whose chunks' writes are staged for the followers
// (StreamTransactions::Append with a ticket): answered by SettleTxnAppends once sent.
struct DeferredTxnAppend {
  Request req;
  std::shared_ptr<storage::Stream> stream;  // keeps `scope` alive
  storage::StreamTransactions* scope = nullptr;
  net::AppendResponse response;
  std::vector<uint64_t> tickets;  // per result: what it waits for (0: nothing)
  // Per result: the records and bytes of a chunk stored (0 otherwise), counted once answered.
  std::vector<uint64_t> records;
  std::vector<uint64_t> bytes;
};

struct AppendBatch {
  storage::HeldAppends held;
  std::vector<DeferredTxnAppend> txn_appends;  // waiting for SettleTxnAppends
  std::vector<DeferredAppend> deferred;        // with chunks of the flight not sent yet
  std::deque<AppendFlight> flights;            // oldest first
  cluster::ZkCluster::ReplicaPipeline replicas;
  bool in_flight() const { return !flights.empty(); }
};

}  // namespace nearstream::broker
