#include "nearstream/storage/segment.h"

#include <sys/mman.h>

#include <cerrno>

namespace nearstream::storage {

Result<std::shared_ptr<Segment>> Segment::Create(uint64_t id, uint32_t capacity, int64_t now_ms) {
  void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return Status::FromErrno(StatusCode::kStorageError,
                             "cannot map a segment of " + std::to_string(capacity) + " bytes",
                             errno);
  }
  return std::shared_ptr<Segment>(new Segment(id, capacity, static_cast<uint8_t*>(p), now_ms));
}

Segment::~Segment() { ::munmap(data_, capacity_); }

}  // namespace nearstream::storage
