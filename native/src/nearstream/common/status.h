// Status and Result<T>: the error currency of the broker. No exceptions cross threads; every
// fallible call returns one of these and callers propagate with RETURN_IF_ERROR/ASSIGN_OR_RETURN.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace nearstream {

// Wire-visible status codes. The numeric values are part of the protocol (docs/protocol.md) and
// must never be renumbered.
enum class StatusCode : uint16_t {
  kOk = 0,
  kMalformedRequest = 1,    // frame or body does not parse; fatal for the request
  kUnsupportedVersion = 2,  // protocol version not spoken by this broker
  kUnknownOpcode = 3,
  kFrameTooLarge = 4,  // declared frame length above the broker's limit; connection is closed
  kStreamNotFound = 5,
  kStreamExists = 6,
  kStreamletNotFound = 7,
  kInvalidArgument = 8,      // well-formed request with values the broker refuses (bad config...)
  kCorruptChunk = 9,         // chunk header/CRC/record framing check failed; nothing was appended
  kChunkTooLarge = 10,       // chunk does not fit in one segment
  kOutOfOrderSequence = 11,  // producer sequence gap; nothing was appended
  kPositionOutOfRange = 12,  // fetch position refers to data removed by retention or never written
  kStorageError = 13,        // write/fsync failed (disk full...); nothing was acknowledged
  kShuttingDown = 14,
  kInternal = 15,
  kIoError = 16,   // local I/O failure (client side, files); never sent by the broker
  kDataLoss = 17,  // a read reached stored bytes that recovery found damaged (docs/broker.md)
  // Transactions (docs/protocol.md "Transactions").
  kTxnNotFound = 18,      // no such transactional id, or no transaction with that serial
  kTxnFenced = 19,        // an older epoch than the transactional id's, or not the txn's epoch
  kTxnAborted = 20,       // the transaction was aborted (owner, successor, operator, timeout)
  kInvalidTxnState = 21,  // the transaction's state does not allow the operation
  // Broker cluster (docs/protocol.md "Cluster").
  kNotOwner = 22,            // another broker stores the streamlet; the message names it
  kBrokerUnavailable = 23,   // the streamlet's broker is not registered now
  kClusterUnavailable = 24,  // ZooKeeper is out of reach: placement changes are refused
  kStreamletMoving = 25,     // the streamlet is being moved to another broker: no appends now
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  // Named constructors, one per error code: Status::StreamNotFound("stream 'x' does not exist")
  // is Status(StatusCode::kStreamNotFound, "stream 'x' does not exist").
  static Status MalformedRequest(std::string message) {
    return Status(StatusCode::kMalformedRequest, std::move(message));
  }
  static Status UnsupportedVersion(std::string message) {
    return Status(StatusCode::kUnsupportedVersion, std::move(message));
  }
  static Status UnknownOpcode(std::string message) {
    return Status(StatusCode::kUnknownOpcode, std::move(message));
  }
  static Status FrameTooLarge(std::string message) {
    return Status(StatusCode::kFrameTooLarge, std::move(message));
  }
  static Status StreamNotFound(std::string message) {
    return Status(StatusCode::kStreamNotFound, std::move(message));
  }
  static Status StreamExists(std::string message) {
    return Status(StatusCode::kStreamExists, std::move(message));
  }
  static Status StreamletNotFound(std::string message) {
    return Status(StatusCode::kStreamletNotFound, std::move(message));
  }
  static Status InvalidArgument(std::string message) {
    return Status(StatusCode::kInvalidArgument, std::move(message));
  }
  static Status CorruptChunk(std::string message) {
    return Status(StatusCode::kCorruptChunk, std::move(message));
  }
  static Status ChunkTooLarge(std::string message) {
    return Status(StatusCode::kChunkTooLarge, std::move(message));
  }
  static Status OutOfOrderSequence(std::string message) {
    return Status(StatusCode::kOutOfOrderSequence, std::move(message));
  }
  static Status PositionOutOfRange(std::string message) {
    return Status(StatusCode::kPositionOutOfRange, std::move(message));
  }
  static Status StorageError(std::string message) {
    return Status(StatusCode::kStorageError, std::move(message));
  }
  static Status ShuttingDown(std::string message) {
    return Status(StatusCode::kShuttingDown, std::move(message));
  }
  static Status Internal(std::string message) {
    return Status(StatusCode::kInternal, std::move(message));
  }
  static Status IoError(std::string message) {
    return Status(StatusCode::kIoError, std::move(message));
  }
  static Status DataLoss(std::string message) {
    return Status(StatusCode::kDataLoss, std::move(message));
  }
  static Status TxnNotFound(std::string message) {
    return Status(StatusCode::kTxnNotFound, std::move(message));
  }
  static Status TxnFenced(std::string message) {
    return Status(StatusCode::kTxnFenced, std::move(message));
  }
  static Status TxnAborted(std::string message) {
    return Status(StatusCode::kTxnAborted, std::move(message));
  }
  static Status InvalidTxnState(std::string message) {
    return Status(StatusCode::kInvalidTxnState, std::move(message));
  }
  static Status NotOwner(std::string message) {
    return Status(StatusCode::kNotOwner, std::move(message));
  }
  static Status BrokerUnavailable(std::string message) {
    return Status(StatusCode::kBrokerUnavailable, std::move(message));
  }
  static Status ClusterUnavailable(std::string message) {
    return Status(StatusCode::kClusterUnavailable, std::move(message));
  }
  static Status StreamletMoving(std::string message) {
    return Status(StatusCode::kStreamletMoving, std::move(message));
  }

