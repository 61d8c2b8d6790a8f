#include "nearstream/net/client.h"

#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "nearstream/common/clock.h"

namespace nearstream::net {

namespace {

// Length prefix, frame header, u16 status and the u16 length of the status message.
constexpr size_t kResponseFixedBytes = kFrameLengthPrefix + kFrameHeaderSize + 2 + 2;
constexpr size_t kRequestPrefixBytes = kFrameLengthPrefix + kFrameHeaderSize;
// Responses are bounded by what the client will buffer, not by the broker's request limit: a
// fetch over many streamlets may legitimately exceed it.
constexpr uint32_t kMaxResponseFrameBytes = 1u << 30;
constexpr size_t kReceiveBufferBytes = 256u << 10;

// Waits for `events` on fd until `deadline_ms`; false on timeout, errno-carrying error on failure.
Result<bool> WaitFor(int fd, short events, int64_t deadline_ms) {
  for (;;) {
    int64_t left = deadline_ms - MonotonicNowMs();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return Status::FromErrno(StatusCode::kIoError, "poll", errno);
  }
}

void PutRequestHeader(uint8_t* out, uint32_t frame_length, Opcode opcode, uint64_t id,
                      uint8_t flags) {
  StoreLe32(out, frame_length);
  out[4] = kProtocolVersion;
  out[5] = flags;
  StoreLe16(out + 6, static_cast<uint16_t>(opcode));
  StoreLe64(out + 8, id);
}

template <typename T>
Bytes EncodeBody(void (*encode)(ByteWriter&, const T&), const T& message) {
  Bytes body;
  ByteWriter w(&body);
  encode(w, message);
  return body;
}

}  // namespace

Result<Client> Client::Connect(const std::string& address, int timeout_ms) {
  ASSIGN_OR_RETURN(BrokerAddress parsed, ParseBrokerAddress(address));
  return Connect(parsed, timeout_ms);
}

Result<Client> Client::Connect(const BrokerAddress& address, int timeout_ms) {
  ASSIGN_OR_RETURN(int fd, DialBroker(address, timeout_ms));
  return Client(fd, address);
}

Client::Client(int fd, BrokerAddress address)
    : fd_(fd), address_(std::move(address)), rbuf_(kReceiveBufferBytes) {}

Client::Client(Client&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      address_(std::move(other.address_)),
      io_timeout_ms_(other.io_timeout_ms_),
      max_frame_bytes_(other.max_frame_bytes_),
      next_request_id_(other.next_request_id_),
      request_flags_(other.request_flags_),
      in_flight_(std::exchange(other.in_flight_, 0)),
      broken_(std::exchange(other.broken_, Status::IoError("client was moved from"))),
      scratch_(std::move(other.scratch_)),
      rbuf_(std::move(other.rbuf_)),
      rpos_(std::exchange(other.rpos_, 0)),
      rend_(std::exchange(other.rend_, 0)) {}

Client& Client::operator=(Client&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    address_ = std::move(other.address_);
    io_timeout_ms_ = other.io_timeout_ms_;
    max_frame_bytes_ = other.max_frame_bytes_;
    next_request_id_ = other.next_request_id_;
    request_flags_ = other.request_flags_;
    in_flight_ = std::exchange(other.in_flight_, 0);
    broken_ = std::exchange(other.broken_, Status::IoError("client was moved from"));
    scratch_ = std::move(other.scratch_);
    rbuf_ = std::move(other.rbuf_);
    rpos_ = std::exchange(other.rpos_, 0);
    rend_ = std::exchange(other.rend_, 0);
  }
  return *this;
}

Client::~Client() { Close(); }

void Client::Close() {
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  if (broken_.ok()) broken_ = Status::IoError("client connection is closed");
}

bool Client::ClosedWhileIdle() {
  if (!broken_.ok()) return true;
  if (in_flight_ > 0 || fd_ < 0) return false;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (rpos_ == rend_ && ::poll(&p, 1, 0) <= 0) return false;  // nothing pending (or EINTR)
  (void)Fail(
      Status::IoError("broker " + address_.ToString() + " closed the connection while idle"));
  return true;
}

Status Client::Fail(Status status) {
  if (broken_.ok()) broken_ = status;
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  return status;
}

Status Client::WriteAll(iovec* iov, size_t count) {
  const int64_t deadline = MonotonicNowMs() + io_timeout_ms_;
  while (count > 0) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = std::min<size_t>(count, IOV_MAX);
    ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        return Fail(
            Status::FromErrno(StatusCode::kIoError, "send to " + address_.ToString(), errno));
      }
      ASSIGN_OR_RETURN(bool ready, WaitFor(fd_, POLLOUT, deadline));
      if (!ready) {
        return Fail(Status::IoError("timed out after " + std::to_string(io_timeout_ms_) +
                                    " ms writing to " + address_.ToString()));
      }
      continue;
    }
    auto left = static_cast<size_t>(n);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<uint8_t*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return Status::Ok();
}

