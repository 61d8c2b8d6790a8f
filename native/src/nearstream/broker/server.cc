#include "nearstream/broker/server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "nearstream/broker/damage_metrics.h"
#include "nearstream/broker/request_runner.h"
#include "nearstream/cluster/zk_cluster.h"
#include "nearstream/common/clock.h"
#include "nearstream/common/log.h"
#include "nearstream/common/thread_name.h"
#include "nearstream/net/socket_util.h"
#include "nearstream/storage/mapping_pool.h"

namespace nearstream::broker {
namespace {

// Queues after the request workers' own: the admin, replica and views threads' (see Enqueue).
constexpr int kExtraQueues = 3;
constexpr size_t kReadChunk = 256 * 1024;
// Bytes read from one connection per readiness event before serving the others (fairness).
constexpr size_t kReadBudget = 4u << 20;
// Body bytes still missing above which recv() writes straight into the frame's buffer.
constexpr size_t kDirectRecvMin = 16 * 1024;

}  // namespace

Server::Server(ServerOptions options, storage::StreamStore* store)
    : options_(options),
      store_(store),
      metrics_(options.workers + kExtraQueues),
      waiters_([this](Request r) { Enqueue(std::move(r)); }),
      push_(std::make_unique<push::PushManager>(
          [&options] {
            push::PushOptions p = options.push;
            p.broker_epoch = options.handler.broker_epoch;
            return p;
          }(),
          store)),
      handler_(options.handler, store, &waiters_, &metrics_, push_.get(), options.cluster) {
  // One queue per request worker, then the admin, replica and views queues (see Enqueue). The
  // request workers and the replica thread sleep in epoll_wait (they poll connections): their
  // queues wake them by an eventfd.
  for (int i = 0; i <= options_.workers; ++i) {
    pollers_.push_back(std::make_unique<Poller>());
    pollers_.back()->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  for (int i = 0; i < options_.workers + kExtraQueues; ++i) {
    if (i < options_.workers) {
      queues_.push_back(std::make_unique<WorkQueue>(pollers_[i]->wake_fd));
    } else if (i == options_.workers + 1) {
      queues_.push_back(std::make_unique<WorkQueue>(replica_poller().wake_fd));
    } else {
      queues_.push_back(std::make_unique<WorkQueue>());
    }
  }
  if (options_.cluster != nullptr) {
    options_.cluster->OnStreamDeleted(
        [this](const std::shared_ptr<storage::Stream>& stream) { waiters_.WakeAll(stream.get()); });
    // A follower's copy published more (follower reads): its parked readers here read on.
    options_.cluster->OnPublished(
        [this](const std::shared_ptr<storage::Stream>& stream, uint32_t streamlet) {
          const uint32_t ids[] = {streamlet};
          waiters_.Wake(stream.get(), ids);
          push_->NotifyAppend(stream.get());
        });
    // A streamlet moved away: its readers here hear NOT_OWNER, pushed or parked.
    options_.cluster->OnStreamletLost([this](const std::shared_ptr<storage::Stream>& stream) {
      push_->EndSubscriptionsOf(stream.get());
      waiters_.WakeAll(stream.get());
    });
  }
  handler_.collect_metrics = [this] { return CollectMetrics(); };
}

Server::~Server() {
  Stop();
  for (auto& p : pollers_) {
    if (p->wake_fd >= 0) ::close(p->wake_fd);
  }
}

Status Server::Start() {
  if (options_.workers < 1) {
    return Status::InvalidArgument("--workers must be at least 1");
  }
  RETURN_IF_ERROR(push_->Start());
  ASSIGN_OR_RETURN(listen_fd_, net::ListenTcp(options_.host, options_.port, true));
  ASSIGN_OR_RETURN(port_, net::LocalPort(listen_fd_));
  if (options_.handler.address.empty()) {
    handler_.set_address(options_.host + ":" + std::to_string(port_));  // before any worker runs
  }
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    return Status::FromErrno(StatusCode::kIoError, "epoll/eventfd", errno);
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenerTag;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.u64 = kWakeTag;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  for (auto& p : pollers_) {
    p->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (p->epoll_fd < 0 || p->wake_fd < 0) {
      return Status::FromErrno(StatusCode::kIoError, "epoll/eventfd", errno);
    }
    ::epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, p->wake_fd, &ev);
  }
  if (options_.metrics_port >= 0) {
    metrics_http_ =
        std::make_unique<MetricsHttpServer>([this] { return RenderPrometheus(CollectMetrics()); });
    RETURN_IF_ERROR(
        metrics_http_->Start(options_.host, static_cast<uint16_t>(options_.metrics_port)));
  }
  for (int i = 0; i < options_.workers; ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i); });
    NameThread(workers_.back(), "ns-worker-" + std::to_string(i));
  }
  workers_.emplace_back([this] { QueueLoop(options_.workers); });
  NameThread(workers_.back(), "ns-admin");
  workers_.emplace_back([this] { ReplicaLoop(options_.workers + 1); });
  NameThread(workers_.back(), "ns-replica");
  workers_.emplace_back([this] { QueueLoop(options_.workers + 2); });
  NameThread(workers_.back(), "ns-view-apply");
  maintenance_ = std::thread([this] { MaintenanceLoop(); });
  NameThread(maintenance_, "ns-maintenance");
  dispatcher_ = std::thread([this] { DispatchLoop(); });
  NameThread(dispatcher_, "ns-dispatch");
  return Status::Ok();
}

