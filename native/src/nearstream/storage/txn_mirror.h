// Copies a replicated streamlet's transaction files to its followers (docs/cluster.md,
// "Replication", "Transactions"). A streamlet scope's StreamTransactions tells its mirror every
// write it makes to its files, after making it and before the request that caused it is
// acknowledged; the followers repeat the writes byte for byte, so a follower's files are what a
// restart of the leader would recover, and a promotion recovers from them exactly so.
//
// The storage layer only describes the writes; the cluster layer (ZkCluster) sends them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nearstream/common/status.h"

namespace nearstream::storage {

// One write to a file of a streamlet's directory, named without the directory.
struct TxnFileOp {
  enum class Kind : uint8_t {
    kAppend = 1,   // `data` at `offset` of `name`, which must be that long (0 creates it)
    kReplace = 2,  // `name` becomes `data` (a compacted txn.log)
    kRename = 3,   // `name` becomes `to` (a commit: a part's file takes its group's name)
    kDelete = 4,   // `name` goes (an abort's part files); missing is fine
  };
  Kind kind = Kind::kAppend;
  std::string name;
  uint64_t offset = 0;
  const uint8_t* data = nullptr;  // kAppend, kReplace: valid until Mirror (or Send) returns
  uint32_t size = 0;
  std::string to;  // kRename
};

class TxnMirror {
 public:
  virtual ~TxnMirror() = default;
  // Sends `ops` (in order; may be empty) for streamlet `streamlet` of `stream` to every other
  // member of its in-sync set. Ok once each holds them or has left the set; an error (NOT_OWNER:
  // deposed; CLUSTER_UNAVAILABLE: a failed follower could not be removed) means some follower
  // may lack them, and the caller acknowledges nothing until a later call returns Ok. An empty
  // `ops` only retries what a failed call left pending.
  virtual Status Mirror(const std::string& stream, uint32_t streamlet,
                        const std::vector<TxnFileOp>& ops) = 0;

  // Mirror in two halves, so that one thread can have several streamlets' writes on their way
  // at once and wait for one round trip instead of one each: Send writes `ops` to the
  // followers and returns without their answers; Finish awaits them and returns what Mirror
  // would have. Between the two the streamlet's connections to its followers stay locked: the
  // caller neither mirrors nor sends that streamlet's writes again, and sends other
  // streamlets' only in increasing (stream, streamlet) order, as every thread that holds two
  // sends at once does.
  class Sent {
   public:
    virtual ~Sent() = default;
  };
  virtual std::unique_ptr<Sent> Send(const std::string& stream, uint32_t streamlet,
                                     const std::vector<TxnFileOp>& ops) = 0;
  virtual Status Finish(std::unique_ptr<Sent> sent) = 0;
};

}  // namespace nearstream::storage