Result<uint64_t> Client::Send(Opcode opcode, const uint8_t* body, size_t size) {
  RETURN_IF_ERROR(broken_);
  if (size > max_frame_bytes_ - kFrameHeaderSize) {
    return Status::InvalidArgument("request of " + std::to_string(size) +
                                   " bytes exceeds the broker's frame limit " +
                                   std::to_string(max_frame_bytes_));
  }
  uint64_t id = next_request_id_++;
  uint8_t header[kRequestPrefixBytes];
  PutRequestHeader(header, static_cast<uint32_t>(kFrameHeaderSize + size), opcode, id,
                   request_flags_);
  iovec iov[2] = {{header, sizeof(header)}, {const_cast<uint8_t*>(body), size}};
  RETURN_IF_ERROR(WriteAll(iov, size > 0 ? 2 : 1));
  ++in_flight_;
  return id;
}

Result<uint64_t> Client::SendAppend(const AppendRequest& request) {
  RETURN_IF_ERROR(broken_);
  // The small fields go to scratch_; the chunks are gathered from where they are.
  scratch_.clear();
  ByteWriter w(&scratch_);
  w.Skip(kRequestPrefixBytes);
  w.Str(request.stream);
  w.U32(static_cast<uint32_t>(request.entries.size()));
  const size_t prefix_end = scratch_.size();
  uint64_t total = scratch_.size();
  for (const AppendEntry& e : request.entries) {
    w.U32(e.streamlet);
    w.U32(e.chunk_size);
    total += 8 + e.chunk_size;
  }
  if (total - kFrameLengthPrefix > max_frame_bytes_) {
    return Status::InvalidArgument("append request of " + std::to_string(total) +
                                   " bytes exceeds the broker's frame limit " +
                                   std::to_string(max_frame_bytes_));
  }
  uint64_t id = next_request_id_++;
  PutRequestHeader(scratch_.data(), static_cast<uint32_t>(total - kFrameLengthPrefix),
                   Opcode::kAppend, id, request_flags_);
  std::vector<iovec> iov;
  iov.reserve(1 + 2 * request.entries.size());
  iov.push_back({scratch_.data(), prefix_end});
  for (size_t i = 0; i < request.entries.size(); ++i) {
    const AppendEntry& e = request.entries[i];
    iov.push_back({scratch_.data() + prefix_end + 8 * i, 8});
    if (e.chunk_size > 0) iov.push_back({const_cast<uint8_t*>(e.chunk), e.chunk_size});
  }
  RETURN_IF_ERROR(WriteAll(iov.data(), iov.size()));
  ++in_flight_;
  return id;
}

Result<uint64_t> Client::SendReplicaAppends(const ReplicaAppendRequest* requests, size_t count) {
  RETURN_IF_ERROR(broken_);
  // Each request's fields before its chunk go to scratch_ (as EncodeReplicaAppendRequest lays
  // them out, the chunk's length last); the chunks are gathered from the leader's segments. All
  // headers are encoded before any iovec points into scratch_, which may grow meanwhile.
  scratch_.clear();
  std::vector<size_t> ends(count);
  const uint64_t first_id = next_request_id_;
  for (size_t k = 0; k < count; ++k) {
    const ReplicaAppendRequest& request = requests[k];
    const size_t start = scratch_.size();
    ByteWriter w(&scratch_);
    w.Skip(kRequestPrefixBytes);
    w.Str(request.stream);
    w.U32(request.streamlet);
    w.U32(request.leader);
    w.U64(request.leader_epoch);
    EncodePosition(w, request.at);
    w.U32(request.chunk_size);
    const uint64_t total = scratch_.size() - start + uint64_t{request.chunk_size};
    if (total - kFrameLengthPrefix > max_frame_bytes_) {
      return Status::InvalidArgument("ReplicaAppend request of " + std::to_string(total) +
                                     " bytes exceeds the broker's frame limit " +
                                     std::to_string(max_frame_bytes_));
    }
    PutRequestHeader(scratch_.data() + start, static_cast<uint32_t>(total - kFrameLengthPrefix),
                     Opcode::kReplicaAppend, first_id + k, request_flags_);
    ends[k] = scratch_.size();
  }
  std::vector<iovec> iov;
  iov.reserve(2 * count);
  size_t start = 0;
  for (size_t k = 0; k < count; ++k) {
    iov.push_back({scratch_.data() + start, ends[k] - start});
    if (requests[k].chunk_size > 0) {
      iov.push_back({const_cast<uint8_t*>(requests[k].chunk), requests[k].chunk_size});
    }
    start = ends[k];
  }
  next_request_id_ += count;
  RETURN_IF_ERROR(WriteAll(iov.data(), iov.size()));
  in_flight_ += count;
  return first_id;
}