void Server::Stop() {
  if (stopping_.exchange(true)) return;
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    ssize_t ignored = ::write(wake_fd_, &one, sizeof(one));
    (void)ignored;
  }
  if (dispatcher_.joinable()) dispatcher_.join();
  for (auto& q : queues_) q->Stop();
  for (auto& t : workers_) t.join();
  workers_.clear();
  push_->Stop();  // every subscription ends: regions closed and unlinked
  if (maintenance_.joinable()) maintenance_.join();
  if (metrics_http_) metrics_http_->Stop();
  for (auto& [id, conn] : conns_) conn->Close();
  conns_.clear();
  peers_.clear();
  for (auto& p : pollers_) {
    for (auto& [id, conn] : p->conns) conn->Close();
    p->conns.clear();
    {
      MutexLock lock(&p->mu);
      for (auto& conn : p->handed) conn->Close();
      p->handed.clear();
    }
    if (p->epoll_fd >= 0) ::close(p->epoll_fd);
    p->epoll_fd = -1;
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  listen_fd_ = epoll_fd_ = wake_fd_ = -1;
}

size_t Server::QueueOf(const Request& r) const {
  // A connection's requests go to one worker, in order. A move takes as long as copying the
  // streamlet and waiting for the transactions that write it; on a request worker it would hold
  // up every connection of that worker, commits of those very transactions included. It runs on
  // the admin thread instead (its answer is matched by request id, as every answer is).
  // A leader's request worker waits for its followers' ReplicaAppend answers: on a follower's
  // request workers, which may all be waiting the same way for this broker (each leads some
  // streamlets and follows others), the two would wait for each other until the replica
  // timeout. ReplicaAppend (and ReplicaTxn, a transaction's writes) runs on a thread of its
  // own, which never waits for another broker.
  // ReplicaJoin (a ZooKeeper update on the leader) goes to the admin thread, and so does
  // ReplicaMove (a copy, as MoveStreamlet). ReplicaPublished (follower reads) has a thread of its
  // own too: a whole view may load many segments from files, which on the replica thread would
  // hold up the leader's chunks past its replica timeout.
  const size_t workers = queues_.size() - kExtraQueues;
  const auto opcode = static_cast<net::Opcode>(r.frame.header.opcode);
  if (opcode == net::Opcode::kMoveStreamlet || opcode == net::Opcode::kReplicaJoin ||
      opcode == net::Opcode::kReplicaMove) {
    return workers;
  }
  if (opcode == net::Opcode::kReplicaAppend || opcode == net::Opcode::kReplicaTxn) {
    return workers + 1;
  }
  if (opcode == net::Opcode::kReplicaPublished) return workers + 2;
  return r.conn->id() % workers;
}

void Server::Enqueue(Request r) {
  const size_t index = QueueOf(r);
  queues_[index]->Push(std::move(r));
}

void Server::ClearWake(int eventfd) {
  uint64_t v;
  ssize_t ignored = ::read(eventfd, &v, sizeof(v));
  (void)ignored;
}

