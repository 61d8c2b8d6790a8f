// The broker's catalog of streams. Durable streams (async, sync) live under
// <data_dir>/streams/<name>/ with a `stream.meta` file and one directory per streamlet; memory-only
// streams exist only in this process. Open() recovers every durable stream.
//
// Threading: all methods are thread-safe; streams are handed out as shared_ptr so a fetch or
// append in progress keeps a deleted stream's memory alive until it finishes.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nearstream/storage/env.h"
#include "nearstream/storage/stream.h"

namespace nearstream::storage {

struct StoreOptions {
  std::string data_dir;  // empty: only durability `none` streams can be created
  Env* env = Env::Default();
  int64_t group_idle_close_ms = 1000;
};

class StreamStore {
 public:
  explicit StreamStore(StoreOptions options);

  // Creates the data directory layout and recovers every durable stream found in it.
  Status Open(int64_t now_ms);

  Status Create(const StreamConfig& config);
  Status Delete(const std::string& name);
  // Null when there is no such stream.
  std::shared_ptr<Stream> Find(const std::string& name) const;
  std::vector<std::string> List() const;

  // Retention and idle-group closing for every stream; deletes the dropped segment files.
  void Maintain(int64_t now_ms);
  // fsyncs what async streams appended since the last call. Returns the number of failures.
  int FlushAsync();

  uint64_t total_bytes() const;

 private:
  std::string StreamDir(const std::string& name) const;
  Status Recover(const std::string& name, int64_t now_ms);

  const StoreOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Stream>> streams_;  // GUARDED_BY(mu_)
  uint64_t deletions_ = 0;
};

// stream.meta is a small text file of key=value lines; exposed for tests.
std::string FormatStreamMeta(const StreamConfig& config);
Result<StreamConfig> ParseStreamMeta(const std::string& text);

}  // namespace nearstream::storage
