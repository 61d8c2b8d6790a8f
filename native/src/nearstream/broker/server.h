// The broker's network front (after RAMCloud's and KerA's dispatcher and workers, with the
// reading of clients' connections moved to the workers): the dispatcher thread accepts
// connections and reads each one's first request. A client's connection then goes to a request
// worker (connection id mod N), which polls it in an epoll of its own, reads and frames its
// requests and runs them where it read them: a connection's requests run in order on one thread —
// what makes pipelined idempotent appends safe — while different connections run in parallel, and
// a request costs one thread's wake-up, not the dispatcher's and then the worker's. Another
// broker's connection (its first request runs off the request workers: a leader's replica
// writes, moves, joins, views) is never read by a request worker, which may be waiting for that
// very broker: a leader's copies go to the ns-replica thread, which polls them itself, and the
// dispatcher reads the rest and queues them.
//
// Threads: dispatcher (accept, first requests, other brokers' connections, long-poll deadlines),
// N request workers (poll, read and execute their connections' requests, write responses), the
// admin thread (moves and joins), the ns-replica thread (a follower's side of replication),
// ns-view-apply (follower reads' views), a maintenance thread (retention, async fsync) and the
// metrics HTTP thread.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "nearstream/broker/fetch_waiters.h"
#include "nearstream/broker/metrics.h"
#include "nearstream/broker/metrics_http_server.h"
#include "nearstream/broker/request_handler.h"
#include "nearstream/broker/request_runner.h"
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
  // A thread that polls connections of its own: each request worker, and ns-replica. A
  // connection is listed in `handed` before it is polled there, so that an event for it finds it
  // listed once the thread has taken what was handed (TakeHanded).
  struct Poller {
    int epoll_fd = -1;
    int wake_fd = -1;  // an eventfd its thread's queue writes (WorkQueue(int wake_fd))
    Mutex mu;
    std::vector<std::shared_ptr<net::Connection>> handed NS_GUARDED_BY(mu);
    ConnectionTable conns;  // its thread's only
  };

  void DispatchLoop();
  // ---- request workers (worker_connections.cc) ----
  // Request worker `index`: runs the requests it reads from its connections and those queued to
  // it (parked fetches woken, frames a thread that polled the connection before read).
  void WorkerLoop(int index);
  // Reads `conn`'s requests: runs those of this worker, queues the others to their thread, and
  // hands the connection to ns-replica once it carried a ReplicaAppend or ReplicaTxn.
  void ReadRequests(Poller& poller, int index, const std::shared_ptr<net::Connection>& conn,
                    RequestRunner* runner);
  // The admin and ns-view-apply threads: they run only what is queued to them.
  void QueueLoop(int index);
  void MaintenanceLoop();
  void Accept();
  // The dispatcher's reading of a connection it polls: a new one's first request decides where
  // it goes from then on (see the header comment).
  void OnReadable(const std::shared_ptr<net::Connection>& conn);
  // Gives `conn` to `to`'s thread, from `from`, the table of the thread that polled it; closes it
  // when it cannot be polled there.
  void HandTo(Poller& to, const std::shared_ptr<net::Connection>& conn, ConnectionTable* from);
  // The polling thread's: moves the connections handed to it into its table.
  static void TakeHanded(Poller& poller);
  // The polling thread's: serves one epoll_wait's `ready` events of `poller` — clears its
  // wake-up, sends what a writable connection had queued, and gives each readable connection
  // still in its table (not closed or handed on since) to `read`.
  template <typename Read>
  static void ServeEvents(Poller& poller, const epoll_event* events, int ready, Read&& read) {
    for (int i = 0; i < ready; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kWakeTag) {
        ClearWake(poller.wake_fd);
        continue;
      }
      auto it = poller.conns.find(tag);
      if (it == poller.conns.end()) continue;
      std::shared_ptr<net::Connection> conn = it->second;  // `read` may drop it from the table
      if (events[i].events & EPOLLOUT) conn->OnWritable();
      if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) read(conn);
    }
  }
  // Which thread's queue runs `req` (see Enqueue).
  size_t QueueOf(const Request& req) const;
  // Reads what `conn` has (up to a budget, for fairness) and gives each whole frame to
  // `on_frame`, which returns false to end the reading after the frames of that read. On EOF, a
  // socket error or a malformed frame (answered first) the connection is closed and dropped from
  // `table`, the polling thread's: returns false then.
  bool ReadConnection(const std::shared_ptr<net::Connection>& conn, ConnectionTable* table,
                      const std::function<bool(net::Frame&)>& on_frame);
  void CloseConnection(const std::shared_ptr<net::Connection>& conn, ConnectionTable* table);
  void Enqueue(Request r);

  // ---- the ns-replica thread (replica_connections.cc) ----
  // Runs ReplicaAppend and ReplicaTxn requests: those the dispatcher (or a request worker)
  // queued, and those it reads itself from the connections handed to it.
  void ReplicaLoop(int index);
  Poller& replica_poller() { return *pollers_[static_cast<size_t>(options_.workers)]; }

  const ServerOptions options_;
  storage::StreamStore* const store_;
  BrokerMetrics metrics_;
  FetchWaiters waiters_;
  std::unique_ptr<push::PushManager> push_;
  RequestHandler handler_;
  std::vector<std::unique_ptr<WorkQueue>> queues_;

  int listen_fd_ = -1;
  int epoll_fd_ = -1;  // the dispatcher's: the listener, wake_fd_ and the connections it reads
  int wake_fd_ = -1;   // eventfd that interrupts epoll_wait on Stop()
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  uint64_t next_conn_id_ = 2;  // 0 and 1 tag the listener and the wake fds in epoll data
  std::atomic<uint64_t> open_connections_{0};
  // The dispatcher's: connections it reads, new ones until their first request; and of those,
  // other brokers' connections, which it keeps reading.
  ConnectionTable conns_;
  std::unordered_set<uint64_t> peers_;
  // pollers_[i] is request worker i's, pollers_[workers] ns-replica's.
  std::vector<std::unique_ptr<Poller>> pollers_;

  std::thread dispatcher_;
  std::vector<std::thread> workers_;
  std::thread maintenance_;
  std::unique_ptr<MetricsHttpServer> metrics_http_;
};

}  // namespace nearstream::broker