void Server::DispatchLoop() {
  epoll_event events[128];
  while (!stopping_.load(std::memory_order_acquire)) {
    int timeout = 100;
    int64_t next = waiters_.NextDeadline();
    if (next >= 0) timeout = static_cast<int>(std::clamp<int64_t>(next - MonotonicNowMs(), 0, 100));
    int n = ::epoll_wait(epoll_fd_, events, 128, timeout);
    uint64_t busy_start = MonotonicNowNs();
    for (int i = 0; i < n; ++i) {
      uint64_t tag = events[i].data.u64;
      if (tag == kListenerTag) {
        Accept();
        continue;
      }
      if (tag == kWakeTag) {
        ClearWake(wake_fd_);
        continue;
      }
      auto it = conns_.find(tag);
      if (it == conns_.end()) continue;
      std::shared_ptr<net::Connection> conn = it->second;
      const uint32_t ev = events[i].events;
      if (ev & EPOLLOUT) conn->OnWritable();
      if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) OnReadable(conn);
    }
    waiters_.ExpireDue(MonotonicNowMs());
    if (n > 0) metrics_.dispatcher_busy_ns.Add(MonotonicNowNs() - busy_start);
  }
}

void Server::Accept() {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        NS_LOG(kWarning) << "accept: "
                         << Status::FromErrno(StatusCode::kIoError, "", errno).message();
      }
      return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    const uint64_t id = next_conn_id_++;
    auto conn = std::make_shared<net::Connection>(fd, epoll_fd_, id, options_.max_frame_bytes,
                                                  options_.limits);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) continue;  // conn dtor closes fd
    conns_.emplace(id, std::move(conn));
    metrics_.connections_accepted.Add(1);
    open_connections_.fetch_add(1, std::memory_order_relaxed);
  }
}

void Server::OnReadable(const std::shared_ptr<net::Connection>& conn) {
  // Where the connection goes once this read is done: stays here (another broker's, or a new
  // one that sent no whole request yet), to ns-replica, or to its request worker. Every frame
  // of this read is queued to the thread that runs it (QueueOf) before the connection is handed
  // on, so each runs before any its new thread reads, in order.
  enum class Next { kUndecided, kStay, kReplica, kWorker };
  const size_t workers = static_cast<size_t>(options_.workers);
  Next next = peers_.contains(conn->id()) ? Next::kStay : Next::kUndecided;
  ReadConnection(conn, &conns_, [&](net::Frame& f) {
    Request req{conn, std::move(f)};
    const auto opcode = static_cast<net::Opcode>(req.frame.header.opcode);
    if (opcode == net::Opcode::kReplicaAppend || opcode == net::Opcode::kReplicaTxn) {
      next = Next::kReplica;  // a leader's connection for its copies
    } else if (next == Next::kUndecided) {
      // A request that runs on a request worker comes from a client (a broker's own requests
      // to another run on the admin, replica and views threads).
      next = QueueOf(req) < workers ? Next::kWorker : Next::kStay;
    }
    const bool keep_reading = conn->RequestStarted();
    Enqueue(std::move(req));
    return keep_reading && (next == Next::kStay || next == Next::kUndecided);
  });
  if (conn->closed()) {
    peers_.erase(conn->id());
    return;
  }
  switch (next) {
    case Next::kStay: peers_.insert(conn->id()); break;
    case Next::kReplica:
      peers_.erase(conn->id());
      metrics_.replica_connections_handed.Add(1);
      HandTo(replica_poller(), conn, &conns_);
      break;
    case Next::kWorker: HandTo(*pollers_[conn->id() % workers], conn, &conns_); break;
    case Next::kUndecided: break;
  }
}

void Server::CloseConnection(const std::shared_ptr<net::Connection>& conn, ConnectionTable* table) {
  conn->Close();
  push_->ConnectionClosed(conn->id());  // its push subscriptions end with it
  if (table->erase(conn->id()) > 0) {
    metrics_.connections_closed.Add(1);
    open_connections_.fetch_sub(1, std::memory_order_relaxed);
  }
}

