// A blocking TCP client for the Nearstream wire protocol, with request pipelining.
//
// Send() writes one request frame and returns its request id without waiting; Receive() returns
// the next response frame, whichever request it answers (the broker may answer requests out of
// order). Call() and the typed helpers (CreateStream, Append, Fetch, ...) are the synchronous
// path: they need no other request in flight, so the next response is theirs.
//
//   ASSIGN_OR_RETURN(Client client, Client::Connect("127.0.0.1:7070"));
//   RETURN_IF_ERROR(client.Handshake("my-tool").status());
//   ASSIGN_OR_RETURN(FetchReply reply, client.Fetch(request));
//   for (const FetchResult& r : reply.response.results) { ... }
//
// A broker error (a non-OK status in the response header) becomes a Status with the broker's code
// and message. A local failure (connect, I/O, timeout mid-frame, garbled frame) is kIoError or
// kMalformedRequest and leaves the client broken: every later call returns the same error.
//
// Threading: a Client is used by one thread at a time; it holds no locks. Move-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nearstream/common/byte_io.h"
#include "nearstream/common/status.h"
#include "nearstream/net/client_socket.h"
#include "nearstream/net/protocol.h"
#include "nearstream/storage/stream_config.h"

struct iovec;  // <sys/uio.h>

namespace nearstream::net {

inline constexpr int kDefaultConnectTimeoutMs = 5000;
inline constexpr int kDefaultIoTimeoutMs = 30000;

// One response frame as received.
struct Response {
  FrameHeader header;
  Status status;  // the broker's status for the request
  Bytes body;     // the response body; empty unless status is OK
};

// A decoded Fetch response together with the buffer its blocks point into. Keep the whole
// FetchReply alive while reading blocks; moving it keeps the pointers valid, copying is refused.
struct FetchReply {
  FetchReply() = default;
  FetchReply(FetchReply&&) = default;
  FetchReply& operator=(FetchReply&&) = default;
  FetchReply(const FetchReply&) = delete;
  FetchReply& operator=(const FetchReply&) = delete;

  Bytes body;
  FetchResponse response;
};

class Client {
 public:
  // `address` is "host:port" or "[ipv6]:port". Connects with TCP_NODELAY; does not handshake.
  static Result<Client> Connect(const std::string& address,
                                int timeout_ms = kDefaultConnectTimeoutMs);
  static Result<Client> Connect(const BrokerAddress& address,
                                int timeout_ms = kDefaultConnectTimeoutMs);
  static Result<Client> Connect(const std::string& host, uint16_t port,
                                int timeout_ms = kDefaultConnectTimeoutMs) {
    return Connect(BrokerAddress{host, port}, timeout_ms);
  }

  Client(Client&& other) noexcept;
  Client& operator=(Client&& other) noexcept;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();

  // How long Receive() and blocked writes wait before failing (default kDefaultIoTimeoutMs).
  void set_io_timeout_ms(int ms) { io_timeout_ms_ = ms; }
  int io_timeout_ms() const { return io_timeout_ms_; }
  const BrokerAddress& address() const { return address_; }
  // Requests sent and not yet answered.
  size_t in_flight() const { return in_flight_; }
  bool ok() const { return broken_.ok(); }
  // Whether the broker closed this connection (or sent something unasked) while no request was
  // in flight on it, marking it broken then; never waits. A connection kept idle across the
  // broker's restart is found closed here, before a request goes out on it and is lost.
  bool ClosedWhileIdle();
  // Marks every request this client sends as forwarded (kFlagForwarded): a broker's client to
  // the cluster's controller.
  void set_forwarding(bool forwarding) { SetFlag(kFlagForwarded, forwarding); }
  // Marks every request as one an in-sync follower may answer from its copy (kFlagReplicaRead;
  // docs/cluster.md, "Follower reads"): a reader on a follower's host.
  void set_replica_reads(bool replica_reads) { SetFlag(kFlagReplicaRead, replica_reads); }

  // ---- pipelined path ------------------------------------------------------------------------

  // Writes one request frame with `body` (already encoded) and returns its request id.
  Result<uint64_t> Send(Opcode opcode, const uint8_t* body, size_t size);
  Result<uint64_t> Send(Opcode opcode, const Bytes& body) {
    return Send(opcode, body.data(), body.size());
  }
  // Writes an Append request without copying the chunks into a frame buffer (gather write).
  Result<uint64_t> SendAppend(const AppendRequest& request);

  // Reads the next response frame, waiting up to `timeout_ms` (-1 = io_timeout_ms()) for it to
  // start. A timeout before the first byte of a frame arrives is harmless (kIoError, the client
  // stays usable); the broker's status is returned inside the Response, not as the error.
  Result<Response> Receive(int timeout_ms = -1);

  // ---- synchronous path (nothing else may be in flight) --------------------------------------

  // Sends one request and returns its response; a non-OK broker status becomes the error.
  Result<Response> Call(Opcode opcode, const Bytes& body, int timeout_ms = -1);