  // Builds an error of `code` whose message is `context` followed by errno's text and number:
  // FromErrno(StatusCode::kIoError, "open /x", ENOENT).message() is
  // "open /x: No such file or directory (errno 2)".
  static Status FromErrno(StatusCode code, const std::string& context, int err);

  bool ok() const { return code_ == StatusCode::kOk; }
  // One predicate per error code: s.IsStreamNotFound() is s.code() == kStreamNotFound.
  bool IsMalformedRequest() const { return code_ == StatusCode::kMalformedRequest; }
  bool IsUnsupportedVersion() const { return code_ == StatusCode::kUnsupportedVersion; }
  bool IsUnknownOpcode() const { return code_ == StatusCode::kUnknownOpcode; }
  bool IsFrameTooLarge() const { return code_ == StatusCode::kFrameTooLarge; }
  bool IsStreamNotFound() const { return code_ == StatusCode::kStreamNotFound; }
  bool IsStreamExists() const { return code_ == StatusCode::kStreamExists; }
  bool IsStreamletNotFound() const { return code_ == StatusCode::kStreamletNotFound; }
  bool IsInvalidArgument() const { return code_ == StatusCode::kInvalidArgument; }
  bool IsCorruptChunk() const { return code_ == StatusCode::kCorruptChunk; }
  bool IsChunkTooLarge() const { return code_ == StatusCode::kChunkTooLarge; }
  bool IsOutOfOrderSequence() const { return code_ == StatusCode::kOutOfOrderSequence; }
  bool IsPositionOutOfRange() const { return code_ == StatusCode::kPositionOutOfRange; }
  bool IsStorageError() const { return code_ == StatusCode::kStorageError; }
  bool IsShuttingDown() const { return code_ == StatusCode::kShuttingDown; }
  bool IsInternal() const { return code_ == StatusCode::kInternal; }
  bool IsIoError() const { return code_ == StatusCode::kIoError; }
  bool IsDataLoss() const { return code_ == StatusCode::kDataLoss; }
  bool IsTxnNotFound() const { return code_ == StatusCode::kTxnNotFound; }
  bool IsTxnFenced() const { return code_ == StatusCode::kTxnFenced; }
  bool IsTxnAborted() const { return code_ == StatusCode::kTxnAborted; }
  bool IsInvalidTxnState() const { return code_ == StatusCode::kInvalidTxnState; }
  bool IsNotOwner() const { return code_ == StatusCode::kNotOwner; }
  bool IsBrokerUnavailable() const { return code_ == StatusCode::kBrokerUnavailable; }
  bool IsClusterUnavailable() const { return code_ == StatusCode::kClusterUnavailable; }
  bool IsStreamletMoving() const { return code_ == StatusCode::kStreamletMoving; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design, like arrow::Result
  Result(Status status) : v_(std::move(status)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace nearstream

#define NS_CONCAT_INNER(a, b) a##b
#define NS_CONCAT(a, b) NS_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                 \
  do {                                        \
    ::nearstream::Status _ns_status = (expr); \
    if (!_ns_status.ok()) return _ns_status;  \
  } while (0)

#define NS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                             \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, rexpr) \
  NS_ASSIGN_OR_RETURN_IMPL(NS_CONCAT(_ns_result_, __LINE__), lhs, rexpr)