Result<uint64_t> Client::SendReplicaTxns(const ReplicaTxnRequest* requests, size_t count) {
  RETURN_IF_ERROR(broken_);
  // Every frame goes to scratch_, then all in one write: a worker's batch of transactional
  // appends is many small writes, and one write each cost the leader a syscall apiece.
  scratch_.clear();
  const uint64_t first_id = next_request_id_;
  for (size_t k = 0; k < count; ++k) {
    const size_t start = scratch_.size();
    ByteWriter w(&scratch_);
    w.Skip(kRequestPrefixBytes);
    EncodeReplicaTxnRequest(w, requests[k]);
    const uint64_t frame = scratch_.size() - start - kFrameLengthPrefix;
    if (frame > max_frame_bytes_) {
      return Status::InvalidArgument("ReplicaTxn request of " + std::to_string(frame) +
                                     " bytes exceeds the broker's frame limit " +
                                     std::to_string(max_frame_bytes_));
    }
    PutRequestHeader(scratch_.data() + start, static_cast<uint32_t>(frame), Opcode::kReplicaTxn,
                     first_id + k, request_flags_);
  }
  next_request_id_ += count;
  iovec iov{scratch_.data(), scratch_.size()};
  if (count > 0) RETURN_IF_ERROR(WriteAll(&iov, 1));
  in_flight_ += count;
  return first_id;
}

Status Client::AwaitAnswers(Opcode opcode, uint64_t first_id, size_t count, int timeout_ms) {
  // Every answer is read, a refusal included, so that the connection stays in step.
  Status first_refusal;
  for (size_t k = 0; k < count; ++k) {
    Result<Response> r = Receive(timeout_ms);
    if (!r.ok()) return Fail(r.status());  // a late answer would be taken for the next one's
    if (r->header.request_id != first_id + k || r->header.opcode != static_cast<uint16_t>(opcode)) {
      return Fail(Status::MalformedRequest("broker " + address_.ToString() + " answered request " +
                                           std::to_string(r->header.request_id) + " (" +
                                           OpcodeName(r->header.opcode) + ") where " +
                                           OpcodeName(static_cast<uint16_t>(opcode)) + " " +
                                           std::to_string(first_id + k) + " was next"));
    }
    if (!r->status.ok() && first_refusal.ok()) first_refusal = r->status;
  }
  return first_refusal;
}

Status Client::Fill(size_t n, int64_t deadline_ms) {
  if (rend_ - rpos_ >= n) return Status::Ok();
  if (rbuf_.size() - rpos_ < n) {  // make room: move the unread bytes to the front, then grow
    std::memmove(rbuf_.data(), rbuf_.data() + rpos_, rend_ - rpos_);
    rend_ -= rpos_;
    rpos_ = 0;
    if (rbuf_.size() < n) rbuf_.resize(n);
  }
  while (rend_ - rpos_ < n) {
    ssize_t got = recv(fd_, rbuf_.data() + rend_, rbuf_.size() - rend_, 0);
    if (got > 0) {
      rend_ += static_cast<size_t>(got);
      continue;
    }
    if (got == 0) {
      return Fail(Status::IoError("connection closed by broker " + address_.ToString() + " (" +
                                  std::to_string(in_flight_) + " requests unanswered)"));
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Fail(
          Status::FromErrno(StatusCode::kIoError, "receive from " + address_.ToString(), errno));
    }
    Result<bool> ready = WaitFor(fd_, POLLIN, deadline_ms);
    if (!ready.ok()) return Fail(ready.status());
    if (!*ready) {
      return Status::IoError("timed out waiting for a response from " + address_.ToString());
    }
  }
  return Status::Ok();
}

