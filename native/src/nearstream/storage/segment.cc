#include "nearstream/storage/segment.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "nearstream/common/clock.h"
#include "nearstream/common/log.h"
#include "nearstream/storage/mapping_pool.h"

namespace nearstream::storage {

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
  void* p = MappingPool::Get().Take(capacity);
  if (p == nullptr) {
    // In small pages: with MADV_HUGEPAGE the faults fell from ~60 000 to ~100 a second per
    // broker, but each took a 2 MiB page through direct compaction, and replication 1 at 4 KiB
    // chunks in the Fig. 3 setting of `run.py replication` took 0.7x the records for 1.3x the
    // broker CPU per record (2-core VM).
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
  } else if (!MappingPool::Get().Give(data_, capacity_, MonotonicNowMs())) {
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
