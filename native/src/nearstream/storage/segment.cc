#include "nearstream/storage/segment.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "nearstream/common/log.h"
#include "nearstream/common/mutex.h"
#include "nearstream/common/thread_annotations.h"

namespace nearstream::storage {
namespace {

// Mappings of dropped segments kept for reuse. A fresh mapping page-faults on every first touch
// (2048 faults per 8 MiB segment); under retention the broker drops and creates segments at the
// append rate, so recycling a few keeps the append path fault-free. Bounded so deleted streams
// still give their memory back. Fresh mappings stay in small pages: with MADV_HUGEPAGE the
// faults fell from ~60 000 to ~100 a second per broker, but each took a 2 MiB page through
// direct compaction, and replication 1 at 4 KiB chunks in the Fig. 3 setting of
// `run.py replication` took 0.7x the records for 1.3x the broker CPU per record (2-core VM).
class MappingPool {
 public:
  static constexpr size_t kMaxBytes = 256u << 20;

  void* Take(uint32_t capacity) NS_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].capacity == capacity) {
        void* p = free_[i].data;
        bytes_ -= capacity;
        free_[i] = free_.back();
        free_.pop_back();
        return p;
      }
    }
    return nullptr;
  }

  // Returns false when the pool is full (the caller unmaps).
  bool Give(void* data, uint32_t capacity) NS_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (bytes_ + capacity > kMaxBytes) return false;
    free_.push_back({data, capacity});
    bytes_ += capacity;
    return true;
  }

 private:
  struct Mapping {
    void* data;
    uint32_t capacity;
  };
  Mutex mu_;
  std::vector<Mapping> free_ NS_GUARDED_BY(mu_);
  size_t bytes_ NS_GUARDED_BY(mu_) = 0;
};

MappingPool& Pool() {
  static MappingPool* pool = new MappingPool();  // never destroyed: segments may outlive main
  return *pool;
}

}  // namespace

Result<std::shared_ptr<Segment>> Segment::Create(uint64_t id, uint32_t capacity, int64_t now_ms,
                                                 std::shared_ptr<SegmentFiles> files) {
  if (files != nullptr) {
    Result<SegmentFiles::File> f = files->Take(capacity);
    if (f.ok()) {
      return std::shared_ptr<Segment>(
          new Segment(id, capacity, f->data, now_ms, std::move(files), f->number));
    }
    // Appends go on; push consumers get this segment's records as copies.
    NS_LOG(kWarning) << "segment " << id << " uses private memory: " << f.status().message();
  }
  void* p = Pool().Take(capacity);
  if (p == nullptr) {
    p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return Status::FromErrno(StatusCode::kStorageError,
                               "cannot map a segment of " + std::to_string(capacity) + " bytes",
                               errno);
    }
  }
  return std::shared_ptr<Segment>(
      new Segment(id, capacity, static_cast<uint8_t*>(p), now_ms, nullptr, 0));
}

Segment::~Segment() {
  if (files_ != nullptr) {
    files_->Give(SegmentFiles::File{file_number_, data_, capacity_});
  } else if (!Pool().Give(data_, capacity_)) {
    ::munmap(data_, capacity_);
  }
}

void Segment::Discard(uint32_t offset) {
  if (file_ != nullptr && offset < file_end_) {
    Status cut = file_->Truncate(offset);
    if (cut.ok()) cut = file_->Sync();
    if (!cut.ok()) NS_LOG(kError) << "rollback of segment " << id_ << " failed: " << cut.ToString();
    file_end_ = offset;
  }
  written_ = offset;
  Seal();
}

Status Segment::WriteChunk(const uint8_t* chunk, uint32_t size, bool sync) {
  CopyChunk(chunk, size);
  Status s = WriteFile(sync);
  if (!s.ok()) {
    written_ -= size;
    Seal();
  }
  return s;
}

void Segment::CopyChunk(const uint8_t* chunk, uint32_t size) {
  const uint32_t offset = write_end();
  std::memcpy(data_ + offset, chunk, size);
  written_ = offset + size;
}

Status Segment::WriteFile(bool sync) {
  if (file_ == nullptr) {
    file_end_ = written_;
    return Status::Ok();
  }
  if (file_end_ >= written_) return Status::Ok();
  Status s = file_->Append(data_ + file_end_, written_ - file_end_);
  if (s.ok() && sync) s = file_->Sync();
  if (!s.ok()) {
    Status cut = file_->Truncate(file_end_);
    if (cut.ok()) cut = file_->Sync();  // or a power loss could resurrect the refused chunks
    // The file layer's messages name the file.
    if (!cut.ok()) NS_LOG(kError) << "rollback of segment " << id_ << " failed: " << cut.ToString();
    return s;
  }
  if (!sync) dirty_.store(true);
  file_end_ = written_;
  return Status::Ok();
}

}  // namespace nearstream::storage
