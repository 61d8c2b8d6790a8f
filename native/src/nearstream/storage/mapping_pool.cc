#include "nearstream/storage/mapping_pool.h"

#include <sys/mman.h>

#include <vector>

namespace nearstream::storage {

MappingPool& MappingPool::Get() {
  static MappingPool* pool = new MappingPool();
  return *pool;
}

void* MappingPool::Take(uint32_t capacity) {
  MutexLock lock(&mu_);
  for (auto it = free_.rbegin(); it != free_.rend(); ++it) {
    if (it->capacity != capacity) continue;
    void* data = it->data;
    bytes_ -= capacity;
    free_.erase(std::next(it).base());
    return data;
  }
  return nullptr;
}

bool MappingPool::Give(void* data, uint32_t capacity, int64_t now_ms) {
  MutexLock lock(&mu_);
  if (bytes_ + capacity > kMaxBytes) return false;
  free_.push_back({data, capacity, now_ms});
  bytes_ += capacity;
  return true;
}

size_t MappingPool::ReleaseIdle(int64_t now_ms) {
  std::vector<Mapping> idle;
  {
    MutexLock lock(&mu_);
    while (!free_.empty() && now_ms - free_.front().given_ms >= kIdleMs) {
      idle.push_back(free_.front());
      bytes_ -= free_.front().capacity;
      free_.pop_front();
    }
  }
  // Outside the lock: an unmap takes about 1 ms per 8 MiB, and appenders take from the pool.
  size_t released = 0;
  for (const Mapping& m : idle) {
    ::munmap(m.data, m.capacity);
    released += m.capacity;
  }
  return released;
}

size_t MappingPool::bytes() const {
  MutexLock lock(&mu_);
  return bytes_;
}

}  // namespace nearstream::storage
