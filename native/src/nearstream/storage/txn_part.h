// One transaction's chunks in one streamlet: a private group of segments that no reader sees.
// Appends go into its segments (and, for a durable stream, into files named
// Streamlet::TxnSegmentName in the streamlet's directory) exactly as into an active group; the
// commit hands the segments to Streamlet::LinkReserved after renaming the files to the group's
// names, so committing copies nothing.
//
// Not thread-safe: the transaction's lock (stream_transactions.h) is held around every call.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "nearstream/common/status.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/storage/env.h"
#include "nearstream/storage/segment.h"
#include "nearstream/storage/stream_config.h"
#include "nearstream/storage/streamlet.h"
#include "nearstream/storage/txn_mirror.h"

namespace nearstream::storage {

class TxnPart {
 public:
  // `streamlet`, `config` and `env` must outlive the part; `txn_number` names its files.
  TxnPart(Streamlet* streamlet, const StreamConfig* config, Env* env, uint64_t txn_number);

  // Appends one chunk checked by ValidateChunk. Idempotence per producer id within this part
  // (the rules of an ordinary append). Returns true for a duplicate, which is not stored again.
  // `written` (optional, durable parts) gets the write to the part's file, for a mirror; its
  // data is the chunk's copy in the segment, which `written_in` keeps alive (the segment's
  // bytes below its end never change).
  Result<bool> Append(const uint8_t* chunk, const ChunkHeader& header, int64_t now_ms,
                      TxnFileOp* written = nullptr,
                      std::shared_ptr<const Segment>* written_in = nullptr);
  // The segments appended to since the last call whose files are not yet synced (`async`), for
  // the flusher to fsync outside the transaction's lock; `dir` is set when a file was created.
  void TakeDirty(std::vector<std::shared_ptr<Segment>>* dirty, bool* dir);
  // Loads the part's files after a restart (their names carry segment ids), verifying every
  // chunk; bytes after the last whole chunk of a file are a torn append and are cut.
  Status Recover(int64_t now_ms);

  // Commit: the (from, to) renames that give the files their names in `group`. They may be done
  // only once the COMMIT record is durable (a renamed file is read as part of its group on
  // recovery); recovery redoes any that were not.
  std::vector<std::pair<std::string, std::string>> RenamesTo(uint64_t group) const;
  std::vector<std::shared_ptr<Segment>> TakeSegments() {
    std::vector<std::shared_ptr<Segment>> out;
    out.swap(segments_);  // left empty: a later Discard must not delete the committed files
    return out;
  }
  // Abort: drops the segments and deletes their files; `deleted` (optional) gets their names.
  void Discard(std::vector<std::string>* deleted = nullptr);
  // Each file of the part (durable parts): its name in the streamlet's directory and its bytes,
  // which stay valid while the part's lock is held.
  void ForEachFile(const std::function<void(std::string, const uint8_t*, uint32_t)>& fn) const;

  uint64_t bytes() const { return bytes_; }
  uint32_t chunks() const { return chunks_; }

 private:
  std::string PathOf(uint64_t segment) const;
  std::string NameOf(uint64_t segment) const;
  Result<Segment*> NewSegment(int64_t now_ms);

  Streamlet* const streamlet_;
  const StreamConfig* const config_;
  Env* const env_;
  const uint64_t txn_number_;
  std::vector<std::shared_ptr<Segment>> segments_;
  std::unordered_map<uint64_t, uint64_t> last_sequence_;  // producer id -> last stored sequence
  uint64_t bytes_ = 0;
  uint32_t chunks_ = 0;
  bool dir_dirty_ = false;  // a file was created without a directory fsync (`async`)
};

}  // namespace nearstream::storage
