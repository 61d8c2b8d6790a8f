// File I/O behind a small interface (leveldb's Env) so storage tests can inject faults: a full
// disk, a failing fsync, a torn write. Production uses PosixEnv.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nearstream/common/byte_io.h"
#include "nearstream/common/status.h"

namespace nearstream::storage {

// An append-only file. Append/Truncate are called by one thread at a time (the owner of the
// segment, under the lock of its streamlet's active slot); Sync may run concurrently from the
// flusher thread. Files of different segments are used by different threads at once.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(const uint8_t* data, size_t n) = 0;
  // Appends the pieces in order. PosixEnv makes it one write, which the page cache stores in
  // larger pages, for less CPU per byte, than one write per piece (docs/results/replication/
  // write-runs). On failure, as for Append, part may be written.
  virtual Status AppendV(const iovec* pieces, size_t count) {
    for (size_t k = 0; k < count; ++k) {
      RETURN_IF_ERROR(Append(static_cast<const uint8_t*>(pieces[k].iov_base), pieces[k].iov_len));
    }
    return Status::Ok();
  }
  // Cuts the file back to `size` bytes (rolls back a failed append, cuts a torn tail).
  virtual Status Truncate(uint64_t size) = 0;
  // Makes every appended byte durable (fdatasync).
  virtual Status Sync() = 0;
  virtual uint64_t size() const = 0;
};

// A file whose name is gone while its data lives on until this is destroyed (Env::DetachFile).
class DetachedFile {
 public:
  virtual ~DetachedFile() = default;
};

class Env {
 public:
  virtual ~Env() = default;
  // Opens `path` for appending, creating it when missing; existing bytes are kept.
  virtual Result<std::unique_ptr<WritableFile>> OpenAppendable(const std::string& path) = 0;
  virtual Result<Bytes> ReadFile(const std::string& path) = 0;
  // Writes via a temporary file, fsync, rename and directory fsync: all or nothing.
  virtual Status WriteFileAtomically(const std::string& path, const Bytes& data) = 0;
  // Names (not paths) of the entries of a directory, without "." and "..".
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) = 0;
  virtual Status CreateDirs(const std::string& path) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  // Removes `path`'s name now and frees its data when the result is destroyed. Freeing the
  // blocks of a large file is the slow part of removing it (on a file system mounted with
  // `discard`, the blocks are discarded before unlink returns: hundreds of milliseconds under
  // write load), so a caller that must remove under a lock others wait for detaches under the
  // lock and destroys the result after it. A missing file gives an empty result, as
  // RemoveFile succeeds for one. This default removes at once.
  virtual Result<std::unique_ptr<DetachedFile>> DetachFile(const std::string& path) {
    RETURN_IF_ERROR(RemoveFile(path));
    return std::unique_ptr<DetachedFile>();
  }
  virtual Status RemoveAll(const std::string& path) = 0;
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status SyncDir(const std::string& path) = 0;
  virtual bool Exists(const std::string& path) = 0;
  // Last modification time, ms since the Unix epoch.
  virtual Result<int64_t> ModifiedTimeMs(const std::string& path) = 0;

  // The process-wide POSIX implementation; never deleted.
  static Env* Default();
};

}  // namespace nearstream::storage
