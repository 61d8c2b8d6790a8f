#include "nearstream/net/connection.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace nearstream::net {

Connection::Connection(int fd, int epoll_fd, uint64_t id, uint32_t max_frame_bytes,
                       ConnectionLimits limits)
    : fd_(fd), epoll_fd_(epoll_fd), id_(id), limits_(limits), decoder_(max_frame_bytes) {
  interest_ = EPOLLIN | EPOLLRDHUP;
}

Connection::~Connection() { ::close(fd_); }

void Connection::Send(Bytes frame) {
  std::lock_guard<std::mutex> lock(write_mu_);
  if (closed()) return;
  if (out_offset_ == out_.size()) {
    out_.clear();
    out_offset_ = 0;
    // Fast path: nothing queued, write directly from the caller's buffer.
    size_t done = 0;
    while (done < frame.size()) {
      ssize_t w =
          ::send(fd_, frame.data() + done, frame.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return;  // peer gone; the dispatcher sees the hang-up and closes
      }
      done += static_cast<size_t>(w);
    }
    if (done == frame.size()) return;
    out_.assign(frame.begin() + static_cast<ptrdiff_t>(done), frame.end());
  } else {
    out_.insert(out_.end(), frame.begin(), frame.end());
  }
  UpdateInterestLocked();
}

bool Connection::FlushLocked() {
  while (out_offset_ < out_.size()) {
    ssize_t w = ::send(fd_, out_.data() + out_offset_, out_.size() - out_offset_,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      return false;
    }
    out_offset_ += static_cast<size_t>(w);
  }
  out_.clear();
  out_offset_ = 0;
  return true;
}

void Connection::UpdateInterestLocked() {
  if (closed()) return;
  uint32_t want = EPOLLRDHUP;
  size_t pending = out_.size() - out_offset_;
  if (pending > 0) want |= EPOLLOUT;
  if (inflight_ < limits_.max_inflight && pending < limits_.max_pending_out_bytes) want |= EPOLLIN;
  if (want == interest_) return;
  interest_ = want;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = id_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd_, &ev);  // fails harmlessly once removed by Close()
}

void Connection::RequestDone() {
  std::lock_guard<std::mutex> lock(write_mu_);
  if (inflight_ > 0) --inflight_;
  UpdateInterestLocked();
}

bool Connection::RequestStarted() {
  std::lock_guard<std::mutex> lock(write_mu_);
  ++inflight_;
  UpdateInterestLocked();
  return (interest_ & EPOLLIN) != 0;
}

void Connection::OnWritable() {
  std::lock_guard<std::mutex> lock(write_mu_);
  if (!FlushLocked()) {
    out_.clear();
    out_offset_ = 0;
  }
  UpdateInterestLocked();
}

void Connection::Close() {
  std::lock_guard<std::mutex> lock(write_mu_);
  if (closed_.exchange(true)) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd_, nullptr);
  ::shutdown(fd_, SHUT_RDWR);
  out_.clear();
  out_offset_ = 0;
}

}  // namespace nearstream::net
