#include "nearstream/common/status.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

namespace nearstream {
namespace {

// Each named constructor builds the code it names, keeps the message, and only its own predicate
// holds.
TEST(StatusTest, NamedConstructorsAndPredicatesMatchTheirCode) {
  struct Case {
    Status status;
    StatusCode code;
    bool (Status::*is)() const;
  };
  const Case cases[] = {
      {Status::MalformedRequest("m"), StatusCode::kMalformedRequest, &Status::IsMalformedRequest},
      {Status::UnsupportedVersion("m"), StatusCode::kUnsupportedVersion,
       &Status::IsUnsupportedVersion},
      {Status::UnknownOpcode("m"), StatusCode::kUnknownOpcode, &Status::IsUnknownOpcode},
      {Status::FrameTooLarge("m"), StatusCode::kFrameTooLarge, &Status::IsFrameTooLarge},
      {Status::StreamNotFound("m"), StatusCode::kStreamNotFound, &Status::IsStreamNotFound},
      {Status::StreamExists("m"), StatusCode::kStreamExists, &Status::IsStreamExists},
      {Status::StreamletNotFound("m"), StatusCode::kStreamletNotFound,
       &Status::IsStreamletNotFound},
      {Status::InvalidArgument("m"), StatusCode::kInvalidArgument, &Status::IsInvalidArgument},
      {Status::CorruptChunk("m"), StatusCode::kCorruptChunk, &Status::IsCorruptChunk},
      {Status::ChunkTooLarge("m"), StatusCode::kChunkTooLarge, &Status::IsChunkTooLarge},
      {Status::OutOfOrderSequence("m"), StatusCode::kOutOfOrderSequence,
       &Status::IsOutOfOrderSequence},
      {Status::PositionOutOfRange("m"), StatusCode::kPositionOutOfRange,
       &Status::IsPositionOutOfRange},
      {Status::StorageError("m"), StatusCode::kStorageError, &Status::IsStorageError},
      {Status::ShuttingDown("m"), StatusCode::kShuttingDown, &Status::IsShuttingDown},
      {Status::Internal("m"), StatusCode::kInternal, &Status::IsInternal},
      {Status::IoError("m"), StatusCode::kIoError, &Status::IsIoError},
      {Status::DataLoss("m"), StatusCode::kDataLoss, &Status::IsDataLoss},
      {Status::TxnNotFound("m"), StatusCode::kTxnNotFound, &Status::IsTxnNotFound},
      {Status::TxnFenced("m"), StatusCode::kTxnFenced, &Status::IsTxnFenced},
      {Status::TxnAborted("m"), StatusCode::kTxnAborted, &Status::IsTxnAborted},
      {Status::InvalidTxnState("m"), StatusCode::kInvalidTxnState, &Status::IsInvalidTxnState},
      {Status::NotOwner("m"), StatusCode::kNotOwner, &Status::IsNotOwner},
      {Status::BrokerUnavailable("m"), StatusCode::kBrokerUnavailable,
       &Status::IsBrokerUnavailable},
      {Status::ClusterUnavailable("m"), StatusCode::kClusterUnavailable,
       &Status::IsClusterUnavailable},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(StatusCodeName(c.code));
    EXPECT_EQ(c.status.code(), c.code);
    EXPECT_EQ(c.status.message(), "m");
    EXPECT_FALSE(c.status.ok());
    EXPECT_EQ(c.status.ToString(), std::string(StatusCodeName(c.code)) + ": m");
    for (const Case& other : cases) {
      EXPECT_EQ((c.status.*other.is)(), c.code == other.code) << StatusCodeName(other.code);
    }
    EXPECT_FALSE((Status::Ok().*c.is)());
  }
}

TEST(StatusTest, FromErrnoAppendsErrnoTextAndNumber) {
  Status s = Status::FromErrno(StatusCode::kIoError, "open /x", ENOENT);
  EXPECT_TRUE(s.IsIoError());
  EXPECT_EQ(s.message(), "open /x: No such file or directory (errno 2)");
  EXPECT_EQ(s.ToString(), "IO_ERROR: open /x: No such file or directory (errno 2)");
}

}  // namespace
}  // namespace nearstream
