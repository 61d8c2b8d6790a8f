// A tiny HTTP/1.0 endpoint for Prometheus scrapes (`--metrics-port`). One thread, one request per
// connection, short timeouts: a stuck scraper cannot hold it for long, and it never touches the
// data path.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "nearstream/common/status.h"

namespace nearstream::broker {

class MetricsHttpServer {
 public:
  using Render = std::function<std::string()>;
  explicit MetricsHttpServer(Render render) : render_(std::move(render)) {}
  ~MetricsHttpServer() { Stop(); }

  Status Start(const std::string& host, uint16_t port);
  void Stop();
  uint16_t port() const { return port_; }

 private:
  void Run();
  void Serve(int fd);

  Render render_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace nearstream::broker
