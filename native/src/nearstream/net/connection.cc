#include "nearstream/net/connection.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace nearstream::net {
namespace {

constexpr int kMaxIov = 64;

// Splits a frame into its write order: bytes[0, s0.at), s0, bytes[s0.at, s1.at), s1, ...
template <typename Fn>
void ForEachPiece(const OutFrame& f, Fn fn) {
  size_t at = 0;
  for (const auto& s : f.splices) {
    if (s.at > at) fn(f.bytes.data() + at, s.at - at);
    if (s.size > 0) fn(s.data, s.size);
    at = s.at;
  }
  if (f.bytes.size() > at) fn(f.bytes.data() + at, f.bytes.size() - at);
}

}  // namespace

Connection::Connection(int fd, int epoll_fd, uint64_t id, uint32_t max_frame_bytes,
                       ConnectionLimits limits)
    : fd_(fd), id_(id), limits_(limits), decoder_(max_frame_bytes), epoll_fd_(epoll_fd) {
  interest_ = EPOLLIN | EPOLLRDHUP;
}

Connection::~Connection() { ::close(fd_); }

void Connection::Send(Bytes frame) {
  OutFrame f;
  f.bytes = std::move(frame);
  Send(std::move(f));
}

void Connection::Send(OutFrame frame) {
  MutexLock lock(&write_mu_);
  if (closed()) return;
  size_t written = 0;
  if (out_.empty()) {
    // Fast path: one sendmsg straight from the frame; most responses go out whole here.
    iovec iov[kMaxIov];
    int n = 0;
    bool fits = true;
    ForEachPiece(frame, [&](const uint8_t* p, size_t size) {
      if (n == kMaxIov) {
        fits = false;
        return;
      }
      iov[n].iov_base = const_cast<uint8_t*>(p);
      iov[n++].iov_len = size;
    });
    if (fits) {
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<size_t>(n);
      ssize_t w;
      do {
        w = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      } while (w < 0 && errno == EINTR);
      if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return;  // peer gone
      written = w > 0 ? static_cast<size_t>(w) : 0;
      if (written == frame.total_size()) return;
    }
  }
  // Queue what is left. Pieces point into `frame`; moving it into the shared owner keeps those
  // pointers valid (a moved vector keeps its buffer; spliced memory is held by `keep`).
  auto owner = std::make_shared<OutFrame>(std::move(frame));
  ForEachPiece(*owner, [&](const uint8_t* p, size_t size) {
    write_mu_.AssertHeld();  // ForEachPiece calls back at once, under the lock taken above
    size_t skip = std::min(written, size);
    written -= skip;
    if (skip == size) return;
    out_.push_back(Piece{p + skip, size - skip, owner});
    out_bytes_ += size - skip;
  });
  UpdateInterestLocked();
}

bool Connection::FlushLocked() {
  while (!out_.empty()) {
    iovec iov[kMaxIov];
    int n = 0;
    for (auto it = out_.begin(); it != out_.end() && n < kMaxIov; ++it, ++n) {
      iov[n].iov_base = const_cast<uint8_t*>(it->data);
      iov[n].iov_len = it->size;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    ssize_t w = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    size_t left = static_cast<size_t>(w);
    out_bytes_ -= left;
    while (left > 0) {
      Piece& p = out_.front();
      if (left < p.size) {
        p.data += left;
        p.size -= left;
        break;
      }
      left -= p.size;
      out_.pop_front();
    }
  }
  return true;
}

void Connection::UpdateInterestLocked() {
  if (closed()) return;
  uint32_t want = EPOLLRDHUP;
  if (out_bytes_ > 0) want |= EPOLLOUT;
  if (inflight_ < limits_.max_inflight && out_bytes_ < limits_.max_pending_out_bytes) {
    want |= EPOLLIN;
  }
  if (want == interest_) return;
  interest_ = want;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = id_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd_, &ev);  // fails harmlessly once removed by Close()
}

void Connection::RequestDone() {
  MutexLock lock(&write_mu_);
  if (inflight_ > 0) --inflight_;
  UpdateInterestLocked();
}

bool Connection::RequestStarted() {
  MutexLock lock(&write_mu_);
  ++inflight_;
  UpdateInterestLocked();
  return (interest_ & EPOLLIN) != 0;
}

void Connection::OnWritable() {
  MutexLock lock(&write_mu_);
  if (!FlushLocked()) {
    out_.clear();
    out_bytes_ = 0;
  }
  UpdateInterestLocked();
}

bool Connection::MoveTo(int epoll_fd) {
  MutexLock lock(&write_mu_);
  if (closed()) return false;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd_, nullptr);
  epoll_fd_ = epoll_fd;
  epoll_event ev{};
  ev.events = interest_;
  ev.data.u64 = id_;
  return ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd_, &ev) == 0;
}

void Connection::Close() {
  MutexLock lock(&write_mu_);
  if (closed_.exchange(true)) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd_, nullptr);
  ::shutdown(fd_, SHUT_RDWR);
  out_.clear();
  out_bytes_ = 0;
}

}  // namespace nearstream::net
