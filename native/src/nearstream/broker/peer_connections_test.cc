// Another broker's connection is never read by a request worker (server.h): a leader's request
// worker waits for its followers' answers, and a follower's request worker may itself be waiting
// for a third broker. If that follower's worker had to read the first ReplicaAppend of a new
// connection, the leader would wait for it until the follower's own wait ended (the replica
// timeout, 10 s), though the follower's ns-replica thread, which waits for nobody, could answer
// at once. Real processes: ZooKeeper and three brokers with one request worker each.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "nearstream/common/clock.h"
#include "nearstream/testing/replicated_cluster.h"

namespace nearstream::testing {
namespace {

class PeerConnectionsTest : public ReplicatedCluster {
 protected:
  PeerConnectionsTest() { extra_broker_args_ = {"--workers", "1"}; }
};

TEST_F(PeerConnectionsTest, AFollowerWhoseWorkerWaitsForAnotherBrokerStillTakesANewLeadersChunks) {
  ProcessResult r = Cli(List(), {"create", "ring", "--streamlets", "3", "--durability", "async",
                                 "--replication", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement p = Placement(1, "ring");
  ASSERT_EQ(p.owners.size(), 3u);
  // Streamlet `waiting`: led by broker b, copied to broker c. Streamlet `fresh`: led by broker
  // a (not c), copied to b.
  uint32_t waiting = 3, fresh = 3;
  for (uint32_t s = 0; s < 3 && fresh == 3; ++s) {
    for (uint32_t t = 0; t < 3; ++t) {
      if (t != s && p.replicas[t].replicas[1] == p.owners[s] &&
          p.owners[t] != p.replicas[s].replicas[1]) {
        waiting = s;
        fresh = t;
        break;
      }
    }
  }
  ASSERT_LT(waiting, 3u) << "no placement of two streamlets in a chain";
  const uint32_t b = p.owners[waiting];
  const uint32_t c = p.replicas[waiting].replicas[1];
  const uint32_t a = p.owners[fresh];

  // Broker c stops: b's only request worker waits for c's answer to its first chunk.
  paused_ = Broker(c).pid();
  ASSERT_EQ(kill(paused_, SIGSTOP), 0);
  Status waited;
  std::thread blocked([&] { waited = AppendAt(b, "ring", waiting); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  // a's first chunk to b opens a's connection to b. b's ns-replica thread reads and answers it
  // while b's worker still waits.
  const int64_t start = MonotonicNowMs();
  Status appended = AppendAt(a, "ring", fresh);
  const int64_t took = MonotonicNowMs() - start;
  EXPECT_TRUE(appended.ok()) << appended.ToString();
  EXPECT_LT(took, 1500) << "broker " << a << "'s chunk waited for broker " << b
                        << "'s request worker";

  ASSERT_EQ(kill(paused_, SIGCONT), 0);
  paused_ = -1;
  blocked.join();
  // b's chunk is acknowledged too: by c once it runs again, or without c, out of the in-sync set.
  EXPECT_TRUE(waited.ok()) << waited.ToString();
}

}  // namespace
}  // namespace nearstream::testing
