// One client connection of the broker. The thread polling it owns reading (decoder, pausing):
// the dispatcher, or the thread it handed the connection to (MoveTo); any worker may Send a
// response. The file descriptor is closed only by the destructor, so a
// worker holding a reference can never write into a descriptor number reused by a newer client.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>

#include "nearstream/common/byte_io.h"
#include "nearstream/common/mutex.h"
#include "nearstream/common/thread_annotations.h"
#include "nearstream/net/frame_decoder.h"
#include "nearstream/net/out_frame.h"

namespace nearstream::net {

struct ConnectionLimits {
  uint32_t max_inflight = 256;               // requests queued, running or parked
  size_t max_pending_out_bytes = 32u << 20;  // unsent response bytes before reading pauses
};

class Connection {
 public:
  Connection(int fd, int epoll_fd, uint64_t id, uint32_t max_frame_bytes, ConnectionLimits limits);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  uint64_t id() const { return id_; }
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  // Any thread. Queues a whole response frame; writes at once (writev, spliced payloads
  // included) when nothing is queued before it.
  void Send(OutFrame frame) NS_EXCLUDES(write_mu_);
  void Send(Bytes frame) NS_EXCLUDES(write_mu_);
  // Any thread. A request finished (answered or dropped): may resume reading.
  void RequestDone() NS_EXCLUDES(write_mu_);

  // ---- the polling thread only (the dispatcher, or the one it moved the connection to) ----
  FrameDecoder& decoder() { return decoder_; }
  // A request was read and queued; returns false when reading must pause (too many in flight).
  bool RequestStarted() NS_EXCLUDES(write_mu_);
  // EPOLLOUT fired: writes what is queued.
  void OnWritable() NS_EXCLUDES(write_mu_);
  // Marks the connection closed and removes it from epoll; pending output is dropped.
  void Close() NS_EXCLUDES(write_mu_);
  // Polled by `epoll_fd` from now on instead (registered there with the same events, tagged with
  // its id); the thread polling that one owns reading after it. False when closed.
  bool MoveTo(int epoll_fd) NS_EXCLUDES(write_mu_);

 private:
  // A contiguous run of bytes still to write; `owner` keeps its memory alive.
  struct Piece {
    const uint8_t* data;
    size_t size;
    std::shared_ptr<const OutFrame> owner;
  };

  // Writes queued pieces until the socket is full; false on a fatal socket error.
  bool FlushLocked() NS_REQUIRES(write_mu_);
  // Recomputes the epoll interest set from the pause/write state.
  void UpdateInterestLocked() NS_REQUIRES(write_mu_);

  const int fd_;
  const uint64_t id_;
  const ConnectionLimits limits_;
  FrameDecoder decoder_;
  std::atomic<bool> closed_{false};

  Mutex write_mu_;
  std::deque<Piece> out_ NS_GUARDED_BY(write_mu_);
  size_t out_bytes_ NS_GUARDED_BY(write_mu_) = 0;
  uint32_t inflight_ NS_GUARDED_BY(write_mu_) = 0;
  int epoll_fd_ NS_GUARDED_BY(write_mu_);           // the epoll polling it
  uint32_t interest_ NS_GUARDED_BY(write_mu_) = 0;  // epoll events registered
};

}  // namespace nearstream::net
