// The ns-replica thread: a follower's side of replication. A leader sends each request worker's
// chunks over a connection of its own (cluster/replication.cc); once such a connection has
// carried a ReplicaAppend or ReplicaTxn (its first request: the dispatcher reads that one), it is
// handed over and this thread polls it, reads its frames and executes them where it read them.
// Otherwise every chunk waited for two wake-ups on the follower, the reader's and then this
// thread's, inside the leader's acknowledgement; reading here took replication 2 to 1.4-1.7x the
// records at 1 KiB chunks with one request in flight on a 2-core machine
// (docs/results/replication/replica-thread-reads). Requests of other opcodes on a handed
// connection are queued to their thread.
#include <sys/epoll.h>
#include <unistd.h>

#include "nearstream/broker/request_runner.h"
#include "nearstream/broker/server.h"
#include "nearstream/common/clock.h"
#include "nearstream/common/log.h"

namespace nearstream::broker {

void Server::ReplicaLoop(int index) {
  WorkQueue& queue = *queues_[index];
  Poller& poller = replica_poller();
  PaddedCounter& busy = metrics_.worker_busy_ns[index];
  std::deque<Request> batch;
  RequestRunner runner(&handler_);  // takes no Append: its AppendBatch stays empty
  epoll_event events[64];
  int ready = 0;
  while (true) {
    uint64_t start = MonotonicNowNs();
    // First the connections handed over, then the queue: a handed connection's frames that the
    // thread which read them queued were queued before it was listed, so they run before any
    // read here from it below.
    TakeHanded(poller);
    if (queue.TryPopAll(&batch)) runner.RunQueued(&batch);
    ServeEvents(poller, events, ready, [&](const std::shared_ptr<net::Connection>& conn) {
      ReadConnection(conn, &poller.conns, [&](net::Frame& f) {
        const bool keep_reading = conn->RequestStarted();
        Request req{conn, std::move(f)};
        const auto opcode = static_cast<net::Opcode>(req.frame.header.opcode);
        if (opcode == net::Opcode::kReplicaAppend || opcode == net::Opcode::kReplicaTxn) {
          runner.Run(req);
        } else {
          Enqueue(std::move(req));
        }
        return keep_reading;
      });
    });
    // The chunks of this round go to their files a run at a time, answered together.
    runner.EndBatch();
    busy.Add(MonotonicNowNs() - start);
    if (queue.stopped()) break;
    ready = 0;
    if (!queue.PrepareToSleep()) continue;  // queued meanwhile
    ready = ::epoll_wait(poller.epoll_fd, events, 64, -1);
    queue.Awake();
    if (ready < 0) ready = 0;  // EINTR
  }
}

}  // namespace nearstream::broker
