// An Env for tests that wraps a real one and injects the failures a broker meets in the field
// (leveldb's fault_injection_test): a full disk (optionally after a torn write), failing fsyncs,
// files that cannot be opened, and a power loss that throws away every byte not yet fsync'd and
// every directory entry whose directory was not fsync'd since the entry appeared.
//
// What is "synced" is tracked per path for files opened through OpenAppendable: bytes a file held
// when it was first opened count as synced; Sync() marks everything appended so far as synced.
// Files written by WriteFileAtomically are durable by contract and are not tracked; the directory
// fsync that ends it also makes the other new entries of that directory durable.
//
// Threading: every method may be called from any thread; one mutex guards all state (and is held
// across the calls into the wrapped Env, which keeps the bookkeeping exact; fine for tests).
//
// In testing/ (the nearstream_testing library, linked by the tests only, never by nearstreamd);
// the class stays in namespace storage, whose Env it implements.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "nearstream/common/mutex.h"
#include "nearstream/common/thread_annotations.h"
#include "nearstream/storage/env.h"

namespace nearstream::storage {

class FaultInjectionEnv final : public Env {
 public:
  // `base` must outlive this Env and every file opened through it.
  explicit FaultInjectionEnv(Env* base);
  ~FaultInjectionEnv() override;
  FaultInjectionEnv(const FaultInjectionEnv&) = delete;
  FaultInjectionEnv& operator=(const FaultInjectionEnv&) = delete;

  // ---- Env ----
  Result<std::unique_ptr<WritableFile>> OpenAppendable(const std::string& path) override;
  Result<Bytes> ReadFile(const std::string& path) override;
  Status WriteFileAtomically(const std::string& path, const Bytes& data) override;
  Result<std::vector<std::string>> ListDir(const std::string& path) override;
  Status CreateDirs(const std::string& path) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveAll(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status SyncDir(const std::string& path) override;
  bool Exists(const std::string& path) override;
  Result<int64_t> ModifiedTimeMs(const std::string& path) override {
    return base_->ModifiedTimeMs(path);
  }

  // ---- faults ----
  // A full disk: appends (to all files together) may write `bytes` more bytes; the append that
  // would go past the budget fails with kStorageError (ENOSPC) and, when `torn` is set, first
  // writes the part that still fits (a torn write). A negative budget means unlimited.
  void SetSpaceBudget(int64_t bytes, bool torn = false);
  // Space comes back: appends are unlimited again.
  void ClearSpaceBudget() { SetSpaceBudget(-1); }
  // While set, WritableFile::Sync fails (EIO) and marks nothing as synced.
  void SetSyncFailure(bool fail);
  // While set, OpenAppendable fails (EIO) without creating the file.
  void SetOpenAppendableFailure(bool fail);
  // While set, SyncDir fails (EIO).
  void SetSyncDirFailure(bool fail);

  // ---- power loss ----
  // Cuts every tracked file back to its synced size, keeping at most `keep_unsynced_bytes` of
  // the unsynced tail (a disk that wrote part of it before the power went: a torn tail). Call
  // it once the store using the files is gone.
  Status DropUnsyncedData(uint64_t keep_unsynced_bytes = 0);
  // Removes every file and directory created since the last SyncDir of its parent directory.
  Status DropUnsyncedDirEntries();
  // Replaces the unsynced tail of `path` by `garbage` (random bytes, half a chunk...), as if
  // the disk had written something else than what was appended before the power went.
  Status CorruptUnsyncedTail(const std::string& path, const Bytes& garbage);

  // ---- inspection ----
  // Bytes of `path` known durable / appended so far; 0 for a path never opened.
  uint64_t SyncedSize(const std::string& path) const;
  uint64_t FileSize(const std::string& path) const;
  // Paths of the files opened through OpenAppendable that still exist, sorted.
  std::vector<std::string> TrackedFiles() const;
  // How many WritableFile::Sync calls succeeded.
  int sync_count() const;
  // How many of the files OpenAppendable gave out are still open.
  size_t open_file_count() const;

 private:
  class File;
  struct FileState {
    uint64_t size = 0;    // bytes appended so far, as the file's owner sees them
    uint64_t synced = 0;  // bytes known durable
  };

  // Called by File.
  Status AppendLocked(const std::string& path, WritableFile* base, const uint8_t* data, size_t n)
      NS_REQUIRES(mu_);
  Status TruncateLocked(const std::string& path, WritableFile* base, uint64_t size)
      NS_REQUIRES(mu_);
  Status SyncLocked(const std::string& path, WritableFile* base) NS_REQUIRES(mu_);

  void NoteNewEntryLocked(const std::string& path) NS_REQUIRES(mu_);
  void ForgetLocked(const std::string& path, bool recursive) NS_REQUIRES(mu_);
  Status CutFileLocked(const std::string& path, uint64_t size) NS_REQUIRES(mu_);

  Env* const base_;
  mutable Mutex mu_;
  std::map<std::string, FileState> files_ NS_GUARDED_BY(mu_);
  std::set<std::string> new_entries_ NS_GUARDED_BY(mu_);  // created, parent not yet synced
  std::set<File*> open_files_ NS_GUARDED_BY(mu_);         // handles OpenAppendable gave out
  int64_t space_budget_ NS_GUARDED_BY(mu_) = -1;
  bool torn_writes_ NS_GUARDED_BY(mu_) = false;
  bool fail_sync_ NS_GUARDED_BY(mu_) = false;
  bool fail_open_ NS_GUARDED_BY(mu_) = false;
  bool fail_sync_dir_ NS_GUARDED_BY(mu_) = false;
  int sync_count_ NS_GUARDED_BY(mu_) = 0;
};

}  // namespace nearstream::storage
