// Executes requests against the stream store. Called by worker threads; stateless apart from
// the shared store, waiters and metrics, so any worker may run any request.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "nearstream/broker/append_batch.h"
#include "nearstream/broker/fetch_waiters.h"
#include "nearstream/broker/metrics.h"
#include "nearstream/broker/replica_write_batch.h"
#include "nearstream/broker/request.h"
#include "nearstream/broker/response_writer.h"
#include "nearstream/cluster/zk_cluster.h"
#include "nearstream/net/out_frame.h"
#include "nearstream/push/push_manager.h"
#include "nearstream/storage/stream_store.h"

namespace nearstream::broker {

struct HandlerOptions {
  uint64_t broker_epoch = 0;
  uint32_t max_frame_bytes = net::kDefaultMaxFrameBytes;
  // Defaults for CreateStream fields sent as 0.
  uint32_t default_segment_bytes = 8u << 20;
  uint32_t default_segments_per_group = 16;
  uint32_t default_active_groups = 1;
  uint32_t max_wait_ms = 60000;  // caps a client's long-poll
  // How a standalone broker describes itself in ClusterMetadata (a cluster member's view comes
  // from ZooKeeper).
  uint32_t broker_id = 0;
  std::string address;
  std::string host;
};

class RequestHandler {
 public:
  // All pointers must outlive the handler; `push` may be null (push RPCs then fail); `cluster`
  // is null on a standalone broker.
  RequestHandler(HandlerOptions options, storage::StreamStore* store, FetchWaiters* waiters,
                 BrokerMetrics* metrics, push::PushManager* push = nullptr,
                 cluster::ZkCluster* cluster = nullptr);

  // Runs `req`. Returns true with the response frame in `*response`, or false when the request
  // was parked: a long-poll fetch comes back later through the waiters; an Append to a
  // replicated stream waits in `appends` for SettleAppends, a TxnAppend to one for
  // SettleTxnAppends; a ReplicaAppend waits in `replicas` for AnswerReplicas. Both belong to
  // the calling worker.
  bool Handle(Request& req, net::OutFrame* response, AppendBatch* appends,
              ReplicaWriteBatch* replicas);
  // Writes the chunks `replicas` staged and answers their ReplicaAppends in `writer`; a worker
  // calls it after each batch of requests, and before any request but a ReplicaAppend.
  void AnswerReplicas(ReplicaWriteBatch* replicas, ResponseWriter* writer);
  // The appends to replicated streams (append_requests.cc). SendAppends sends the chunks
  // `appends` took since the last send to the followers, as a flight, without awaiting their
  // answers; SettleAppends awaits the oldest flights' answers until `keep` are left, publishes
  // their chunks (or discards them) and answers their requests. A worker sends after each batch
  // of requests and settles all but the newest flight, so that the next batch is written while
  // the last one's round trip goes on; it settles every flight before it waits for more requests.
  // FlushAppends does both, settling everything.
  void SendAppends(AppendBatch* appends);
  void SettleAppends(AppendBatch* appends, size_t keep);
  void FlushAppends(AppendBatch* appends);
  // The TxnAppends to replicated streams that `appends` took (transaction_requests.cc): sends
  // the writes staged in their scopes, all scopes at once, awaits the answers and answers the
  // requests in `writer`. A worker calls it after each batch of requests, and before any
  // request but a TxnAppend (which may be a commit that must find them acknowledged).
  void SettleTxnAppends(AppendBatch* appends, ResponseWriter* writer);

  // Where clients reach this broker, as a standalone broker's ClusterMetadata says; set before
  // the workers start.
  void set_address(std::string address) { address_ = std::move(address); }

