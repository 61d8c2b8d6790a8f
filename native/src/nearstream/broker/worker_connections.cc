// The request workers: each polls its clients' connections (connection id mod N; the dispatcher
// hands each over after its first request, server.h) in an epoll of its own, reads and frames
// their requests and runs them where it read them. Before, the dispatcher read every connection
// and queued each request to its worker, so a request woke two threads one after the other, the
// dispatcher and then the worker; on a small machine those wake-ups, not the work, are most of
// what a small request costs.
//
// Requests for other threads (moves and joins for the admin thread, replica writes for
// ns-replica, views for ns-view-apply; Server::QueueOf) are queued to them as before. A
// connection that carries a ReplicaAppend or ReplicaTxn after all is handed on to ns-replica,
// which polls it from then on (replica_connections.cc).
#include <sys/epoll.h>

#include "nearstream/broker/server.h"
#include "nearstream/common/clock.h"
#include "nearstream/common/log.h"

namespace nearstream::broker {

void Server::HandTo(Poller& to, const std::shared_ptr<net::Connection>& conn,
                    ConnectionTable* from) {
  {
    // Listed before it is polled there: an event for it finds it listed (TakeHanded).
    MutexLock lock(&to.mu);
    to.handed.push_back(conn);
  }
  if (!conn->MoveTo(to.epoll_fd)) {
    NS_LOG(kWarning) << "connection " << conn->id() << " could not be handed on; closing it";
    CloseConnection(conn, from);  // `to`'s thread lets go of it, closed
    return;
  }
  from->erase(conn->id());
}

void Server::TakeHanded(Poller& poller) {
  MutexLock lock(&poller.mu);
  for (auto& conn : poller.handed) {
    if (!conn->closed()) poller.conns.emplace(conn->id(), std::move(conn));
  }
  poller.handed.clear();
}

void Server::ReadRequests(Poller& poller, int index, const std::shared_ptr<net::Connection>& conn,
                          RequestRunner* runner) {
  bool replica = false;
  ReadConnection(conn, &poller.conns, [&](net::Frame& f) {
    const auto opcode = static_cast<net::Opcode>(f.header.opcode);
    // A leader's connection for its followers' copies: read on the ns-replica thread from now
    // on. This read's frames from it on are queued to that thread (or, of other opcodes, to
    // this worker's queue), so they run before any it reads itself, in order.
    replica =
        replica || opcode == net::Opcode::kReplicaAppend || opcode == net::Opcode::kReplicaTxn;
    const bool keep_reading = conn->RequestStarted();
    Request req{conn, std::move(f)};
    if (!replica && QueueOf(req) == static_cast<size_t>(index)) {
      runner->Run(req);
    } else {
      Enqueue(std::move(req));
    }
    return keep_reading && !replica;
  });
  if (replica && !conn->closed()) {
    metrics_.replica_connections_handed.Add(1);
    HandTo(replica_poller(), conn, &poller.conns);
  }
}

void Server::WorkerLoop(int index) {
  WorkQueue& queue = *queues_[index];
  Poller& poller = *pollers_[index];
  PaddedCounter& busy = metrics_.worker_busy_ns[index];
  std::deque<Request> batch;
  RequestRunner runner(&handler_);
  AppendBatch& appends = runner.appends();  // appends to replicated streams (append_batch.h)
  epoll_event events[64];
  int ready = 0;
  while (true) {
    const uint64_t start = MonotonicNowNs();
    // The connections handed over first: an event below may be one of theirs.
    TakeHanded(poller);
    if (queue.TryPopAll(&batch)) runner.RunQueued(&batch);
    ServeEvents(poller, events, ready, [&](const std::shared_ptr<net::Connection>& conn) {
      ReadRequests(poller, index, conn, &runner);
    });
    ready = 0;
    // A follower's chunks of the batch go to its files a run at a time, answered together.
    runner.EndBatch();
    // One round trip to the followers for every replicated chunk of the batch, while the next
    // batch is read and written.
    handler_.SendAppends(&appends);
    handler_.SettleAppends(&appends, 1);
    busy.Add(MonotonicNowNs() - start);
    if (appends.in_flight()) {
      // Requests that came meanwhile are taken while the last flight is on its way; with none,
      // its chunks are answered before the thread waits.
      ready = ::epoll_wait(poller.epoll_fd, events, 64, 0);
      if (ready < 0) ready = 0;
      if (ready == 0 && queue.depth() == 0) handler_.SettleAppends(&appends, 0);
      continue;
    }
    if (queue.stopped()) break;
    if (!queue.PrepareToSleep()) continue;  // queued meanwhile
    ready = ::epoll_wait(poller.epoll_fd, events, 64, -1);
    queue.Awake();
    if (ready < 0) ready = 0;  // EINTR
  }
}

}  // namespace nearstream::broker
