#include "nearstream/net/socket_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace nearstream::net {

Result<std::pair<std::string, uint16_t>> ParseHostPort(const std::string& s) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) {
    return Status::InvalidArgument("expected HOST:PORT, got '" + s + "'");
  }
  std::string port_text = s.substr(colon + 1);
  unsigned long port = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9' || port > 65535) {
      return Status::InvalidArgument("bad port in '" + s + "'");
    }
    port = port * 10 + static_cast<unsigned long>(c - '0');
  }
  if (port > 65535) return Status::InvalidArgument("port out of range in '" + s + "'");
  return std::make_pair(s.substr(0, colon), static_cast<uint16_t>(port));
}

Result<int> ListenTcp(const std::string& host, uint16_t port, bool nonblocking) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  std::string h = host == "localhost" ? "127.0.0.1" : host;
  if (::inet_pton(AF_INET, h.c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidArgument("not an IPv4 address: '" + host + "'");
  }
  int flags = SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0);
  int fd = ::socket(AF_INET, flags, 0);
  if (fd < 0) return Status::FromErrno(StatusCode::kIoError, "socket", errno);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    ::close(fd);
    return Status::FromErrno(StatusCode::kIoError, "bind " + host + ":" + std::to_string(port),
                             err);
  }
  if (::listen(fd, 1024) != 0) {
    int err = errno;
    ::close(fd);
    return Status::FromErrno(StatusCode::kIoError, "listen", err);
  }
  return fd;
}

Result<uint16_t> LocalPort(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Status::FromErrno(StatusCode::kIoError, "getsockname", errno);
  }
  return static_cast<uint16_t>(ntohs(addr.sin_port));
}

}  // namespace nearstream::net
