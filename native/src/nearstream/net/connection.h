// One client connection of the broker. The dispatcher thread owns reading (decoder, pausing);
// any worker may Send a response. The file descriptor is closed only by the destructor, so a
// worker holding a reference can never write into a descriptor number reused by a newer client.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "nearstream/common/byte_io.h"
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
  void Send(OutFrame frame);
  void Send(Bytes frame);
  // Any thread. A request finished (answered or dropped): may resume reading.
  void RequestDone();

  // ---- dispatcher thread only ----
  FrameDecoder& decoder() { return decoder_; }
  // A request was read and queued; returns false when reading must pause (too many in flight).
  bool RequestStarted();
  // EPOLLOUT fired: writes what is queued.
  void OnWritable();
  // Marks the connection closed and removes it from epoll; pending output is dropped.
  void Close();

 private:
  // A contiguous run of bytes still to write; `owner` keeps its memory alive.
  struct Piece {
    const uint8_t* data;
    size_t size;
    std::shared_ptr<const OutFrame> owner;
  };

  // Writes queued pieces until the socket is full; false on a fatal socket error.
  bool FlushLocked();
  // Recomputes the epoll interest set from the pause/write state. write_mu_ held.
  void UpdateInterestLocked();

  const int fd_;
  const int epoll_fd_;
  const uint64_t id_;
  const ConnectionLimits limits_;
  FrameDecoder decoder_;
  std::atomic<bool> closed_{false};

  std::mutex write_mu_;
  std::deque<Piece> out_;  // GUARDED_BY(write_mu_)
  size_t out_bytes_ = 0;   // GUARDED_BY(write_mu_)
  uint32_t inflight_ = 0;  // GUARDED_BY(write_mu_)
  uint32_t interest_ = 0;  // epoll events registered; GUARDED_BY(write_mu_)
};

}  // namespace nearstream::net
