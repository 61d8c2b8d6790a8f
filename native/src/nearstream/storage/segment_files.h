// Segment memory that push consumers can map: each segment's bytes live in a file of their own
// (docs/shm-layout.md, "Segment files"), so a view slot can describe a record by its place in
// the segment instead of carrying a copy.
//
// Files are named <dir>/<prefix><number>, numbers counting up from 1 and never reused by this
// object, created O_CREAT|O_EXCL with mode 0600, their space reserved (a full tmpfs fails the
// Take instead of raising SIGBUS at the first touch), mapped MAP_SHARED read-write. A file
// given back is kept, under its name, for the next Take of the same size (appends then touch
// pages that are already there), up to kMaxIdleBytes (by default); beyond that it is unmapped and
// unlinked. Whoever gives a file back promises that no reader still needs its contents (the push
// thread pins a segment while a slot names it).
//
// Thread-safe. Shared (shared_ptr) by every segment that lives in one of its files, so it
// outlives them; its destructor unlinks the idle files, and UnlinkAll removes every name at
// broker shutdown (mappings stay valid).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nearstream/common/mutex.h"
#include "nearstream/common/status.h"
#include "nearstream/common/thread_annotations.h"

namespace nearstream::storage {

class SegmentFiles {
 public:
  static constexpr uint64_t kMaxIdleBytes = 256u << 20;

  struct File {
    uint64_t number = 0;
    uint8_t* data = nullptr;
    uint32_t capacity = 0;
  };

  SegmentFiles(std::string dir, std::string prefix, uint64_t max_idle_bytes = kMaxIdleBytes);
  ~SegmentFiles();
  SegmentFiles(const SegmentFiles&) = delete;
  SegmentFiles& operator=(const SegmentFiles&) = delete;

  // An idle file of `capacity` bytes, or a new one. kIoError (errno text) when none can be made.
  Result<File> Take(uint32_t capacity) NS_EXCLUDES(mu_);
  // Back for reuse (or unmapped and unlinked when enough are idle).
  void Give(const File& file) NS_EXCLUDES(mu_);
  // Unlinks every file name this object made, live or idle (broker shutdown).
  void UnlinkAll() NS_EXCLUDES(mu_);

  const std::string& dir() const { return dir_; }
  const std::string& prefix() const { return prefix_; }
  std::string PathOf(uint64_t number) const;

  uint64_t files_created() const NS_EXCLUDES(mu_);
  uint64_t create_failures() const NS_EXCLUDES(mu_);

 private:
  const std::string dir_;
  const std::string prefix_;
  const uint64_t max_idle_bytes_;
  mutable Mutex mu_;
  uint64_t next_number_ NS_GUARDED_BY(mu_) = 1;
  std::vector<File> idle_ NS_GUARDED_BY(mu_);
  uint64_t idle_bytes_ NS_GUARDED_BY(mu_) = 0;
  uint64_t files_created_ NS_GUARDED_BY(mu_) = 0;
  uint64_t create_failures_ NS_GUARDED_BY(mu_) = 0;
  bool unlinked_all_ NS_GUARDED_BY(mu_) = false;
};

}  // namespace nearstream::storage
