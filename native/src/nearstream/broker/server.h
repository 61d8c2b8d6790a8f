// The broker's network front: one dispatcher thread polls every socket with epoll, cuts bytes
// into frames and hands each request to a worker (RAMCloud/KerA style). A connection always
// goes to the same worker (id mod N), which keeps one connection's requests in order — what makes
// pipelined idempotent appends safe — while different connections run in parallel.
//
// Threads: dispatcher (owns accept, reads, the connection table, long-poll deadlines), N workers
// (execute requests, write responses), the ns-replica thread (a follower's side of replication;
// it reads the leaders' replica connections itself), a maintenance thread (retention, async
// fsync) and the metrics HTTP thread.
#pragma once

#include <atomic>
#include <functional>
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
#include "nearstream/common/mutex.h"
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
  // than the mapping pool then kept, so the next second's segments page-faulted in afresh.
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
  using ConnectionTable = std::unordered_map<uint64_t, std::shared_ptr<net::Connection>>;
  // epoll tags: the listener, the eventfd that wakes the polling thread; connections by id.
  static constexpr uint64_t kListenerTag = 0;
  static constexpr uint64_t kWakeTag = 1;

  // Reads an eventfd that woke an epoll_wait, so that it does not report it again.
  static void ClearWake(int eventfd);
  void DispatchLoop();
  void WorkerLoop(int index);
  void MaintenanceLoop();
  void Accept();
  void OnReadable(const std::shared_ptr<net::Connection>& conn);
  // Reads what `conn` has (up to a budget, for fairness) and gives each whole frame to
  // `on_frame`, which returns false to end the reading after the frames of that read. On EOF, a
  // socket error or a malformed frame (answered first) the connection is closed and dropped from
  // `table`, the polling thread's: returns false then.
  bool ReadConnection(const std::shared_ptr<net::Connection>& conn, ConnectionTable* table,
                      const std::function<bool(net::Frame&)>& on_frame);
  void CloseConnection(const std::shared_ptr<net::Connection>& conn, ConnectionTable* table);
  void Enqueue(Request r);

  // ---- the ns-replica thread (replica_connections.cc) ----
  // Runs ReplicaAppend and ReplicaTxn requests: those the dispatcher queued, and those it reads
  // itself from the connections handed to it.
  void ReplicaLoop(int index);
  // The dispatcher's: from now on `conn` (which carried a ReplicaAppend or ReplicaTxn; its
  // frames read so far are queued) is polled by the ns-replica thread.
  void HandToReplicaThread(const std::shared_ptr<net::Connection>& conn);

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
  ConnectionTable conns_;      // dispatcher only
  std::atomic<uint64_t> open_connections_{0};
  // The ns-replica thread's epoll, and the eventfd its queue wakes it with.
  int replica_epoll_fd_ = -1;
  int replica_wake_fd_ = -1;
  // Connections the dispatcher handed over, not yet taken by the ns-replica thread.
  Mutex handed_mu_;
  std::vector<std::shared_ptr<net::Connection>> handed_ NS_GUARDED_BY(handed_mu_);
  ConnectionTable replica_conns_;  // ns-replica only

  std::thread dispatcher_;
  std::vector<std::thread> workers_;
  std::thread maintenance_;
  std::unique_ptr<MetricsHttpServer> metrics_http_;
};

}  // namespace nearstream::broker
