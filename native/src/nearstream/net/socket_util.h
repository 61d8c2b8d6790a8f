// Server-side socket helpers (the client has its own in client_socket.h).
#pragma once

#include <cstdint>
#include <string>

#include "nearstream/common/status.h"

namespace nearstream::net {

// Splits "host:port"; the port must be 0..65535.
Result<std::pair<std::string, uint16_t>> ParseHostPort(const std::string& s);

// socket + SO_REUSEADDR + bind + listen on an IPv4 address ("127.0.0.1", "0.0.0.0").
Result<int> ListenTcp(const std::string& host, uint16_t port, bool nonblocking);
Result<uint16_t> LocalPort(int fd);

}  // namespace nearstream::net
