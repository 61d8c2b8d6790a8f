#include "nearstream/net/client_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "nearstream/common/clock.h"

namespace nearstream::net {

namespace {

// The message of a refused broker address.
std::string BadAddress(std::string_view text, const std::string& why) {
  return "bad broker address '" + std::string(text) + "': " + why;
}

// Connects one resolved address; returns the fd or an errno-carrying error.
Result<int> ConnectOne(const addrinfo* ai, int timeout_ms, const std::string& where) {
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) return Status::FromErrno(StatusCode::kIoError, "socket() for " + where, errno);
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      int err = errno;
      close(fd);
      return Status::FromErrno(StatusCode::kIoError, "connect to " + where, err);
    }
    pollfd p{fd, POLLOUT, 0};
    int n;
    do {
      n = poll(&p, 1, timeout_ms);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
      int err = n < 0 ? errno : ETIMEDOUT;
      close(fd);
      return Status::FromErrno(StatusCode::kIoError, "connect to " + where, err);
    }
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
      close(fd);
      return Status::FromErrno(StatusCode::kIoError, "connect to " + where, err);
    }
  }
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    int err = errno;
    close(fd);
    return Status::FromErrno(StatusCode::kIoError, "TCP_NODELAY on " + where, err);
  }
  return fd;
}

}  // namespace

std::string BrokerAddress::ToString() const {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<BrokerAddress> ParseBrokerAddress(std::string_view text) {
  BrokerAddress a;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos)
      return Status::InvalidArgument(BadAddress(text, "missing ']'"));
    a.host = std::string(text.substr(1, close - 1));
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return Status::InvalidArgument(BadAddress(text, "expected ':PORT' after ']'"));
    }
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos)
      return Status::InvalidArgument(BadAddress(text, "expected HOST:PORT"));
    a.host = std::string(text.substr(0, colon));
    if (a.host.find(':') != std::string::npos) {
      return Status::InvalidArgument(
          BadAddress(text, "IPv6 hosts must be written in brackets, e.g. [::1]:7070"));
    }
    port = text.substr(colon + 1);
  }
  if (a.host.empty()) return Status::InvalidArgument(BadAddress(text, "empty host"));
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value < 1 ||
      value > 65535) {
    return Status::InvalidArgument(BadAddress(text, "port must be a number in [1, 65535]"));
  }
  a.port = static_cast<uint16_t>(value);
  return a;
}

Result<int> DialBroker(const BrokerAddress& address, int timeout_ms) {
  const std::string where = address.ToString();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const std::string port = std::to_string(address.port);
  int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &list);
  if (rc != 0) {
    return Status::IoError("cannot resolve " + where + ": " + std::string(gai_strerror(rc)));
  }
  const int64_t deadline_ms = MonotonicNowMs() + timeout_ms;
  Status last = Status::IoError("no address found for " + where);
  for (const addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    const int64_t left_ms = deadline_ms - MonotonicNowMs();
    if (left_ms <= 0) {
      last = Status::FromErrno(StatusCode::kIoError, "connect to " + where, ETIMEDOUT);
      break;
    }
    Result<int> fd = ConnectOne(ai, static_cast<int>(left_ms), where);
    if (fd.ok()) {
      freeaddrinfo(list);
      return fd;
    }
    last = fd.status();
  }
  freeaddrinfo(list);
  return last;
}

}  // namespace nearstream::net
