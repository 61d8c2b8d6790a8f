// Sends a worker's responses, merging the answers to one connection's consecutive requests into
// one write. A client that pipelines (a leader's batch of ReplicaAppends, a producer's appends)
// then wakes once for the batch instead of once per answer; on a small machine those wake-ups,
// not the bytes, are what a round trip costs.
#pragma once

#include <memory>
#include <utility>

#include "nearstream/net/connection.h"
#include "nearstream/net/out_frame.h"

namespace nearstream::broker {

class ResponseWriter {
 public:
  ResponseWriter() = default;
  ~ResponseWriter() { Flush(); }
  ResponseWriter(const ResponseWriter&) = delete;
  ResponseWriter& operator=(const ResponseWriter&) = delete;

  // The answer to one request of `conn`: written with the answers before it when they are to
  // the same connection, otherwise once those are out.
  void Add(const std::shared_ptr<net::Connection>& conn, net::OutFrame&& frame) {
    if (conn != conn_) Flush();
    conn_ = conn;
    frame_.Append(std::move(frame));
    ++answers_;
  }
  // Writes what is merged and ends its requests (the connection may read again).
  void Flush() {
    if (conn_ == nullptr) return;
    conn_->Send(std::move(frame_));
    frame_ = net::OutFrame();
    for (; answers_ > 0; --answers_) conn_->RequestDone();
    conn_ = nullptr;
  }

 private:
  std::shared_ptr<net::Connection> conn_;
  net::OutFrame frame_;
  size_t answers_ = 0;
};

}  // namespace nearstream::broker
