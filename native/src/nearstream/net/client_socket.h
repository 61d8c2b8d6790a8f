// Client-side socket helpers: parsing a broker address and dialling it with a timeout. The names
// carry "Broker"/"Client" so they never collide with the server's own socket code.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "nearstream/common/status.h"

namespace nearstream::net {

struct BrokerAddress {
  std::string host;  // name, IPv4 literal or IPv6 literal (without brackets)
  uint16_t port = 0;

  // "host:port", with brackets around IPv6 literals so the text parses back.
  std::string ToString() const;
};

// Parses "host:port" or "[ipv6]:port". The port must be in [1, 65535]; the host must not be
// empty. Errors are kInvalidArgument and quote the offending text.
Result<BrokerAddress> ParseBrokerAddress(std::string_view text);

// Resolves `address` and connects to the first address that answers within `timeout_ms` (in
// total). Returns a connected socket in non-blocking mode with TCP_NODELAY and close-on-exec set;
// the caller owns it. Errors are kIoError and name the address and errno text.
Result<int> DialBroker(const BrokerAddress& address, int timeout_ms);

}  // namespace nearstream::net
