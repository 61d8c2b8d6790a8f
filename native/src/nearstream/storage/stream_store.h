// The broker's catalog of streams. Durable streams (async, sync) live under
// <data_dir>/streams/<name>/ with a `stream.meta` file and one directory per streamlet; memory-only
// streams exist only in this process. Open() recovers every durable stream.
//
// Threading: all methods are thread-safe; streams are handed out as shared_ptr so a fetch or
// append in progress keeps a deleted stream's memory alive until it finishes.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nearstream/common/mutex.h"
#include "nearstream/common/thread_annotations.h"
#include "nearstream/storage/env.h"
#include "nearstream/storage/stream.h"
#include "nearstream/storage/txn_mirror.h"

namespace nearstream::storage {

struct StoreOptions {
  std::string data_dir;  // empty: only durability `none` streams can be created
  Env* env = Env::Default();
  int64_t group_idle_close_ms = 1000;
  TxnSettings txn;
};

class StreamStore {
 public:
  explicit StreamStore(StoreOptions options);

  // Creates the data directory layout and recovers every durable stream found in it.
  Status Open(int64_t now_ms) NS_EXCLUDES(mu_);

  Status Create(const StreamConfig& config) NS_EXCLUDES(mu_);
  Status Delete(const std::string& name) NS_EXCLUDES(mu_);
  // Null when there is no such stream.
  std::shared_ptr<Stream> Find(const std::string& name) const NS_EXCLUDES(mu_);
  std::vector<std::string> List() const NS_EXCLUDES(mu_);

  // New segments of every stream, present and future, live in `files` from now on (the broker's
  // --push-segment-files always; segment_files.h).
  void UseSegmentFilesForAll(std::shared_ptr<SegmentFiles> files) NS_EXCLUDES(mu_);

  // Retention and idle-group closing for every stream; deletes the dropped segment files.
  void Maintain(int64_t now_ms) NS_EXCLUDES(mu_);
  // fsyncs what async streams appended since the last call. Returns the number of failures.
  int FlushAsync() NS_EXCLUDES(mu_);

  uint64_t total_bytes() const NS_EXCLUDES(mu_);
  // Open and prepared transactions of every stream, and the broker's finished-transaction counts.
  TxnGauges transaction_gauges() const NS_EXCLUDES(mu_);
  const TxnTotals& transaction_totals() const { return txn_totals_; }
  // Where replicated streams' transaction writes go (a cluster, txn_mirror.h): every stream's,
  // now and later. Null stops it.
  void set_txn_mirror(TxnMirror* mirror) NS_EXCLUDES(mu_);

 private:
  std::string StreamDir(const std::string& name) const;
  Status Recover(const std::string& name, int64_t now_ms) NS_EXCLUDES(mu_);
  // The streams at this moment, to work on without holding mu_.
  std::vector<std::shared_ptr<Stream>> Snapshot() const NS_EXCLUDES(mu_);

  const StoreOptions options_;
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<Stream>> streams_ NS_GUARDED_BY(mu_);
  uint64_t deletions_ NS_GUARDED_BY(mu_) = 0;
  std::shared_ptr<SegmentFiles> all_segment_files_ NS_GUARDED_BY(mu_);
  TxnTotals txn_totals_;
  std::atomic<TxnMirror*> txn_mirror_{nullptr};
};

// stream.meta is a small text file of key=value lines; exposed for tests.
std::string FormatStreamMeta(const StreamConfig& config);
Result<StreamConfig> ParseStreamMeta(const std::string& text);

}  // namespace nearstream::storage
