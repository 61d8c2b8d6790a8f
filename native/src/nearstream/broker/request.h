// A request read by the dispatcher and executed by a worker.
#pragma once

#include <cstdint>
#include <memory>

#include "nearstream/net/connection.h"
#include "nearstream/net/frame_decoder.h"

namespace nearstream::broker {

struct Request {
  std::shared_ptr<net::Connection> conn;
  net::Frame frame;
  // Long-poll fetches: when the wait ends (0 until the first execution decides it).
  int64_t deadline_ms = 0;
  // Set when the wait has ended: the fetch answers with whatever it finds.
  bool wait_over = false;
};

}  // namespace nearstream::broker