 private:
  void Handshake(const Request& req, Bytes* out);
  void CreateStream(const Request& req, Bytes* out);
  void DeleteStream(const Request& req, Bytes* out);
  void DescribeStream(const Request& req, Bytes* out);
  void ListStreams(const Request& req, Bytes* out);
  void Metadata(const Request& req, Bytes* out);
  // True when answered in `out`; false when deferred into `appends` (append_requests.cc).
  bool Append(Request& req, Bytes* out, AppendBatch* appends);
  // The answer to an Append request, once every chunk of it is settled.
  void FinishAppend(const Request& req, storage::Stream* stream, const net::AppendResponse& r,
                    const AppendTally& tally, Bytes* out);
  bool Fetch(Request& req, net::OutFrame* response);
  void Stats(const Request& req, Bytes* out);
  void LookupTimestamp(const Request& req, Bytes* out);
  void ClusterMetadata(const Request& req, Bytes* out);
  void MoveStreamlet(const Request& req, Bytes* out);
  void SealStreamlet(const Request& req, Bytes* out);
  // True when answered in `out`; false when staged into `replicas`.
  bool ReplicaAppend(Request& req, Bytes* out, ReplicaWriteBatch* replicas);
  void ReplicaPublished(const Request& req, Bytes* out);
  void ReplicaJoin(const Request& req, Bytes* out);
  void ReplicaMove(const Request& req, Bytes* out);
  void ReplicaCheck(const Request& req, Bytes* out);
  void ReplicaTxn(const Request& req, Bytes* out);
  void ReplicaTxnFiles(const Request& req, Bytes* out);
  // The transactions a request's scope names, on a broker that serves them (the leader of a
  // streamlet scope's streamlet).
  Result<storage::StreamTransactions*> ScopeOf(storage::Stream& stream, uint32_t scope) const;
  // A transactional write of `scope` failed with `status`: a STORAGE_ERROR of a streamlet scope
  // (a replicated stream) is noted for its hand-over (ZkCluster::NoteStorageFailure).
  void NoteTxnStorageFailure(const storage::Stream& stream, uint32_t scope, const Status& status);
  void PushSubscribe(const Request& req, Bytes* out);
  void PushUpdate(const Request& req, Bytes* out);
  void PushClose(const Request& req, Bytes* out);
  // Transactions (transaction_requests.cc).
  void TxnInit(const Request& req, Bytes* out);
  void TxnBegin(const Request& req, Bytes* out);
  // True when answered in `out`; false when its chunks wait in `appends` (a replicated stream).
  bool TxnAppend(Request& req, Bytes* out, AppendBatch* appends);
  // The answer to a TxnAppend request, once every chunk of it is settled.
  void FinishTxnAppend(const Request& req, const net::AppendResponse& r, const AppendTally& tally,
                       Bytes* out);
  static AppendTally Tally(const DeferredTxnAppend& d);
  // TxnPrepare, TxnCommit and TxnAbort: one body (TxnRef), one empty answer.
  void TxnEnd(const Request& req, Bytes* out);
  void TxnList(const Request& req, Bytes* out);

  // The local stream `name` (in a cluster, made first from its placement if this broker has not
  // made it yet). STREAM_NOT_FOUND when there is none or it is being deleted;
  // CLUSTER_UNAVAILABLE when only ZooKeeper could tell and it is out of reach.
  Result<std::shared_ptr<storage::Stream>> FindStream(const std::string& name);
  // The streamlet `id` of `stream` if this broker serves it: STREAMLET_NOT_FOUND past the
  // stream's count; NOT_OWNER / BROKER_UNAVAILABLE when another broker of the cluster stores it.
  // `replica_read`: a Fetch that a follower in sync may answer from its copy (kFlagReplicaRead).
  Result<storage::Streamlet*> Served(storage::Stream& stream, uint32_t id,
                                     bool replica_read = false) const;
  // OK when every split of `rings` is a streamlet this broker serves (push carries only those).
  // `replica_read`: streamlets this broker pushes from its copy count too (kFlagReplicaRead).
  Status ServesRings(const std::string& stream, const std::vector<net::PushRing>& rings,
                     bool replica_read = false) const;

  // Writes a whole OK response whose body `body` encodes.
  void Respond(const Request& req, Bytes* out, const std::function<void(ByteWriter&)>& body);
  // Writes a whole response carrying only a status.
  void Error(const Request& req, const Status& status, Bytes* out);

  const HandlerOptions options_;
  storage::StreamStore* const store_;
  FetchWaiters* const waiters_;
  BrokerMetrics* const metrics_;
  push::PushManager* const push_;
  cluster::ZkCluster* const cluster_;
  std::string address_;

 public:
  // The values behind the Stats RPC and /metrics; set by the server, which knows its threads.
  std::function<MetricValues()> collect_metrics;
};

}  // namespace nearstream::broker