Result<Response> Client::Receive(int timeout_ms) {
  RETURN_IF_ERROR(broken_);
  const int64_t deadline = MonotonicNowMs() + (timeout_ms < 0 ? io_timeout_ms_ : timeout_ms);
  // Nothing is consumed until the fixed part and the message are buffered, so a timeout up to
  // here leaves the stream intact.
  RETURN_IF_ERROR(Fill(kResponseFixedBytes, deadline));
  const uint8_t* p = rbuf_.data() + rpos_;
  const uint32_t length = LoadLe32(p);
  Response r;
  r.header = DecodeFrameHeader(p + kFrameLengthPrefix);
  const uint16_t code = LoadLe16(p + kRequestPrefixBytes);
  const uint16_t message_length = LoadLe16(p + kRequestPrefixBytes + 2);
  if (length < kResponseFixedBytes - kFrameLengthPrefix + message_length ||
      length > kMaxResponseFrameBytes) {
    return Fail(Status(
        StatusCode::kMalformedRequest,
        "bad response frame length " + std::to_string(length) + " from " + address_.ToString()));
  }
  if (!r.header.is_response()) {
    return Fail(Status::MalformedRequest("frame from " + address_.ToString() +
                                         " is not marked as a response"));
  }
  RETURN_IF_ERROR(Fill(kResponseFixedBytes + message_length, deadline));
  p = rbuf_.data() + rpos_;  // Fill may have moved the buffer
  std::string message(reinterpret_cast<const char*>(p + kResponseFixedBytes), message_length);
  r.status = Status(static_cast<StatusCode>(code), std::move(message));
  rpos_ += kResponseFixedBytes + message_length;
  const size_t body_length = length + kFrameLengthPrefix - kResponseFixedBytes - message_length;

  // The body: what is buffered, then straight from the socket into place.
  r.body.resize(body_length);
  size_t have = std::min(body_length, rend_ - rpos_);
  if (have > 0) std::memcpy(r.body.data(), rbuf_.data() + rpos_, have);
  rpos_ += have;
  if (rpos_ == rend_) rpos_ = rend_ = 0;
  while (have < body_length) {
    ssize_t got = recv(fd_, r.body.data() + have, body_length - have, 0);
    if (got > 0) {
      have += static_cast<size_t>(got);
      continue;
    }
    if (got == 0) {
      return Fail(
          Status::IoError("connection closed by broker " + address_.ToString() + " mid-frame"));
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Fail(
          Status::FromErrno(StatusCode::kIoError, "receive from " + address_.ToString(), errno));
    }
    ASSIGN_OR_RETURN(bool ready, WaitFor(fd_, POLLIN, deadline));
    if (!ready) {
      // Part of the frame is consumed: the stream cannot be resynchronised.
      return Fail(
          Status::IoError("timed out in the middle of a response from " + address_.ToString()));
    }
  }
  if (in_flight_ > 0) --in_flight_;
  return r;
}

Result<Response> Client::Call(Opcode opcode, const Bytes& body, int timeout_ms) {
  RETURN_IF_ERROR(broken_);
  if (in_flight_ != 0) {
    return Status::InvalidArgument(
        std::string("synchronous ") + OpcodeName(static_cast<uint16_t>(opcode)) + " call while " +
        std::to_string(in_flight_) + " pipelined requests are in flight; use Send/Receive");
  }
  ASSIGN_OR_RETURN(uint64_t id, Send(opcode, body));
  return AnswerTo(id, opcode, timeout_ms);
}

Result<Response> Client::AnswerTo(uint64_t id, Opcode opcode, int timeout_ms) {
  Result<Response> r = Receive(timeout_ms);
  // A late answer would be mistaken for the next call's, so a timeout ends the connection.
  if (!r.ok()) return Fail(r.status());
  if (r->header.request_id != id || r->header.opcode != static_cast<uint16_t>(opcode)) {
    return Fail(Status::MalformedRequest("broker " + address_.ToString() + " answered request " +
                                         std::to_string(r->header.request_id) + " (" +
                                         OpcodeName(r->header.opcode) + ") while " +
                                         std::to_string(id) + " was the only one in flight"));
  }
  if (!r->status.ok()) return r->status;
  return r;
}

