// The durable record of a stream's transactions: `<stream dir>/txn.log`, an append-only file of
// checksummed records. Replaying it rebuilds every transactional id's epoch and last serial and
// every transaction's state; a COMMIT record is the one durable step that makes a committed
// transaction's chunks part of its streamlets (docs/broker.md, "Transactions").
//
// Record framing: u32 length of what follows the crc, u32 CRC32C of those bytes, then u8 type
// and the type's fields (little-endian, Str = u16 length + bytes). A record that does not check
// out at the end of the file is a torn append and is cut; one that does not check out before
// another that does is damage and fails recovery (transaction state cannot be guessed).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nearstream/common/status.h"
#include "nearstream/storage/env.h"

namespace nearstream::storage {

enum class TxnRecordType : uint8_t {
  kEpoch = 1,    // id, epoch, serial = the id's last serial (so compaction never lowers it)
  kBegin = 2,    // id, epoch, serial, number (names the transaction's files), started_ms
  kPrepare = 3,  // id, serial, links: each streamlet's part and its bytes (group 0)
  kCommit = 4,   // id, serial, links: the group each streamlet's part became, and its bytes
  kAbort = 5,    // id, serial
};

// A transaction's part in one streamlet. `bytes` (its chunks' total size when the record was
// written) lets recovery tell a part that an `async` power loss shortened from a whole one; 0 in
// records written before the field existed, which are not checked.
struct TxnLink {
  uint32_t streamlet = 0;
  uint64_t group = 0;
  uint64_t bytes = 0;
  bool operator==(const TxnLink&) const = default;
};

struct TxnRecord {
  TxnRecordType type = TxnRecordType::kEpoch;
  std::string id;
  uint32_t epoch = 0;
  uint64_t serial = 0;
  uint64_t number = 0;
  int64_t started_ms = 0;
  std::vector<TxnLink> links;
  bool operator==(const TxnRecord&) const = default;
};

void AppendTxnRecord(const TxnRecord& record, Bytes* out);
// Parses the records of a log image. `*valid_bytes` is where the last whole record ends; bytes
// after it that do not parse are a torn tail. Damage followed by whole records is an error.
Result<std::vector<TxnRecord>> ParseTxnLog(const Bytes& data, size_t* valid_bytes);

class TxnLog {
 public:
  // Opens (creating if missing) the log at `path`, cutting a torn tail; `replayed` gets its
  // records.
  static Result<std::unique_ptr<TxnLog>> Open(Env* env, const std::string& path,
                                              std::vector<TxnRecord>* replayed);

  // Appends one record; `sync` fsyncs it before returning. On failure the file is cut back and
  // the record is not in the log. `framed` (optional) gets the bytes appended, at the size the
  // log had before (what a follower's copy repeats).
  Status Append(const TxnRecord& record, bool sync, Bytes* framed = nullptr);
  // fsyncs what was appended without `sync` (the async flusher).
  Status Sync();
  // Replaces the whole log by `records` (written aside, fsync'd, renamed over it); `image`
  // (optional) gets the new file's bytes.
  Status Rewrite(const std::vector<TxnRecord>& records, Bytes* image = nullptr);
  uint64_t size() const { return size_; }

 private:
  TxnLog(Env* env, std::string path) : env_(env), path_(std::move(path)) {}
  Status Reopen();

  Env* const env_;
  const std::string path_;
  std::unique_ptr<WritableFile> file_;
  uint64_t size_ = 0;
  uint64_t synced_ = 0;  // size_ at the last fsync
};

}  // namespace nearstream::storage
