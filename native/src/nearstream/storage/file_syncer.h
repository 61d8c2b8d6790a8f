// Syncs files on a thread of its own: whoever finished writing a file hands it over and goes on
// without waiting for the fsync. A follower hands over each segment file of an `async` stream
// once it writes the next one (cluster/replication.cc): syncing a full segment inline, on the
// thread that answers the leader, held every acknowledgement of the streamlet behind the disk's
// flush of megabytes.
//
// At most `max_pending` files wait: Hand blocks beyond that, so a disk slower than the writes
// slows the writer down instead of piling up unsynced files without bound.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "nearstream/common/mutex.h"
#include "nearstream/common/status.h"
#include "nearstream/common/thread_annotations.h"
#include "nearstream/storage/env.h"

namespace nearstream::storage {

class FileSyncer {
 public:
  // Runs `on_failure` with the error of a sync that failed, on the syncer's thread.
  using OnFailure = std::function<void(const Status&)>;

  FileSyncer(const std::string& thread_name, size_t max_pending);
  // Syncs every file handed over, then ends the thread.
  ~FileSyncer();
  FileSyncer(const FileSyncer&) = delete;
  FileSyncer& operator=(const FileSyncer&) = delete;

  // Takes `file` to be synced and closed; waits while `max_pending` files wait already.
  void Hand(std::unique_ptr<WritableFile> file, OnFailure on_failure) NS_EXCLUDES(mu_);
  // Returns once every file handed over before the call was synced (or its sync failed).
  void Drain() NS_EXCLUDES(mu_);

 private:
  struct Pending {
    std::unique_ptr<WritableFile> file;
    OnFailure on_failure;
  };
  void Run() NS_EXCLUDES(mu_);

  const size_t max_pending_;
  Mutex mu_;
  CondVar changed_;  // a file handed over, one synced, or stopping
  std::deque<Pending> pending_ NS_GUARDED_BY(mu_);
  uint64_t handed_ NS_GUARDED_BY(mu_) = 0;  // files handed over so far
  uint64_t done_ NS_GUARDED_BY(mu_) = 0;    // of them, synced or failed
  bool stopping_ NS_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace nearstream::storage