Result<HandshakeResponse> Client::Handshake(const std::string& client_name) {
  HandshakeRequest request;
  request.client_name = client_name;
  ASSIGN_OR_RETURN(Response r,
                   Call(Opcode::kHandshake, EncodeBody(EncodeHandshakeRequest, request)));
  ASSIGN_OR_RETURN(HandshakeResponse h, DecodeHandshakeResponse(r.body.data(), r.body.size()));
  if (h.max_frame_bytes >= kFrameHeaderSize) max_frame_bytes_ = h.max_frame_bytes;
  return h;
}

Status Client::CreateStream(const storage::StreamConfig& config) {
  return Call(Opcode::kCreateStream, EncodeBody(EncodeStreamConfig, config)).status();
}

Status Client::DeleteStream(const std::string& name) {
  return Call(Opcode::kDeleteStream, EncodeBody(EncodeStreamNameRequest, StreamNameRequest{name}))
      .status();
}

Result<storage::StreamConfig> Client::DescribeStream(const std::string& name) {
  ASSIGN_OR_RETURN(Response r, Call(Opcode::kDescribeStream,
                                    EncodeBody(EncodeStreamNameRequest, StreamNameRequest{name})));
  return DecodeStreamConfig(r.body.data(), r.body.size());
}

Result<std::vector<std::string>> Client::ListStreams() {
  ASSIGN_OR_RETURN(Response r, Call(Opcode::kListStreams, Bytes()));
  ASSIGN_OR_RETURN(ListStreamsResponse list,
                   DecodeListStreamsResponse(r.body.data(), r.body.size()));
  return std::move(list.names);
}

Result<ClusterMetadataResponse> Client::ClusterMetadata(const std::vector<std::string>& streams) {
  ClusterMetadataRequest request{streams};
  ASSIGN_OR_RETURN(Response r, Call(Opcode::kClusterMetadata,
                                    EncodeBody(EncodeClusterMetadataRequest, request)));
  return DecodeClusterMetadataResponse(r.body.data(), r.body.size());
}

Status Client::MoveStreamlet(const StreamletRef& streamlet) {
  return Call(Opcode::kMoveStreamlet, EncodeBody(EncodeStreamletRef, streamlet)).status();
}

Result<ReplicaCheckResponse> Client::ReplicaCheck(const ReplicaCheckRequest& request) {
  ASSIGN_OR_RETURN(Response r,
                   Call(Opcode::kReplicaCheck, EncodeBody(EncodeReplicaCheckRequest, request)));
  return DecodeReplicaCheckResponse(r.body.data(), r.body.size());
}

Result<ReplicaTxnFilesResponse> Client::ReplicaTxnFiles(const ReplicaTxnFilesRequest& request) {
  ASSIGN_OR_RETURN(Response r, Call(Opcode::kReplicaTxnFiles,
                                    EncodeBody(EncodeReplicaTxnFilesRequest, request)));
  return DecodeReplicaTxnFilesResponse(r.body.data(), r.body.size());
}

Status Client::ReplicaMove(const ReplicaMoveRequest& request) {
  return Call(Opcode::kReplicaMove, EncodeBody(EncodeReplicaMoveRequest, request)).status();
}

Result<SealStreamletResponse> Client::SealStreamlet(const SealStreamletRequest& request) {
  ASSIGN_OR_RETURN(Response r,
                   Call(Opcode::kSealStreamlet, EncodeBody(EncodeSealStreamletRequest, request)));
  return DecodeSealStreamletResponse(r.body.data(), r.body.size());
}

Result<MetadataResponse> Client::Metadata(const std::string& stream,
                                          const std::vector<uint32_t>& streamlets) {
  MetadataRequest request{stream, streamlets};
  ASSIGN_OR_RETURN(Response r, Call(Opcode::kMetadata, EncodeBody(EncodeMetadataRequest, request)));
  return DecodeMetadataResponse(r.body.data(), r.body.size());
}

