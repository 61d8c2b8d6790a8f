// A library that tests preload (LD_PRELOAD) into a real nearstreamd to make its disk fail on
// demand, the way a full or dying disk does, with the broker's own code unchanged: the
// process-level counterpart of fault_injection_env.h, for the faults a test must see a whole
// cluster of processes survive (a follower whose disk fails while its leader goes on).
//
// It is switched by files in the directory that the environment variable
// NEARSTREAM_DISK_FAULTS names, looked up at every call, so a test arms and clears a fault while
// the broker runs:
//   sync-fails  fsync and fdatasync fail with EIO and sync nothing;
//   disk-full   pwrite and pwritev to regular files fail with ENOSPC and write nothing.
// Every failure it injects appends a line naming the call to `injected` in that directory, so a
// test can check that its fault reached the broker at all. Without the variable, or with no
// file, each call goes straight to the next definition (libc's, or a sanitizer's).
//
// Built as a module of its own, without sanitizers, and never linked by anything: see
// testing/disk_faults.h for how a test preloads it.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

const char* FaultsDir() { return std::getenv("NEARSTREAM_DISK_FAULTS"); }

bool Armed(const char* fault) {
  const char* dir = FaultsDir();
  if (dir == nullptr) return false;
  char path[4096];
  if (std::snprintf(path, sizeof(path), "%s/%s", dir, fault) >= static_cast<int>(sizeof(path))) {
    return false;
  }
  return ::access(path, F_OK) == 0;
}

// Appends `call` to the injected log; keeps errno, which the caller sets afterwards anyway.
void NoteInjected(const char* call) {
  const int saved = errno;
  char path[4096];
  if (std::snprintf(path, sizeof(path), "%s/injected", FaultsDir()) <
      static_cast<int>(sizeof(path))) {
    int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
      char line[64];
      int n = std::snprintf(line, sizeof(line), "%s\n", call);
      ssize_t ignored = ::write(fd, line, static_cast<size_t>(n));
      (void)ignored;
      ::close(fd);
    }
  }
  errno = saved;
}

// A disk holds regular files; sockets, pipes and the like are left alone.
bool RegularFile(int fd) {
  struct stat st;
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

template <typename Fn>
Fn Next(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

int Fail(const char* call, int error) {
  NoteInjected(call);
  errno = error;
  return -1;
}

}  // namespace

extern "C" {

int fsync(int fd) {
  if (Armed("sync-fails")) return Fail("fsync", EIO);
  static const auto next = Next<int (*)(int)>("fsync");
  return next(fd);
}

int fdatasync(int fildes) {
  if (Armed("sync-fails")) return Fail("fdatasync", EIO);
  static const auto next = Next<int (*)(int)>("fdatasync");
  return next(fildes);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t offset) {
  if (Armed("disk-full") && RegularFile(fd)) return Fail("pwrite", ENOSPC);
  static const auto next = Next<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite");
  return next(fd, buf, n, offset);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t offset) {
  if (Armed("disk-full") && RegularFile(fd)) return Fail("pwrite64", ENOSPC);
  static const auto next = Next<ssize_t (*)(int, const void*, size_t, off64_t)>("pwrite64");
  return next(fd, buf, n, offset);
}

ssize_t pwritev(int fd, const struct iovec* iovec, int count, off_t offset) {
  if (Armed("disk-full") && RegularFile(fd)) return Fail("pwritev", ENOSPC);
  static const auto next = Next<ssize_t (*)(int, const struct iovec*, int, off_t)>("pwritev");
  return next(fd, iovec, count, offset);
}

ssize_t pwritev64(int fd, const struct iovec* iovec, int count, off64_t offset) {
  if (Armed("disk-full") && RegularFile(fd)) return Fail("pwritev64", ENOSPC);
  static const auto next = Next<ssize_t (*)(int, const struct iovec*, int, off64_t)>("pwritev64");
  return next(fd, iovec, count, offset);
}

}  // extern "C"
