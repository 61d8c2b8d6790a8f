// Moving replicas of replicated streamlets over real processes (docs/protocol.md, "Moving a
// replica"; docs/cluster.md, "Moving and draining"): ZooKeeper, three nearstreamd and the CLI's
// `move` and `drain`. After every move the replicas ZooKeeper names hold every acknowledged
// record (checked by killing the leader and reading from its heir), the broker that gave its
// replica up holds no file of it, and a producer writing through the move loses and repeats
// nothing.
#include <gtest/gtest.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/cluster/placement.h"
#include "nearstream/net/client.h"
#include "nearstream/testing/replicated_cluster.h"

namespace nearstream::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class ReplicaMoveTest : public ReplicatedCluster {
 protected:
  // Rewrites stream `name`'s node in ZooKeeper as `change` says, with the compare-and-set a
  // broker's change makes.
  void EditStreamNode(const std::string& name,
                      const std::function<void(cluster::StreamRecord&)>& change) {
    zhandle_t* zh = zookeeper_init(("127.0.0.1:" + std::to_string(zookeeper_->port())).c_str(),
                                   nullptr, 10000, nullptr, nullptr, 0);
    ASSERT_NE(zh, nullptr);
    const int64_t deadline = MonotonicNowMs() + 10000;
    while (zoo_state(zh) != ZOO_CONNECTED_STATE && MonotonicNowMs() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const std::string path = "/nearstream/streams/" + name;
    std::string data(1 << 20, '\0');
    int len = static_cast<int>(data.size());
    ::Stat node{};
    const int got = zoo_get(zh, path.c_str(), 0, data.data(), &len, &node);
    Result<cluster::StreamRecord> record =
        got == ZOK ? cluster::ParseStreamRecord(data.substr(0, len), node.version)
                   : Status::Internal("zoo_get " + path + ": " + zerror(got));
    if (record.ok()) {
      change(*record);
      const std::string text = cluster::FormatStreamRecord(*record);
      const int set =
          zoo_set(zh, path.c_str(), text.data(), static_cast<int>(text.size()), node.version);
      if (set != ZOK) record = Status::Internal("zoo_set " + path + ": " + zerror(set));
    }
    zookeeper_close(zh);
    ASSERT_TRUE(record.ok()) << record.status().ToString();
  }

  // Broker `copy`'s files of streamlet 0 of `stream` are broker `leader`'s, byte for byte.
  void ExpectSameCopy(uint32_t leader, uint32_t copy, const std::string& stream) {
    const std::vector<std::string> files = SegmentFiles(leader, stream, 0);
    for (const std::string& file : SegmentFiles(copy, stream, 0)) {
      EXPECT_TRUE(std::binary_search(files.begin(), files.end(), file))
          << "broker " << copy << " holds " << file << ", which the leader, broker " << leader
          << ", does not";
    }
    const std::string dir = "/streams/" + stream + "/0/";
    for (const std::string& file : files) {
      const std::string mine = ReadAll(std::string(Broker(leader).data_dir()).append(dir + file));
      const std::string theirs = ReadAll(std::string(Broker(copy).data_dir()).append(dir + file));
      EXPECT_TRUE(mine == theirs) << file << " holds " << mine.size()
                                  << " bytes on the leader, broker " << leader << ", and "
                                  << theirs.size() << " different ones on broker " << copy;
    }
  }
};

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

// A follower's replica moved back and forth while a producer writes: each move removes a
// follower the leader may still send a chunk to before its watch tells it. That follower's
// refusal must not make the leader take back a chunk the other follower already holds (the
// leader would write the producer's retry elsewhere, and the follower's copy would hold the
// chunk twice once it leads). Afterwards the follower's files are the leader's, byte for byte.
TEST_F(ReplicaMoveTest, MovingAFollowersReplicaUnderAppendsLeavesItsCopyEqualToTheLeaders) {
  ProcessResult r = Cli(List(), {"create", "flow", "--streamlets", "1", "--durability", "sync",
                                 "--replication", "2", "--segment-bytes", "16K"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement before = Placement(1, "flow");
  const uint32_t leader = before.owners[0];
  uint32_t follower = before.replicas[0].replicas[1];
  uint32_t spare = 1;
  while (spare == leader || spare == follower) ++spare;

  // Three producers: more chunks in flight when a move removes a follower.
  constexpr int kProducers = 3;
  constexpr int kEach = 10000;
  std::atomic<int> running{kProducers};
  std::vector<ProcessResult> produced(kProducers);
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      produced[p] =
          Cli(List(),
              {"produce", "flow", "--batch-records", "5", "--producer-id", std::to_string(41 + p)},
              Numbered(p * kEach, (p + 1) * kEach));
      --running;
    });
  }
  int moves = 0;
  while (running > 0 && moves < 12) {
    r = Cli(List(), {"move", "flow", "0", "--to", std::to_string(spare), "--replica-of",
                     std::to_string(follower)});
    if (r.exit_code != 0) break;
    std::swap(follower, spare);
    ++moves;
    AwaitIsr(leader, "flow", 0, {leader, follower});
  }
  for (std::thread& t : producers) t.join();
  ASSERT_EQ(r.exit_code, 0) << "move " << moves + 1 << ": " << Describe(r);
  for (const ProcessResult& p : produced) ASSERT_EQ(p.exit_code, 0) << Describe(p);
  EXPECT_GE(moves, 2);