bool Server::ReadConnection(const std::shared_ptr<net::Connection>& conn, ConnectionTable* table,
                            const std::function<bool(net::Frame&)>& on_frame) {
  static thread_local std::vector<uint8_t> buf(kReadChunk);
  std::vector<net::Frame> frames;
  size_t budget = kReadBudget;
  while (budget > 0 && !conn->closed()) {
    // The rest of a large body goes straight into its buffer; small frames and headers go
    // through the staging buffer, many per recv().
    auto [direct, room] = conn->decoder().DirectSpace();
    const bool use_direct = room >= kDirectRecvMin;
    ssize_t r = use_direct ? ::recv(conn->fd(), direct, room, 0)
                           : ::recv(conn->fd(), buf.data(), buf.size(), 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      CloseConnection(conn, table);
      return false;
    }
    if (r == 0) {
      // A frame cut short by a disconnect is dropped whole: nothing of it was applied.
      if (conn->decoder().mid_frame()) {
        NS_LOG(kDebug) << "connection " << conn->id() << " closed in the middle of a frame";
      }
      CloseConnection(conn, table);
      return false;
    }
    budget -= std::min(budget, static_cast<size_t>(r));
    frames.clear();
    std::optional<net::FrameError> err;
    if (use_direct) {
      conn->decoder().CommitDirect(static_cast<size_t>(r), &frames);
    } else {
      err = conn->decoder().Feed(buf.data(), static_cast<size_t>(r), &frames);
    }
    // Every frame read is taken; stopping only ends the reading (too much in flight, or the
    // connection changes hands).
    for (auto& f : frames) {
      if (!on_frame(f)) budget = 0;
    }
    if (err) {
      metrics_.protocol_errors.Add(1);
      NS_LOG(kWarning) << "connection " << conn->id() << ": " << err->status.ToString()
                       << "; closing it";
      if (err->header) {
        Bytes out;
        size_t start =
            net::BeginResponse(&out, err->header->opcode, err->header->request_id, err->status);
        net::FinishFrame(&out, start);
        conn->Send(std::move(out));
      }
      // Let the error response go out before the connection is torn down.
      ::shutdown(conn->fd(), SHUT_WR);
      CloseConnection(conn, table);
      return false;
    }
  }
  return true;
}

void Server::QueueLoop(int index) {
  WorkQueue& queue = *queues_[index];
  PaddedCounter& busy = metrics_.worker_busy_ns[index];
  std::deque<Request> batch;
  RequestRunner runner(&handler_);  // takes no Append (QueueOf): its AppendBatch stays empty
  while (queue.PopAll(&batch)) {
    const uint64_t start = MonotonicNowNs();
    runner.RunQueued(&batch);
    runner.EndBatch();
    busy.Add(MonotonicNowNs() - start);
  }
}

void Server::MaintenanceLoop() {
  int64_t last_flush = MonotonicNowMs(), last_maintain = MonotonicNowMs();
  while (!stopping_.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    int64_t now = MonotonicNowMs();
    if (now - last_flush >= options_.flush_interval_ms) {
      metrics_.async_flush_failures.Add(static_cast<uint64_t>(store_->FlushAsync()));
      last_flush = now;
    }
    if (now - last_maintain >= options_.maintenance_interval_ms) {
      store_->Maintain(WallNowMs());  // retention by age compares with chunk timestamps
      last_maintain = now;
    }
  }
  store_->FlushAsync();  // a clean shutdown leaves async streams fully on disk
}