  Result<HandshakeResponse> Handshake(const std::string& client_name);
  Status CreateStream(const storage::StreamConfig& config);
  Status DeleteStream(const std::string& name);
  Result<storage::StreamConfig> DescribeStream(const std::string& name);
  Result<std::vector<std::string>> ListStreams();
  // The cluster's brokers and the placement of `streams` (empty = every stream).
  Result<ClusterMetadataResponse> ClusterMetadata(const std::vector<std::string>& streams = {});
  // Sent to the broker that is to own the streamlet (docs/protocol.md, "Moving a streamlet").
  Status MoveStreamlet(const StreamletRef& streamlet);
  Status ReplicaMove(const ReplicaMoveRequest& request);
  Result<ReplicaCheckResponse> ReplicaCheck(const ReplicaCheckRequest& request);
  // A catching-up follower's copy of its leader's transaction files (docs/protocol.md,
  // "ReplicaTxnFiles"); the leader's writes go pipelined (SendReplicaTxns).
  Result<ReplicaTxnFilesResponse> ReplicaTxnFiles(const ReplicaTxnFilesRequest& request);
  Result<SealStreamletResponse> SealStreamlet(const SealStreamletRequest& request);
  // A leader's chunks for a follower, pipelined: writes `count` ReplicaAppend requests in one
  // gathered write, each chunk taken from where it is (no copy into a frame), and returns the
  // first one's id (the others follow it); AwaitReplicaAppends then reads their `count` answers
  // in order and returns the first refusal, or the failure that ended the connection.
  Result<uint64_t> SendReplicaAppends(const ReplicaAppendRequest* requests, size_t count);
  Status AwaitReplicaAppends(uint64_t first_id, size_t count, int timeout_ms = -1) {
    return AwaitAnswers(Opcode::kReplicaAppend, first_id, count, timeout_ms);
  }
  // A leader's transaction file writes for a follower, pipelined the same way: `count`
  // ReplicaTxn requests written one after the other, answered through AwaitAnswers.
  Result<uint64_t> SendReplicaTxns(const ReplicaTxnRequest* requests, size_t count);
  // Reads the `count` answers to the `opcode` requests sent from `first_id` on, in order, and
  // returns the first refusal, or the failure that ended the connection.
  Status AwaitAnswers(Opcode opcode, uint64_t first_id, size_t count, int timeout_ms = -1);
  // `streamlets` empty = all streamlets of the stream.
  Result<MetadataResponse> Metadata(const std::string& stream,
                                    const std::vector<uint32_t>& streamlets = {});
  // Per-streamlet failures are reported in the results, not as the returned Status.
  Result<AppendResponse> Append(const AppendRequest& request);
  // Waits up to request.max_wait_ms plus io_timeout_ms() for the long poll to answer.
  Result<FetchReply> Fetch(const FetchRequest& request);
  Result<StatsResponse> Stats();
  Result<PushSubscribeResponse> PushSubscribe(const PushSubscribeRequest& request);
  Status PushUpdate(const PushUpdateRequest& request);
  Status PushClose(uint64_t subscription_id);

  // Transactions (docs/protocol.md "Transactions"). TxnBegin sends `txn` with serial 0 and
  // returns the new (or, for a retried Begin, the open) transaction's serial. TxnAppend's
  // per-entry failures are in the results, as Append's; its positions are all-zero.
  Result<TxnInitResponse> TxnInit(const TxnInitRequest& request);
  Result<uint64_t> TxnBegin(const TxnRef& txn);
  Result<AppendResponse> TxnAppend(const TxnAppendRequest& request);
  Status TxnPrepare(const TxnRef& txn);
  Status TxnCommit(const TxnRef& txn);
  Status TxnAbort(const TxnRef& txn);
  Result<TxnListResponse> TxnList(const TxnListRequest& request);

  // Closes the connection; later calls fail. Idempotent.
  void Close();

 private:
  Client(int fd, BrokerAddress address);

  void SetFlag(uint8_t flag, bool on) {
    request_flags_ = on ? (request_flags_ | flag) : (request_flags_ & ~flag);
  }
  Status WriteAll(::iovec* iov, size_t count);
  // Makes at least `n` unread bytes available in the receive buffer, waiting until `deadline_ms`
  // (a CLOCK_MONOTONIC time in ms). Consumes nothing.
  Status Fill(size_t n, int64_t deadline_ms);
  Status Fail(Status status);
  // Call's second half: the answer to request `id`, the only one in flight.
  Result<Response> AnswerTo(uint64_t id, Opcode opcode, int timeout_ms);

  int fd_ = -1;
  BrokerAddress address_;
  int io_timeout_ms_ = kDefaultIoTimeoutMs;
  uint32_t max_frame_bytes_ = kDefaultMaxFrameBytes;  // the broker's, learnt at Handshake
  uint64_t next_request_id_ = 1;
  uint8_t request_flags_ = 0;
  size_t in_flight_ = 0;
  Status broken_;  // sticky: set by the first local I/O or framing failure
  Bytes scratch_;  // encoding space for request headers
  Bytes rbuf_;     // received bytes; unread ones are [rpos_, rend_)
  size_t rpos_ = 0;
  size_t rend_ = 0;
};

}  // namespace nearstream::net
