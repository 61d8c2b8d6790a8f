#include "nearstream/common/status.h"

#include <cstring>

namespace nearstream {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kMalformedRequest: return "MALFORMED_REQUEST";
    case StatusCode::kUnsupportedVersion: return "UNSUPPORTED_VERSION";
    case StatusCode::kUnknownOpcode: return "UNKNOWN_OPCODE";
    case StatusCode::kFrameTooLarge: return "FRAME_TOO_LARGE";
    case StatusCode::kStreamNotFound: return "STREAM_NOT_FOUND";
    case StatusCode::kStreamExists: return "STREAM_EXISTS";
    case StatusCode::kStreamletNotFound: return "STREAMLET_NOT_FOUND";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kCorruptChunk: return "CORRUPT_CHUNK";
    case StatusCode::kChunkTooLarge: return "CHUNK_TOO_LARGE";
    case StatusCode::kOutOfOrderSequence: return "OUT_OF_ORDER_SEQUENCE";
    case StatusCode::kPositionOutOfRange: return "POSITION_OUT_OF_RANGE";
    case StatusCode::kStorageError: return "STORAGE_ERROR";
    case StatusCode::kShuttingDown: return "SHUTTING_DOWN";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kIoError: return "IO_ERROR";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kTxnNotFound: return "TXN_NOT_FOUND";
    case StatusCode::kTxnFenced: return "TXN_FENCED";
    case StatusCode::kTxnAborted: return "TXN_ABORTED";
    case StatusCode::kInvalidTxnState: return "INVALID_TXN_STATE";
    case StatusCode::kNotOwner: return "NOT_OWNER";
    case StatusCode::kBrokerUnavailable: return "BROKER_UNAVAILABLE";
    case StatusCode::kClusterUnavailable: return "CLUSTER_UNAVAILABLE";
    case StatusCode::kStreamletMoving: return "STREAMLET_MOVING";
  }
  return "UNKNOWN_STATUS";
}

Status Status::FromErrno(StatusCode code, const std::string& context, int err) {
  char buf[256];
  // GNU strerror_r returns the message pointer (possibly not buf).
  const char* text = strerror_r(err, buf, sizeof(buf));
  return Status(code, context + ": " + text + " (errno " + std::to_string(err) + ")");
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

}  // namespace nearstream