MetricValues Server::CollectMetrics() {
  MetricValues v;
  auto add = [&v](std::string name, uint64_t value) { v.emplace_back(std::move(name), value); };
  add("nearstream_requests_total", metrics_.requests.Get());
  add("nearstream_request_errors_total", metrics_.request_errors.Get());
  add("nearstream_protocol_errors_total", metrics_.protocol_errors.Get());
  add("nearstream_connections_accepted_total", metrics_.connections_accepted.Get());
  add("nearstream_connections_closed_total", metrics_.connections_closed.Get());
  add("nearstream_connections_open", open_connections_.load(std::memory_order_relaxed));
  add("nearstream_append_requests_total", metrics_.append_requests.Get());
  add("nearstream_append_chunks_total", metrics_.append_chunks.Get());
  add("nearstream_append_records_total", metrics_.append_records.Get());
  add("nearstream_append_bytes_total", metrics_.append_bytes.Get());
  add("nearstream_append_rejected_total", metrics_.append_rejected.Get());
  add("nearstream_append_duplicates_total", metrics_.append_duplicates.Get());
  add("nearstream_replica_appends_total", metrics_.replica_appends.Get());
  add("nearstream_replica_writes_total", metrics_.replica_writes.Get());
  add("nearstream_replica_flights_total", metrics_.replica_flights.Get());
  add("nearstream_replica_flights_overlapped_total", metrics_.replica_flights_overlapped.Get());
  add("nearstream_replica_connections_handed_total", metrics_.replica_connections_handed.Get());
  add("nearstream_txn_append_requests_total", metrics_.txn_append_requests.Get());
  add("nearstream_txn_append_chunks_total", metrics_.txn_append_chunks.Get());
  add("nearstream_txn_append_records_total", metrics_.txn_append_records.Get());
  add("nearstream_txn_append_bytes_total", metrics_.txn_append_bytes.Get());
  add("nearstream_txn_append_sends_total", metrics_.txn_append_sends.Get());
  const storage::TxnGauges txn = store_->transaction_gauges();
  add("nearstream_txn_open", txn.open);
  add("nearstream_txn_prepared", txn.prepared);
  add("nearstream_txn_open_bytes", txn.open_bytes);
  add("nearstream_txn_prepared_bytes", txn.prepared_bytes);
  const storage::TxnTotals& totals = store_->transaction_totals();
  add("nearstream_txn_committed_total", totals.committed.load());
  add("nearstream_txn_aborted_total", totals.aborted.load());
  add("nearstream_txn_expired_total", totals.expired.load());
  add("nearstream_txn_files_awaiting_sync", totals.files_awaiting_sync.load());
  add("nearstream_txn_commit_inline_syncs_total", totals.inline_commit_syncs.load());
  add("nearstream_fetch_requests_total", metrics_.fetch_requests.Get());
  add("nearstream_fetch_chunks_total", metrics_.fetch_chunks.Get());
  add("nearstream_fetch_records_total", metrics_.fetch_records.Get());
  add("nearstream_fetch_bytes_total", metrics_.fetch_bytes.Get());
  add("nearstream_fetch_parked_total", metrics_.fetch_parked.Get());
  add("nearstream_fetch_follower_chunks_total", metrics_.fetch_follower_chunks.Get());
  add("nearstream_fetch_waiting", waiters_.size());
  add("nearstream_fetch_wakeups_total", waiters_.woken_total());
  add("nearstream_async_flush_failures_total", metrics_.async_flush_failures.Get());
  add("nearstream_streams", store_->List().size());
  add("nearstream_segment_pool_bytes", storage::MappingPool::Get().bytes());
  add("nearstream_stored_bytes", store_->total_bytes());
  add("nearstream_process_cpu_ns_total", ProcessCpuNanos());
  if (options_.cluster != nullptr) {
    const cluster::ZkCluster::Gauges g = options_.cluster->gauges();
    add("nearstream_cluster_controller", g.controller);
    add("nearstream_cluster_zookeeper_connected", g.connected);
    add("nearstream_cluster_brokers", g.brokers);
    add("nearstream_catch_up_copied_bytes_total", g.catch_up_copied_bytes);
    add("nearstream_catch_up_kept_bytes_total", g.catch_up_kept_bytes);
  }
  add("nearstream_thread_busy_ns_total{thread=\"dispatcher\"}", metrics_.dispatcher_busy_ns.Get());
  for (size_t i = 0; i < queues_.size(); ++i) {
    const size_t workers = queues_.size() - kExtraQueues;
    std::string label = i == workers       ? std::string("{thread=\"admin\"}")
                        : i == workers + 1 ? std::string("{thread=\"replica\"}")
                        : i == workers + 2 ? std::string("{thread=\"views\"}")
                                           : "{thread=\"worker-" + std::to_string(i) + "\"}";
    add("nearstream_thread_busy_ns_total" + label, metrics_.worker_busy_ns[i].Get());
    add("nearstream_queue_depth" + label, queues_[i]->depth());
  }
  push_->CollectMetrics(&v);
  CollectDamageMetrics(*store_, &v);
  return v;
}

}  // namespace nearstream::broker