  ExpectSameCopy(leader, follower, "flow");
  // And as the follower serves it once it leads: every record once.
  Broker(leader).Kill();
  AwaitNewLeader(follower, "flow", 0, leader);
  r = Cli(List({follower}), {"consume", "flow", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Sorted(Lines(r.out)), Sorted(Lines(Numbered(0, kProducers * kEach))));
}

// The same moment, made certain: the leader, paused, cannot hear that a move took its
// follower's place, while that follower already gave its copy up. Resumed, it sends the next
// chunk to both its followers as it knows them: the new one takes it, the old one refuses it.
// ZooKeeper says the refusal does not matter (the old follower is out of the in-sync set), so
// the chunk is acknowledged once and stays where it is on both remaining replicas.
TEST_F(ReplicaMoveTest, ARefusalFromAFollowerAMoveRemovedTakesNoChunkBack) {
  ProcessResult r = Cli(List(), {"create", "gone", "--streamlets", "1", "--durability", "async",
                                 "--replication", "2", "--segment-bytes", "16K"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement before = Placement(1, "gone");
  const uint32_t leader = before.owners[0];
  const uint32_t old_follower = before.replicas[0].replicas[1];
  uint32_t target = 1;
  while (target == leader || target == old_follower) ++target;
  r = Cli(List(), {"produce", "gone", "--batch-records", "10"}, Numbered(0, 100));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);

  // A move's first steps: the target joins the replicas and, caught up, the in-sync set.
  EditStreamNode("gone", [&](cluster::StreamRecord& record) {
    record.replicas[0].replicas.push_back(target);
  });
  AwaitIsr(leader, "gone", 0, {leader, old_follower, target});

  // Its last step while the leader is paused: the old follower leaves and removes its copy.
  paused_ = Broker(leader).pid();
  kill(paused_, SIGSTOP);
  EditStreamNode("gone", [&](cluster::StreamRecord& record) {
    for (std::vector<uint32_t>* ids : {&record.replicas[0].replicas, &record.replicas[0].isr}) {
      ids->erase(std::remove(ids->begin(), ids->end(), old_follower), ids->end());
    }
  });
  AwaitNoStreamFiles(old_follower, "gone", 1);
  ProcessResult produced;
  std::thread producer([&] {
    // Bootstrapped from the live brokers: their placement routes it to the paused leader.
    produced =
        Cli(List({target, old_follower}),
            {"produce", "gone", "--batch-records", "10", "--producer-id", "7"}, Numbered(100, 200));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(paused_, SIGCONT);
  paused_ = -1;
  producer.join();
  ASSERT_EQ(produced.exit_code, 0) << Describe(produced);

  AwaitIsr(leader, "gone", 0, {leader, target});
  ExpectSameCopy(leader, target, "gone");
  Broker(leader).Kill();
  AwaitNewLeader(target, "gone", 0, leader);
  r = Cli(List({target}), {"consume", "gone", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), Lines(Numbered(0, 200)));
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
