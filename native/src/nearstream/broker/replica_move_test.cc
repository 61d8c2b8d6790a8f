// Moving replicas of replicated streamlets over real processes (docs/protocol.md, "Moving a
// replica"; docs/cluster.md, "Moving and draining"): ZooKeeper, three nearstreamd and the CLI's
// `move` and `drain`. After every move the replicas ZooKeeper names hold every acknowledged
// record (checked by killing the leader and reading from its heir), the broker that gave its
// replica up holds no file of it, and a producer writing through the move loses and repeats
// nothing.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "nearstream/net/client.h"
#include "nearstream/testing/replicated_cluster.h"

namespace nearstream::testing {
namespace {

using ReplicaMoveTest = ReplicatedCluster;

bool Contains(const std::vector<uint32_t>& ids, uint32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

TEST_F(ReplicaMoveTest, ADrainMovesEveryReplicaOfTheBrokerAwayAndKeepsEveryRecord) {
  ProcessResult r = Cli(List(), {"create", "orders", "--streamlets", "3", "--durability", "sync",
                                 "--replication", "2", "--segment-bytes", "16K"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  r = Cli(List(), {"produce", "orders", "--round-robin", "--batch-records", "10"},
          Numbered(0, 900));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  // Three streamlets over three brokers, two replicas each: broker 2 leads one and follows one.
  const net::StreamPlacement before = Placement(1, "orders");
  ASSERT_EQ(before.replicas.size(), 3u);
  ASSERT_GT(StreamFiles(2, "orders", 3), 0u);

  r = Cli(List(), {"drain", "--broker-id", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("drained broker 2: 2 streamlets moved, 0 failed"), std::string::npos)
      << r.out;
  const net::StreamPlacement after = AwaitPlacement(
      1, "orders",
      [](const net::StreamPlacement& p) {
        for (const net::ReplicaSet& set : p.replicas) {
          if (Contains(set.replicas, 2)) return false;
        }
        return true;
      },
      "no replica on broker 2");
  for (uint32_t s = 0; s < 3; ++s) {
    EXPECT_EQ(after.replicas[s].replicas.size(), 2u) << "streamlet " << s;
    EXPECT_NE(after.owners[s], 2u) << "streamlet " << s;
    AwaitIsr(1, "orders", s, after.replicas[s].replicas);
  }
  AwaitNoStreamFiles(2, "orders", 3);

  // Broker 2 can go: every record is on brokers 1 and 3, and producing goes on.
  Broker(2).Kill();
  r = Cli(List({1, 3}), {"produce", "orders", "--round-robin", "--batch-records", "10"},
          Numbered(900, 1200));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  r = Cli(List({1, 3}), {"consume", "orders", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Sorted(Lines(r.out)), Sorted(Lines(Numbered(0, 1200))));

  // The copies the drain made are whole: broker 1 dies, broker 3 leads everything with every
  // record.
  for (uint32_t s = 0; s < 3; ++s) AwaitIsr(3, "orders", s, {1, 3});
  Broker(1).Kill();
  for (uint32_t s = 0; s < 3; ++s) {
    if (after.owners[s] == 1) AwaitNewLeader(3, "orders", s, 1);
  }
  r = Cli(List({3}), {"consume", "orders", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Sorted(Lines(r.out)), Sorted(Lines(Numbered(0, 1200))));
}

TEST_F(ReplicaMoveTest, MovingALeaderToItsFollowerWhileAProducerWritesLosesAndRepeatsNothing) {
  ProcessResult r = Cli(List(), {"create", "ticks", "--streamlets", "1", "--durability", "sync",
                                 "--replication", "2", "--segment-bytes", "16K"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement before = Placement(1, "ticks");
  const uint32_t leader = before.owners[0];
  const uint32_t follower = before.replicas[0].replicas[1];

  // The producer retries what the sealed leader refuses (STREAMLET_MOVING) and then what the
  // old leader refuses (NOT_OWNER) on the new one; its sequences make a retry of a stored chunk
  // a duplicate.
  ProcessResult produced;
  std::thread producer([&] {
    produced = Cli(List(), {"produce", "ticks", "--batch-records", "5", "--producer-id", "31"},
                   Numbered(0, 20000));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  r = Cli(List(), {"move", "ticks", "0", "--to", std::to_string(follower)});
  producer.join();
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  ASSERT_EQ(produced.exit_code, 0) << Describe(produced);
  // The producer wrote through the move: chunks reached both leaders.
  EXPECT_GT(Stat(leader, "nearstream_append_chunks_total"), 0u);
  EXPECT_GT(Stat(follower, "nearstream_append_chunks_total"), 0u);

  // A swap: the follower leads at the next epoch, the old leader follows and, after copying the
  // streamlet again, is back in the in-sync set.
  const net::StreamPlacement after = Placement(follower, "ticks");
  EXPECT_EQ(after.owners[0], follower);
  EXPECT_EQ(after.replicas[0].leader_epoch, before.replicas[0].leader_epoch + 1);
  EXPECT_TRUE(Contains(after.replicas[0].replicas, leader));
  AwaitIsr(follower, "ticks", 0, {leader, follower});
  r = Cli(List(), {"consume", "ticks", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), Lines(Numbered(0, 20000)));

  // And back: the old leader's new copy is whole, so it can lead again.
  r = Cli(List(), {"move", "ticks", "0", "--to", std::to_string(leader)});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  r = Cli(List(), {"consume", "ticks", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), Lines(Numbered(0, 20000)));
}

TEST_F(ReplicaMoveTest, AFollowersReplicaMovesToABrokerThatHeldNone) {
  ProcessResult r = Cli(List(), {"create", "audit", "--streamlets", "1", "--durability", "sync",
                                 "--replication", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement before = Placement(1, "audit");
  const uint32_t leader = before.owners[0];
  const uint32_t follower = before.replicas[0].replicas[1];
  uint32_t other = 1;
  while (other == leader || other == follower) ++other;
  r = Cli(List(), {"produce", "audit", "--batch-records", "10"}, Numbered(0, 300));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);

  // Refused, and nothing changes: a target that holds a replica already, a broker that holds
  // none, a broker taking its own place.
  for (const auto& [to, of, why] :
       {std::tuple<uint32_t, uint32_t, std::string>{follower, leader, "holds a replica"},
        {leader, other, "holds no replica"},
        {other, other, "its own place"}}) {
    r = Cli(List(),
            {"move", "audit", "0", "--to", std::to_string(to), "--replica-of", std::to_string(of)});
    EXPECT_NE(r.exit_code, 0) << Describe(r);
    EXPECT_NE(r.err.find("INVALID_ARGUMENT"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  }
  EXPECT_EQ(Placement(1, "audit").replicas[0].replicas, before.replicas[0].replicas);

  r = Cli(List(), {"move", "audit", "0", "--to", std::to_string(other), "--replica-of",
                   std::to_string(follower)});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement after = AwaitPlacement(
      leader, "audit",
      [&](const net::StreamPlacement& p) { return !Contains(p.replicas[0].replicas, follower); },
      "broker " + std::to_string(follower) + " out of the replicas");
  EXPECT_EQ(after.owners[0], leader);
  EXPECT_EQ(after.replicas[0].leader_epoch, before.replicas[0].leader_epoch);
  AwaitIsr(leader, "audit", 0, {leader, other});
  AwaitNoStreamFiles(follower, "audit", 1);

  // Chunks written now reach the new follower, which holds every record when the leader dies.
  r = Cli(List(), {"produce", "audit", "--batch-records", "10"}, Numbered(300, 400));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Broker(leader).Kill();
  AwaitNewLeader(other, "audit", 0, leader);
  r = Cli(List({other}), {"consume", "audit", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), Lines(Numbered(0, 400)));
}

}  // namespace
}  // namespace nearstream::testing
