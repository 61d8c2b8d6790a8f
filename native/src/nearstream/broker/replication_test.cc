// Replication over real processes (docs/cluster.md, "Replication"): a ZooKeeper server, three
// nearstreamd with --zookeeper and a data directory each, and the CLI. Leaders are killed with
// SIGKILL and paused with SIGSTOP; what was acknowledged must be readable from the new leader,
// exactly once and in order, and a deposed leader must not acknowledge anything.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/common/clock.h"
#include "nearstream/net/client.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/storage/env.h"
#include "nearstream/testing/replicated_cluster.h"
#include "nearstream/testing/test_broker_process.h"

namespace nearstream::testing {
namespace {

constexpr uint32_t kStreamlets = 3;

using ReplicationTest = ReplicatedCluster;

TEST_F(ReplicationTest, AKilledLeadersStreamletsGoOnFromAnInSyncFollowerWithEveryRecord) {
  ProcessResult r = Cli(List(), {"create", "events", "--streamlets", std::to_string(kStreamlets),
                                 "--durability", "sync", "--replication", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement before = Placement(1, "events");
  ASSERT_EQ(before.replicas.size(), kStreamlets);
  for (uint32_t s = 0; s < kStreamlets; ++s) {
    const net::ReplicaSet& set = before.replicas[s];
    ASSERT_EQ(set.replicas.size(), 2u) << "streamlet " << s;
    EXPECT_NE(set.replicas[0], set.replicas[1]) << "streamlet " << s;
    EXPECT_EQ(set.replicas[0], before.owners[s]) << "the first replica leads";
    EXPECT_EQ(set.isr, set.replicas) << "streamlet " << s;
    EXPECT_EQ(set.leader_epoch, 0u);
  }

  // 900 records in 90 chunks of 10, round-robin: every chunk is copied to one follower.
  r = Cli(List(),
          {"produce", "events", "--round-robin", "--batch-records", "10", "--producer-id", "77"},
          Numbered(0, 900));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  uint64_t copied = 0;
  for (uint32_t id = 1; id <= 3; ++id) copied += Stat(id, "nearstream_replica_appends_total");
  EXPECT_EQ(copied, 90u);

  // The leader of streamlet 0 dies with everything in flight; its follower takes over once
  // ZooKeeper ends the dead broker's session.
  const uint32_t dead = before.owners[0];
  const uint32_t heir = before.replicas[0].replicas[1];
  Broker(dead).Kill();
  std::vector<uint32_t> alive;
  for (uint32_t id = 1; id <= 3; ++id) {
    if (id != dead) alive.push_back(id);
  }
  const net::StreamPlacement after = AwaitNewLeader(alive[0], "events", 0, dead);
  ASSERT_EQ(after.owners.size(), kStreamlets);
  EXPECT_EQ(after.owners[0], heir);
  EXPECT_EQ(after.replicas[0].leader_epoch, 1u);
  EXPECT_EQ(after.replicas[0].isr, std::vector<uint32_t>{heir});
  for (uint32_t s = 0; s < kStreamlets; ++s) EXPECT_NE(after.owners[s], dead) << "streamlet " << s;

  // Every acknowledged record, once, each streamlet in the order written.
  r = Cli(List(alive), {"consume", "events", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> got = Lines(r.out);
  std::vector<std::string> sent = Lines(Numbered(0, 900));
  std::vector<std::string> sorted = got;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> sorted_sent = sent;
  std::sort(sorted_sent.begin(), sorted_sent.end());
  EXPECT_EQ(sorted, sorted_sent);
  for (uint32_t s = 0; s < kStreamlets; ++s) {
    r = Cli(List(alive),
            {"consume", "events", "--streamlets", std::to_string(s), "--timeout-ms", "500"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    std::vector<std::string> expected;
    for (size_t i = 0; i < sent.size(); ++i) {
      if ((i / 10) % kStreamlets == s) expected.push_back(sent[i]);
    }
    EXPECT_EQ(Lines(r.out), expected) << "streamlet " << s;
  }

  // The same producer sending the same chunks again (a retry after the failover): the new
  // leader rebuilt the producer's sequences from its copy, so all of them are duplicates.
  r = Cli(List(alive),
          {"produce", "events", "--round-robin", "--batch-records", "10", "--producer-id", "77"},
          Numbered(0, 900));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  // And new records go on being written and replicated where a follower is left.
  r = Cli(List(alive), {"produce", "events", "--round-robin", "--batch-records", "10"},
          Numbered(900, 1200));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  r = Cli(List(alive), {"consume", "events", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  got = Lines(r.out);
  std::sort(got.begin(), got.end());
  sent = Lines(Numbered(0, 1200));
  std::sort(sent.begin(), sent.end());
  EXPECT_EQ(got, sent);

  // The dead broker comes back as a follower: it leads nothing, and serves nothing of the
  // streamlets it led.
  ASSERT_TRUE(Broker(dead).Restart().ok());
  const net::StreamPlacement back = Placement(dead, "events");
  for (uint32_t s = 0; s < kStreamlets; ++s) EXPECT_NE(back.owners[s], dead) << "streamlet " << s;
  r = Cli(Broker(dead).address(),
          {"consume", "events", "--streamlets", "0", "--timeout-ms", "300"});
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.err.find("NOT_OWNER"), std::string::npos) << r.err;
}

TEST_F(ReplicationTest, ProduceGoesOnThroughAFailoverWithoutLosingOrRepeatingARecord) {
  ProcessResult r = Cli(List(), {"create", "orders", "--streamlets", "1", "--durability", "async",
                                 "--replication", "3"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement before = Placement(1, "orders");
  ASSERT_EQ(before.owners.size(), 1u);
  const uint32_t dead = before.owners[0];
  std::vector<uint32_t> alive;
  for (uint32_t id = 1; id <= 3; ++id) {
    if (id != dead) alive.push_back(id);
  }
  // A producer that knows every broker writes 3000 records in chunks of 5 while the leader is
  // killed part way: it follows the new leader on its own.
  ProcessResult produced;
  std::thread producer([&] {
    produced = Cli(List(), {"produce", "orders", "--batch-records", "5"}, Numbered(0, 3000));
  });
  const int64_t deadline = MonotonicNowMs() + 20000;
  while (Stat(dead, "nearstream_append_chunks_total") < 100 && MonotonicNowMs() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Broker(dead).Kill();
  producer.join();
  ASSERT_EQ(produced.exit_code, 0) << Describe(produced);
  EXPECT_NE(produced.out.find("acknowledged 3000 records"), std::string::npos) << produced.out;
  const net::StreamPlacement after = AwaitNewLeader(alive[0], "orders", 0, dead);
  ASSERT_EQ(after.owners.size(), 1u);
  EXPECT_EQ(after.replicas[0].leader_epoch, 1u);
  // Alone in the in-sync set at first (the other follower may lack a chunk the dead leader sent
  // the new one last), then joined by the other follower once it has copied the streamlet.
  std::vector<uint32_t> survivors = before.replicas[0].replicas;
  survivors.erase(std::remove(survivors.begin(), survivors.end(), dead), survivors.end());
  AwaitIsr(alive[0], "orders", 0, survivors);
  r = Cli(List(alive), {"consume", "orders", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), Lines(Numbered(0, 3000)));  // in order, none lost, none twice
}

TEST_F(ReplicationTest, ALeaderWritesTheNextBatchWhileTheLastOnesRoundTripGoesOnInOrder) {
  // Two producers keeping 32 appends in flight each: a leader's worker finds new requests while
  // its last batch is on its way to the follower, and writes and sends them meanwhile.
  ProcessResult r = Cli(List(), {"create", "pipelined", "--streamlets", "2", "--durability",
                                 "async", "--replication", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  r = RunProcess({NEARSTREAM_PERF_PATH, "--broker", List(), "--stream", "pipelined", "--producers",
                  "2", "--chunk-size", "4K", "--record-size", "100", "--inflight", "32",
                  "--duration-s", "3", "--consumers", "2", "--verify"},
                 "", 120000);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::map<std::string, std::string> f = ResultFields(r.out);
  // Every chunk read back once, in each producer's order, checksums intact.
  EXPECT_EQ(f["verify"], "ok") << r.out;
  EXPECT_EQ(f["run_consumed"], f["produced"]) << r.out;
  uint64_t flights = 0, overlapped = 0, published = 0, copied = 0, copy_writes = 0;
  for (uint32_t id = 1; id <= 3; ++id) {
    flights += Stat(id, "nearstream_replica_flights_total");
    overlapped += Stat(id, "nearstream_replica_flights_overlapped_total");
    published += Stat(id, "nearstream_append_chunks_total");
    copied += Stat(id, "nearstream_replica_appends_total");
    copy_writes += Stat(id, "nearstream_replica_writes_total");
  }
  EXPECT_GT(flights, 0u);
  EXPECT_GT(overlapped, 0u) << "no batch was sent while the one before was on its way (" << flights
                            << " batches)";
  // Followers wrote the consecutive chunks of a batch to their files together.
  EXPECT_GT(copy_writes, 0u);
  EXPECT_LT(copy_writes, copied) << "followers wrote every chunk on its own";
  // Each acknowledged chunk is on its follower, once; none the leader cut off again.
  EXPECT_EQ(copied, published);
  const uint64_t records_per_chunk =
      (4096 - storage::kChunkHeaderSize) / (storage::kRecordLengthPrefix + 100);
  EXPECT_EQ(published * records_per_chunk, std::stoull(f["produced"])) << r.out;
}

TEST_F(ReplicationTest, AFollowerThatWasDownCopiesTheStreamletAgainAndRejoinsTheInSyncSet) {
  ProcessResult r = Cli(List(), {"create", "logs", "--streamlets", "1", "--durability", "sync",
                                 "--replication", "2", "--segment-bytes", "16K"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement before = Placement(1, "logs");
  ASSERT_EQ(before.owners.size(), 1u);
  const uint32_t leader = before.owners[0];
  const uint32_t follower = before.replicas[0].replicas[1];
  r = Cli(List(), {"produce", "logs", "--batch-records", "20"}, Numbered(0, 500));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);

  // The follower dies: the leader takes it out of the in-sync set at its next chunk and goes on
  // alone (many segments of 16 KiB, so the copy spans several files).
  Broker(follower).Kill();
  r = Cli(List({leader}), {"produce", "logs", "--batch-records", "20"}, Numbered(500, 1000));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  AwaitIsr(leader, "logs", 0, {leader});

  // Back, it copies the streamlet again (what it missed included) and is in sync once more.
  ASSERT_TRUE(Broker(follower).Restart().ok());
  AwaitIsr(leader, "logs", 0, {leader, follower});
  r = Cli(List({leader}), {"produce", "logs", "--batch-records", "20"}, Numbered(1000, 1100));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);

  // So it can lead with every record when the leader dies.
  Broker(leader).Kill();
  const net::StreamPlacement after = AwaitNewLeader(follower, "logs", 0, leader);
  ASSERT_EQ(after.owners.size(), 1u);
  EXPECT_EQ(after.owners[0], follower);
  r = Cli(List({follower}), {"consume", "logs", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), Lines(Numbered(0, 1100)));
}

TEST_F(ReplicationTest, APausedLeaderThatWasReplacedAcknowledgesNothing) {
  ProcessResult r = Cli(List(), {"create", "audit", "--streamlets", "1", "--durability", "sync",
                                 "--replication", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement before = Placement(1, "audit");
  ASSERT_EQ(before.owners.size(), 1u);
  const uint32_t old = before.owners[0];
  const uint32_t heir = before.replicas[0].replicas[1];
  r = Cli(List(), {"produce", "audit"}, Numbered(0, 50));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);

  // Paused past its ZooKeeper session: the controller makes the follower leader at epoch 1.
  paused_ = Broker(old).pid();
  ASSERT_EQ(kill(paused_, SIGSTOP), 0);
  uint32_t other = 1;
  while (other == old) ++other;
  const net::StreamPlacement after = AwaitNewLeader(other, "audit", 0, old);
  ASSERT_EQ(after.owners.size(), 1u);
  EXPECT_EQ(after.owners[0], heir);
  // The old leader wakes up still believing it leads; a client that only knows it appends at
  // once. Its follower (the new leader) refuses the copy, so nothing is acknowledged.
  ASSERT_EQ(kill(paused_, SIGCONT), 0);
  paused_ = -1;
  r = Cli(Broker(old).address(), {"produce", "audit"}, "from the deposed leader\n");
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.err.find("NOT_OWNER"), std::string::npos) << r.err;

  r = Cli(List({heir}), {"produce", "audit"}, Numbered(50, 60));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  r = Cli(List({heir, old}), {"consume", "audit", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Lines(r.out), Lines(Numbered(0, 60)));
}

TEST_F(ReplicationTest, AFollowerDropsTheSegmentsItsLeadersRetentionDropped) {
  // 4 KiB segments, 16 KiB retained: the leader keeps a handful of segment files, and so must
  // its follower, whose files no retention pass of its own sees.
  ProcessResult r =
      Cli(List(), {"create", "trimmed", "--streamlets", "1", "--durability", "async",
                   "--replication", "2", "--segment-bytes", "4096", "--retention-bytes", "16384"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement p = Placement(1, "trimmed");
  ASSERT_EQ(p.replicas.size(), 1u);
  const uint32_t leader = p.owners[0];
  const uint32_t follower = p.replicas[0].replicas[1];
  // Several produce runs: each is at least one chunk, and 600 records of ~20 bytes are ~12 KiB.
  for (int run = 0; run < 8; ++run) {
    r = Cli(List(), {"produce", "trimmed"}, Numbered(run * 600, run * 600 + 600));
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
  }
  std::vector<std::string> on_leader, on_follower;
  const int64_t deadline = MonotonicNowMs() + 20000;
  while (MonotonicNowMs() < deadline) {
    on_leader = SegmentFiles(leader, "trimmed", 0);
    on_follower = SegmentFiles(follower, "trimmed", 0);
    if (on_leader.size() < 10 && on_follower == on_leader) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_LT(on_leader.size(), 10u) << "the leader's retention kept everything";
  EXPECT_EQ(on_follower, on_leader) << "the follower kept what its leader dropped";
  // What is left is whole: after a failover the follower serves from the leader's head.
  Broker(leader).Kill();
  AwaitNewLeader(follower, "trimmed", 0, leader);
  r = Cli(Broker(follower).address(), {"consume", "trimmed", "--timeout-ms", "1000"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const std::vector<std::string> read = Lines(r.out);
  ASSERT_FALSE(read.empty());
  EXPECT_EQ(read.back(), "record 4799");
  EXPECT_LT(read.size(), 4800u) << "retention dropped nothing";
}

// A replicated stream's transactions are per streamlet (docs/protocol.md, "Transaction
// scopes"): the broker scope is refused with a message that says so, a scope past the streamlets
// is not found, and a streamlet scope's records are on every replica of the streamlet, byte for
// byte, once the leader answers; the other streamlet's replicas have none.
TEST_F(ReplicationTest, TransactionsOnAReplicatedStreamTakeAStreamletScope) {
  ProcessResult r = Cli(List(), {"create", "scoped", "--streamlets", "2", "--durability", "sync",
                                 "--replication", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement p = Placement(1, "scoped");
  const uint32_t leader = p.owners[0];
  AwaitIsr(leader, "scoped", 0, p.replicas[0].replicas);
  auto c = net::Client::Connect(Broker(leader).address());
  ASSERT_TRUE(c.ok()) << c.status().ToString();

  auto whole = c->TxnInit({"scoped", "w", 0, net::kBrokerScope});
  EXPECT_TRUE(whole.status().IsInvalidArgument()) << whole.status().ToString();
  EXPECT_NE(whole.status().message().find("streamlet scope"), std::string::npos)
      << whole.status().ToString();
  auto past = c->TxnInit({"scoped", "w", 0, 2});
  EXPECT_TRUE(past.status().IsStreamletNotFound()) << past.status().ToString();
  auto scoped = c->TxnInit({"scoped", "w", 0, 0});
  ASSERT_TRUE(scoped.ok()) << scoped.status().ToString();
  EXPECT_EQ(scoped->epoch, 1u);

  auto log_of = [&](uint32_t id, uint32_t streamlet) {
    return Broker(id).data_dir() + "/streams/scoped/" + std::to_string(streamlet) + "/txn.log";
  };
  std::vector<std::string> logs;
  for (uint32_t id : p.replicas[0].replicas) {
    ASSERT_TRUE(std::filesystem::exists(log_of(id, 0))) << log_of(id, 0);
    auto data = storage::Env::Default()->ReadFile(log_of(id, 0));
    ASSERT_TRUE(data.ok()) << data.status().ToString();
    logs.emplace_back(data->begin(), data->end());
  }
  EXPECT_FALSE(logs[0].empty());
  EXPECT_EQ(logs[0], logs[1]) << "the follower's copy of txn.log differs from the leader's";
  for (uint32_t id = 1; id <= 3; ++id) {
    EXPECT_FALSE(std::filesystem::exists(log_of(id, 1))) << log_of(id, 1);
  }
}

}  // namespace
}  // namespace nearstream::testing
