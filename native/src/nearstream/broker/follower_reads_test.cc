// Follower reads over real processes (docs/cluster.md, "Follower reads"): ZooKeeper and three
// nearstreamd; a Fetch marked as a replica read is answered by an in-sync follower from its
// copy in memory, with exactly the chunks at the positions its leader's readers get.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "nearstream/common/byte_io.h"
#include "nearstream/common/clock.h"
#include "nearstream/net/client.h"
#include "nearstream/push/shm_region.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/testing/push_test_consumer.h"
#include "nearstream/testing/replicated_cluster.h"

namespace nearstream::testing {
namespace {

constexpr uint32_t kStreamlets = 2;

// One chunk and where it is.
struct Block {
  storage::Position at;
  Bytes data;
  bool operator==(const Block& o) const { return at == o.at && data == o.data; }
};

// Every chunk broker `client` answers for `streamlet` from the earliest position (a block
// split into its chunks: how many a read returns at once depends on what was published), and
// the status of the first read that failed (OK when none did).
Status ReadAll(net::Client& client, const std::string& stream, uint32_t streamlet,
               std::vector<Block>* out) {
  storage::Position from;
  for (int i = 0; i < 10000; ++i) {
    net::FetchRequest request;
    request.stream = stream;
    request.entries.push_back({streamlet, from, 64 * 1024});
    Result<net::FetchReply> reply = client.Fetch(request);
    if (!reply.ok()) return reply.status();
    const net::FetchResult& r = reply->response.results.at(0);
    if (r.status != 0) return Status(static_cast<StatusCode>(r.status), r.message);
    for (const net::FetchBlock& b : r.blocks) {
      for (uint32_t off = 0; off < b.size;) {
        const uint32_t size = storage::kChunkHeaderSize + LoadLe32(b.data + off + 8);
        out->push_back({storage::Position{b.at.group, b.at.segment, b.at.offset + off},
                        Bytes(b.data + off, b.data + off + size)});
        off += size;
      }
    }
    if (r.blocks.empty()) return Status::Ok();
    from = r.next;
  }
  return Status::Internal("the read did not end");
}

class FollowerReadsTest : public ReplicatedCluster {
 protected:
  FollowerReadsTest() { extra_broker_args_ = {"--follower-reads"}; }

  Result<net::Client> ReplicaReader(uint32_t id) {
    ASSIGN_OR_RETURN(net::Client client, net::Client::Connect(Broker(id).address()));
    client.set_replica_reads(true);
    return client;
  }