Result<AppendResponse> Client::Append(const AppendRequest& request) {
  RETURN_IF_ERROR(broken_);
  if (in_flight_ != 0) {
    return Status::InvalidArgument("synchronous Append while pipelined requests are in flight");
  }
  ASSIGN_OR_RETURN(uint64_t id, SendAppend(request));
  Result<Response> r = Receive();
  if (!r.ok()) return Fail(r.status());
  if (r->header.request_id != id) {
    return Fail(Status::MalformedRequest("broker answered request " +
                                         std::to_string(r->header.request_id) + " while Append " +
                                         std::to_string(id) + " was the only one in flight"));
  }
  if (!r->status.ok()) return r->status;
  return DecodeAppendResponse(r->body.data(), r->body.size());
}

Result<FetchReply> Client::Fetch(const FetchRequest& request) {
  int timeout = static_cast<int>(
      std::min<int64_t>(INT_MAX, int64_t{io_timeout_ms_} + int64_t{request.max_wait_ms}));
  ASSIGN_OR_RETURN(Response r,
                   Call(Opcode::kFetch, EncodeBody(EncodeFetchRequest, request), timeout));
  FetchReply reply;
  reply.body = std::move(r.body);
  ASSIGN_OR_RETURN(reply.response, DecodeFetchResponse(reply.body.data(), reply.body.size()));
  return reply;
}

Result<StatsResponse> Client::Stats() {
  ASSIGN_OR_RETURN(Response r, Call(Opcode::kStats, Bytes()));
  return DecodeStatsResponse(r.body.data(), r.body.size());
}

Result<PushSubscribeResponse> Client::PushSubscribe(const PushSubscribeRequest& request) {
  ASSIGN_OR_RETURN(Response r,
                   Call(Opcode::kPushSubscribe, EncodeBody(EncodePushSubscribeRequest, request)));
  return DecodePushSubscribeResponse(r.body.data(), r.body.size());
}

Status Client::PushUpdate(const PushUpdateRequest& request) {
  return Call(Opcode::kPushUpdate, EncodeBody(EncodePushUpdateRequest, request)).status();
}

Status Client::PushClose(uint64_t subscription_id) {
  return Call(Opcode::kPushClose,
              EncodeBody(EncodePushCloseRequest, PushCloseRequest{subscription_id}))
      .status();
}

Result<TxnInitResponse> Client::TxnInit(const TxnInitRequest& request) {
  ASSIGN_OR_RETURN(Response r, Call(Opcode::kTxnInit, EncodeBody(EncodeTxnInitRequest, request)));
  return DecodeTxnInitResponse(r.body.data(), r.body.size());
}

Result<uint64_t> Client::TxnBegin(const TxnRef& txn) {
  TxnRef begin = txn;
  begin.serial = 0;  // the broker picks the serial; the protocol has Begin send 0
  ASSIGN_OR_RETURN(Response r, Call(Opcode::kTxnBegin, EncodeBody(EncodeTxnRef, begin)));
  ASSIGN_OR_RETURN(TxnBeginResponse b, DecodeTxnBeginResponse(r.body.data(), r.body.size()));
  return b.serial;
}

// Copies the chunks into one body, unlike Append's gather write: transactional appends come from
// tools and tests here (the Flink sink is the Java client), where the copy does not matter.
Result<AppendResponse> Client::TxnAppend(const TxnAppendRequest& request) {
  ASSIGN_OR_RETURN(Response r,
                   Call(Opcode::kTxnAppend, EncodeBody(EncodeTxnAppendRequest, request)));
  return DecodeAppendResponse(r.body.data(), r.body.size());
}

Status Client::TxnPrepare(const TxnRef& txn) {
  return Call(Opcode::kTxnPrepare, EncodeBody(EncodeTxnRef, txn)).status();
}

Status Client::TxnCommit(const TxnRef& txn) {
  return Call(Opcode::kTxnCommit, EncodeBody(EncodeTxnRef, txn)).status();
}

Status Client::TxnAbort(const TxnRef& txn) {
  return Call(Opcode::kTxnAbort, EncodeBody(EncodeTxnRef, txn)).status();
}

Result<TxnListResponse> Client::TxnList(const TxnListRequest& request) {
  ASSIGN_OR_RETURN(Response r, Call(Opcode::kTxnList, EncodeBody(EncodeTxnListRequest, request)));
  return DecodeTxnListResponse(r.body.data(), r.body.size());
}

}  // namespace nearstream::net
