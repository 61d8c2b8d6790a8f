// Follower reads over real processes (docs/cluster.md, "Follower reads"): ZooKeeper and three
// nearstreamd; a Fetch marked as a replica read is answered by an in-sync follower from its
// copy in memory, with exactly the chunks at the positions its leader's readers get.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "nearstream/common/byte_io.h"
#include "nearstream/common/clock.h"
#include "nearstream/net/client.h"
#include "nearstream/storage/chunk.h"
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

}  // namespace
}  // namespace nearstream::testing
