#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <filesystem>
#include <memory>
#include <vector>

#include "nearstream/storage/env.h"

namespace nearstream::storage {
namespace {

// A failed file operation: STORAGE_ERROR (not IO_ERROR, which is the client side's) with errno's
// text.
Status StorageErrno(const std::string& what, const std::string& path, int err) {
  return Status::FromErrno(StatusCode::kStorageError, what + " " + path, err);
}

// Holds the last descriptor of an unlinked file: closing it frees the blocks.
class PosixDetachedFile final : public DetachedFile {
 public:
  explicit PosixDetachedFile(int fd) : fd_(fd) {}
  ~PosixDetachedFile() override { ::close(fd_); }
  PosixDetachedFile(const PosixDetachedFile&) = delete;
  PosixDetachedFile& operator=(const PosixDetachedFile&) = delete;

 private:
  const int fd_;
};

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixWritableFile() override { ::close(fd_); }

  Status Append(const uint8_t* data, size_t n) override {
    size_t done = 0;
    while (done < n) {
      ssize_t w = ::pwrite(fd_, data + done, n - done, static_cast<off_t>(size_ + done));
      if (w < 0) {
        if (errno == EINTR) continue;
        return StorageErrno("write", path_, errno);
      }
      done += static_cast<size_t>(w);
    }
    size_ += n;
    return Status::Ok();
  }

  Status AppendV(const iovec* pieces, size_t count) override {
    std::vector<iovec> left(pieces, pieces + count);
    size_t first = 0;
    uint64_t at = size_;
    for (;;) {
      while (first < left.size() && left[first].iov_len == 0) ++first;
      if (first == left.size()) break;
      const int n = static_cast<int>(std::min<size_t>(left.size() - first, IOV_MAX));
      ssize_t w = ::pwritev(fd_, left.data() + first, n, static_cast<off_t>(at));
      if (w < 0) {
        if (errno == EINTR) continue;
        return StorageErrno("write", path_, errno);
      }
      if (w == 0) return StorageErrno("write", path_, EIO);
      at += static_cast<uint64_t>(w);
      // Past what went out: whole pieces, then the front of a piece written in part.
      for (size_t done = static_cast<size_t>(w); done > 0;) {
        iovec& piece = left[first];
        const size_t take = std::min(done, piece.iov_len);
        piece.iov_base = static_cast<uint8_t*>(piece.iov_base) + take;
        piece.iov_len -= take;
        done -= take;
        if (piece.iov_len == 0) ++first;
      }
    }
    size_ = at;
    return Status::Ok();
  }

  Status Truncate(uint64_t size) override {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0)
      return StorageErrno("truncate", path_, errno);
    size_ = size;
    return Status::Ok();
  }

  Status Sync() override {
    if (::fdatasync(fd_) != 0) return StorageErrno("fdatasync", path_, errno);
    return Status::Ok();
  }

  uint64_t size() const override { return size_; }

 private:
  const std::string path_;
  const int fd_;
  uint64_t size_;
};

class PosixEnv final : public Env {
 public:
  Result<std::unique_ptr<WritableFile>> OpenAppendable(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return StorageErrno("open", path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return StorageErrno("stat", path, err);
    }
    return std::unique_ptr<WritableFile>(
        new PosixWritableFile(path, fd, static_cast<uint64_t>(st.st_size)));
  }

  Result<Bytes> ReadFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return StorageErrno("open", path, errno);
    Bytes out;
    uint8_t buf[1 << 16];
    for (;;) {
      ssize_t r = ::read(fd, buf, sizeof(buf));
      if (r < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        ::close(fd);
        return StorageErrno("read", path, err);
      }
      if (r == 0) break;
      out.insert(out.end(), buf, buf + r);
    }
    ::close(fd);
    return out;
  }

  Status WriteFileAtomically(const std::string& path, const Bytes& data) override {
    std::string tmp = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return StorageErrno("open", tmp, errno);
    PosixWritableFile file(tmp, fd, 0);
    RETURN_IF_ERROR(file.Append(data.data(), data.size()));
    RETURN_IF_ERROR(file.Sync());
    RETURN_IF_ERROR(Rename(tmp, path));
    return SyncDir(std::filesystem::path(path).parent_path().string());
  }

  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) return StorageErrno("opendir", path, errno);
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    ::closedir(d);
    return names;
  }

  Status CreateDirs(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return StorageErrno("mkdir", path, ec.value());
    return Status::Ok();
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return StorageErrno("unlink", path, errno);
    return Status::Ok();
  }

  Result<std::unique_ptr<DetachedFile>> DetachFile(const std::string& path) override {
    // Opened first, so that unlink only drops the name (the inode goes on the orphan list) and
    // the file's blocks are freed when the descriptor closes. A crash in between leaves an
    // orphan the file system frees when it mounts.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return std::unique_ptr<DetachedFile>();
      return StorageErrno("open", path, errno);
    }
    auto detached = std::make_unique<PosixDetachedFile>(fd);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return StorageErrno("unlink", path, errno);
    return std::unique_ptr<DetachedFile>(std::move(detached));
  }

  Status RemoveAll(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return StorageErrno("remove", path, ec.value());
    return Status::Ok();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return StorageErrno("rename", from, errno);
    return Status::Ok();
  }

  Status SyncDir(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return StorageErrno("open dir", path, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return StorageErrno("fsync dir", path, err);
    return Status::Ok();
  }

  bool Exists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  Result<int64_t> ModifiedTimeMs(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return StorageErrno("stat", path, errno);
    return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  }
};

}  // namespace

Env* Env::Default() {
  static Env* env = new PosixEnv();
  return env;
}

}  // namespace nearstream::storage