  // Waits until follower `id` answers `streamlet` with what its leader does (views reach it
  // within milliseconds), and checks that it never answered more than the leader holds.
  void ExpectFollowerReadsLeader(uint32_t id, uint32_t leader, uint32_t streamlet) {
    auto from_leader = net::Client::Connect(Broker(leader).address());
    ASSERT_TRUE(from_leader.ok()) << from_leader.status().ToString();
    std::vector<Block> want;
    Status read_leader = ReadAll(*from_leader, "reads", streamlet, &want);
    ASSERT_TRUE(read_leader.ok()) << read_leader.ToString();
    ASSERT_FALSE(want.empty());
    auto reader = ReplicaReader(id);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    std::vector<Block> got;
    Status read;
    const int64_t deadline = MonotonicNowMs() + 20000;
    while (MonotonicNowMs() < deadline) {
      got.clear();
      read = ReadAll(*reader, "reads", streamlet, &got);
      if (read.ok()) {
        ASSERT_LE(got.size(), want.size()) << "broker " << id << " served chunks its leader lacks";
        ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin()))
            << "broker " << id << " served other chunks than its leader";
        if (got.size() == want.size()) {
          EXPECT_GT(Stat(id, "nearstream_fetch_follower_chunks_total"), 0u);
          return;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "broker " << id << " served " << got.size() << " of " << want.size()
           << " chunks of streamlet " << streamlet << " (last read: " << read.ToString() << ")";
  }
};

TEST_F(FollowerReadsTest, AnInSyncFollowerServesWhatItsLeaderPublishedAndParkedReadsWakeUp) {
  ProcessResult r = Cli(
      List(), {"create", "reads", "--streamlets", std::to_string(kStreamlets), "--durability",
               "async", "--replication", "3", "--active-groups", "2", "--segment-bytes", "65536"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  r = Cli(List(), {"produce", "reads", "--round-robin", "--batch-records", "10"},
          Numbered(0, 3000));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement p = Placement(1, "reads");
  ASSERT_EQ(p.owners.size(), kStreamlets);
  for (uint32_t s = 0; s < kStreamlets; ++s) {
    for (uint32_t f : p.replicas[s].replicas) {
      if (f == p.owners[s]) continue;
      ASSERT_NO_FATAL_FAILURE(ExpectFollowerReadsLeader(f, p.owners[s], s));
      // Without the flag a follower still names the leader.
      auto plain = net::Client::Connect(Broker(f).address());
      ASSERT_TRUE(plain.ok());
      std::vector<Block> none;
      Status refused = ReadAll(*plain, "reads", s, &none);
      EXPECT_TRUE(refused.IsNotOwner()) << refused.ToString();
    }
  }

  // A read parked at a follower's tail is answered by the view that follows an append.
  const uint32_t leader = p.owners[0];
  const uint32_t follower =
      p.replicas[0].replicas[1] != leader ? p.replicas[0].replicas[1] : p.replicas[0].replicas[0];
  auto reader = ReplicaReader(follower);
  ASSERT_TRUE(reader.ok());
  std::vector<Block> seen;
  ASSERT_TRUE(ReadAll(*reader, "reads", 0, &seen).ok());
  net::FetchRequest parked;
  parked.stream = "reads";
  parked.max_wait_ms = 20000;
  parked.entries.push_back({0, storage::Position{}, 1 << 20});
  {
    // Where the follower's reader stands: after its last chunk.
    net::FetchRequest at_end = parked;
    at_end.max_wait_ms = 0;
    at_end.entries[0].position = seen.back().at;
    auto end = reader->Fetch(at_end);
    ASSERT_TRUE(end.ok());
    parked.entries[0].position = end->response.results.at(0).next;
  }
  std::thread produce([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    (void)Cli(Broker(leader).address(),
              {"produce", "reads", "--streamlet", "0", "--batch-records", "10"},
              Numbered(3000, 3010));
  });
  const int64_t start = MonotonicNowMs();
  auto woken = reader->Fetch(parked);
  produce.join();
  ASSERT_TRUE(woken.ok()) << woken.status().ToString();
  ASSERT_EQ(woken->response.results.at(0).status, 0) << woken->response.results.at(0).message;
  EXPECT_EQ(woken->response.results.at(0).blocks.size(), 1u);
  EXPECT_LT(MonotonicNowMs() - start, 15000) << "the parked read waited out its time";
}

TEST_F(FollowerReadsTest, AFollowerServesReadsAgainOnceItCaughtUpAfterARestart) {
  ProcessResult r = Cli(List(), {"create", "reads", "--streamlets", std::to_string(kStreamlets),
                                 "--durability", "sync", "--replication", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  r = Cli(List(), {"produce", "reads", "--round-robin", "--batch-records", "10"}, Numbered(0, 400));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement p = Placement(1, "reads");
  const uint32_t leader = p.owners[0];
  const uint32_t follower = p.replicas[0].replicas[1];
  ASSERT_NE(follower, leader);
  ASSERT_NO_FATAL_FAILURE(ExpectFollowerReadsLeader(follower, leader, 0));

  // Down while the leader goes on; back, it serves no read until it caught up and its copy in
  // memory took a whole view, then the chunks written meanwhile too.
  Broker(follower).Kill();
  r = Cli(Broker(leader).address(),
          {"produce", "reads", "--streamlet", "0", "--batch-records", "10"}, Numbered(400, 700));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  ASSERT_TRUE(Broker(follower).Restart().ok());
  AwaitIsr(leader, "reads", 0, {leader, follower});
  ASSERT_NO_FATAL_FAILURE(ExpectFollowerReadsLeader(follower, leader, 0));
}

TEST_F(FollowerReadsTest, AFollowerPushesFromItsCopyUntilItStopsServingTheStreamlet) {
  ProcessResult r = Cli(List(), {"create", "reads", "--streamlets", "1", "--durability", "async",
                                 "--replication", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  r = Cli(List(), {"produce", "reads", "--batch-records", "10"}, Numbered(0, 500));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement p = Placement(1, "reads");
  const uint32_t leader = p.owners[0];
  const uint32_t follower = p.replicas[0].replicas[1];
  ASSERT_NE(follower, leader);
  // Served once the follower's copy in memory holds a whole view (within milliseconds).
  ASSERT_NO_FATAL_FAILURE(ExpectFollowerReadsLeader(follower, leader, 0));

  net::PushSubscribeRequest req;
  req.stream = "reads";
  req.slots_per_ring = 4;
  req.slot_bytes = 64 * 1024;
  req.consumer_timeout_ms = 60000;
  req.rings.push_back(net::PushRing{0, {{0, storage::Position{}}}});
  auto plain = net::Client::Connect(Broker(follower).address());
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->PushSubscribe(req).status().IsNotOwner()) << "a push without the flag";
  auto client = ReplicaReader(follower);
  ASSERT_TRUE(client.ok());
  auto sub = client->PushSubscribe(req);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  auto region = push::ShmRegion::Open(sub->region_path);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  TestConsumer consumer(region->get(), 0);
  consumer.ReadUntil(500);
  // Records the views publish after the subscription wake its push thread too.
  r = Cli(Broker(leader).address(), {"produce", "reads", "--batch-records", "10"},
          Numbered(500, 600));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  consumer.ReadUntil(600);
  auto from_leader = net::Client::Connect(Broker(leader).address());
  ASSERT_TRUE(from_leader.ok());
  std::vector<Block> chunks;
  ASSERT_TRUE(ReadAll(*from_leader, "reads", 0, &chunks).ok());
  std::vector<storage::Position> positions;
  std::vector<std::string> records;
  for (const Block& b : chunks) {
    positions.push_back(b.at);
    auto h = storage::DecodeChunkHeader(b.data.data(), b.data.size());
    ASSERT_TRUE(h.ok());
    storage::RecordIterator it(b.data.data() + storage::kChunkHeaderSize, h->payload_length);
    std::string_view record;
    while (it.Next(&record)) records.emplace_back(record);
  }
  EXPECT_EQ(consumer.ChunkPositions(0), positions);
  EXPECT_EQ(consumer.Records(0), records);

  // Drained, the follower holds no replica any more: its push ends (the region is closed), and
  // its reader would subscribe where the streamlet is served now.
  r = Cli(List(), {"drain", "--broker-id", std::to_string(follower)});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const int64_t deadline = MonotonicNowMs() + 30000;
  while ((*region)->region_state() != NS_SHM_REGION_CLOSED && MonotonicNowMs() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ((*region)->region_state(), NS_SHM_REGION_CLOSED);
}

// Brokers without --follower-reads: leaders tell their followers nothing, so no follower keeps a
// copy in memory or serves a replica read; the reader is sent to the leader.
using FollowerReadsOffTest = ReplicatedCluster;

TEST_F(FollowerReadsOffTest, WithoutTheFlagAFollowerSendsReplicaReadsToTheLeader) {
  ProcessResult r = Cli(List(), {"create", "reads", "--streamlets", "1", "--durability", "async",
                                 "--replication", "2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  r = Cli(List(), {"produce", "reads", "--batch-records", "10"}, Numbered(0, 100));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const net::StreamPlacement p = Placement(1, "reads");
  const uint32_t follower = p.replicas[0].replicas[1];
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // views would have come by now
  auto reader = net::Client::Connect(Broker(follower).address());
  ASSERT_TRUE(reader.ok());
  reader->set_replica_reads(true);
  std::vector<Block> none;
  Status refused = ReadAll(*reader, "reads", 0, &none);
  EXPECT_TRUE(refused.IsNotOwner()) << refused.ToString();
  EXPECT_EQ(Stat(follower, "nearstream_fetch_follower_chunks_total"), 0u);
}

}  // namespace
}  // namespace nearstream::testing
