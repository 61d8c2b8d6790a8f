// The broker's network front: one dispatcher thread polls every socket with epoll, cuts bytes
// into frames and hands each request to a worker (RAMCloud/KerA style). A connection always
// goes to the same worker (id mod N), which keeps one connection's requests in order — what makes
// pipelined idempotent appends safe — while different connections run in parallel.
//
// Threads: dispatcher (owns accept, reads, the connection table, long-poll deadlines), N workers
// (execute requests, write responses), a maintenance thread (retention, async fsync) and the
// metrics HTTP thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "nearstream/broker/fetch_waiters.h"
#include "nearstream/broker/metrics.h"
#include "nearstream/broker/metrics_http_server.h"
#include "nearstream/broker/request_handler.h"
#include "nearstream/broker/work_queue.h"
#include "nearstream/net/connection.h"
#include "nearstream/storage/stream_store.h"

namespace nearstream::broker {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0 = any free port
  int workers = 2;
  int metrics_port = -1;  // -1 = no HTTP endpoint, 0 = any free port
  uint32_t max_frame_bytes = net::kDefaultMaxFrameBytes;
  net::ConnectionLimits limits;
  int64_t flush_interval_ms = 200;  // async durability
  // Retention runs this often. Segments live in memory, so size retention is a memory bound: at
  // ~1 GB/s of appends a 1 s pass overshot it by a gigabyte and dropped more segments at once
  // than the mapping pool keeps, so the next second's segments page-faulted in afresh.
  int64_t maintenance_interval_ms = 100;
  HandlerOptions handler;  // an empty handler.address becomes host:port once bound
  push::PushOptions push;  // broker_epoch is taken from `handler`
  // The broker's cluster membership (started after the server listens); null = standalone.
  cluster::ZkCluster* cluster = nullptr;
};

class Server {
 public:
  // `store` must be opened already and outlive the server.
  Server(ServerOptions options, storage::StreamStore* store);
  ~Server();

  Status Start();
  // Stops all threads; safe to call from any thread except the server's own, and more than once.
  void Stop();

  uint16_t port() const { return port_; }
  uint16_t metrics_port() const { return metrics_http_ ? metrics_http_->port() : 0; }
  push::PushManager* push() { return push_.get(); }
  MetricValues CollectMetrics();

 private:
  void DispatchLoop();
  void WorkerLoop(int index);
  void MaintenanceLoop();
  void Accept();
  void OnReadable(const std::shared_ptr<net::Connection>& conn);
  void CloseConnection(const std::shared_ptr<net::Connection>& conn);
  void Enqueue(Request r);

  const ServerOptions options_;
  storage::StreamStore* const store_;
  BrokerMetrics metrics_;
  FetchWaiters waiters_;
  std::unique_ptr<push::PushManager> push_;
  RequestHandler handler_;
  std::vector<std::unique_ptr<WorkQueue>> queues_;

  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd that interrupts epoll_wait on Stop()
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  uint64_t next_conn_id_ = 2;  // 0 and 1 tag the listener and the wake fd in epoll data
  std::unordered_map<uint64_t, std::shared_ptr<net::Connection>> conns_;  // dispatcher only
  std::atomic<uint64_t> open_connections_{0};

  std::thread dispatcher_;
  std::vector<std::thread> workers_;
  std::thread maintenance_;
  std::unique_ptr<MetricsHttpServer> metrics_http_;
};

}  // namespace nearstream::broker
