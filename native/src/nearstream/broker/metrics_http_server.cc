#include "nearstream/broker/metrics_http_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "nearstream/common/thread_name.h"
#include "nearstream/net/socket_util.h"

namespace nearstream::broker {

Status MetricsHttpServer::Start(const std::string& host, uint16_t port) {
  ASSIGN_OR_RETURN(listen_fd_, net::ListenTcp(host, port, /*nonblocking=*/false));
  ASSIGN_OR_RETURN(port_, net::LocalPort(listen_fd_));
  thread_ = std::thread([this] { Run(); });
  NameThread(thread_, "ns-metrics");
  return Status::Ok();
}

void MetricsHttpServer::Stop() {
  if (stop_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void MetricsHttpServer::Run() {
  while (!stop_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Serve(fd);
    ::close(fd);
  }
}

void MetricsHttpServer::Serve(int fd) {
  // Read the request head (up to a blank line or 8 KiB) with a short timeout.
  std::string head;
  char buf[1024];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 8192) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) return;
    ssize_t r = ::recv(fd, buf, sizeof(buf), 0);
    if (r <= 0) return;
    head.append(buf, static_cast<size_t>(r));
  }
  std::string status = "200 OK", body;
  if (head.rfind("GET /metrics", 0) == 0 || head.rfind("GET / ", 0) == 0) {
    body = render_();
  } else {
    status = "404 Not Found";
    body = "Nearstream serves metrics at /metrics\n";
  }
  std::string resp = "HTTP/1.0 " + status +
                     "\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  size_t done = 0;
  while (done < resp.size()) {
    ssize_t w = ::send(fd, resp.data() + done, resp.size() - done, MSG_NOSIGNAL);
    if (w <= 0) return;
    done += static_cast<size_t>(w);
  }
}

}  // namespace nearstream::broker
