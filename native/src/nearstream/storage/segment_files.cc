#include "nearstream/storage/segment_files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace nearstream::storage {

SegmentFiles::SegmentFiles(std::string dir, std::string prefix, uint64_t max_idle_bytes)
    : dir_(std::move(dir)), prefix_(std::move(prefix)), max_idle_bytes_(max_idle_bytes) {}

SegmentFiles::~SegmentFiles() {
  MutexLock lock(&mu_);
  for (const File& f : idle_) {
    ::munmap(f.data, f.capacity);
    ::unlink(PathOf(f.number).c_str());
  }
}

std::string SegmentFiles::PathOf(uint64_t number) const {
  return dir_ + "/" + prefix_ + std::to_string(number);
}

Result<SegmentFiles::File> SegmentFiles::Take(uint32_t capacity) {
  uint64_t number = 0;
  {
    MutexLock lock(&mu_);
    for (size_t i = 0; i < idle_.size(); ++i) {
      if (idle_[i].capacity == capacity) {
        File f = idle_[i];
        idle_bytes_ -= capacity;
        idle_[i] = idle_.back();
        idle_.pop_back();
        return f;
      }
    }
    if (unlinked_all_) return Status::IoError("segment files: the broker is shutting down");
    number = next_number_++;
  }
  const std::string path = PathOf(number);
  auto fail = [&](const std::string& what, int err, int fd) {
    if (fd >= 0) {
      ::close(fd);
      ::unlink(path.c_str());
    }
    MutexLock lock(&mu_);
    ++create_failures_;
    return Status::FromErrno(StatusCode::kIoError, what + " " + path, err);
  };
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return fail("create", errno, -1);
  if (::fchmod(fd, 0600) != 0) return fail("fchmod", errno, fd);
  // Reserve the pages: on a full tmpfs a plain ftruncate succeeds and the first touch of a page
  // raises SIGBUS, in the broker's append path or in a consumer's JVM.
  const int err = ::posix_fallocate(fd, 0, capacity);
  if (err == EOPNOTSUPP || err == EINVAL) {
    if (::ftruncate(fd, capacity) != 0) return fail("ftruncate", errno, fd);
  } else if (err != 0) {
    return fail("fallocate", err, fd);
  }
  void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return fail("mmap", errno, fd);
  ::close(fd);  // the mapping keeps the file
  MutexLock lock(&mu_);
  ++files_created_;
  return File{number, static_cast<uint8_t*>(p), capacity};
}

void SegmentFiles::Give(const File& file) {
  {
    MutexLock lock(&mu_);
    if (!unlinked_all_ && idle_bytes_ + file.capacity <= max_idle_bytes_) {
      idle_.push_back(file);
      idle_bytes_ += file.capacity;
      return;
    }
  }
  ::munmap(file.data, file.capacity);
  ::unlink(PathOf(file.number).c_str());  // ENOENT after UnlinkAll: nothing to do
}

void SegmentFiles::UnlinkAll() {
  MutexLock lock(&mu_);
  unlinked_all_ = true;
  for (uint64_t n = 1; n < next_number_; ++n) ::unlink(PathOf(n).c_str());
}

uint64_t SegmentFiles::files_created() const {
  MutexLock lock(&mu_);
  return files_created_;
}

uint64_t SegmentFiles::create_failures() const {
  MutexLock lock(&mu_);
  return create_failures_;
}

}  // namespace nearstream::storage
