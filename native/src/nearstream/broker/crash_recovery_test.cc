// The durability promise against the real process: appends acknowledged under `sync` survive
// kill -9, recovery yields no corrupt or duplicated record, and the broker serves on.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "nearstream/net/client.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/testing/test_broker_process.h"
#include "nearstream/testing/test_records.h"

namespace nearstream::broker {
namespace {

using net::Client;
using testing::TestBroker;

Client MustConnect(const TestBroker& b) {
  auto c = Client::Connect(b.address());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

std::vector<std::string> ReadAll(Client& c, const std::string& stream, uint32_t streamlet) {
  return testing::ReadAllRecords(c, stream, streamlet);
}

struct Acked {
  std::mutex mu;
  std::set<std::string> records;
  std::map<int, std::pair<uint64_t, std::vector<std::string>>> last_unacked;  // per producer
};

// Appends until the connection breaks, remembering which records were acknowledged.
void ProduceUntilBroken(const std::string& address, const std::string& stream, int producer,
                        uint32_t streamlet, Acked* acked, std::atomic<int>* total) {
  auto c = Client::Connect(address);
  if (!c.ok()) return;
  for (uint64_t seq = 0;; ++seq) {
    storage::ChunkBuilder b;
    std::vector<std::string> recs;
    for (int k = 0; k < 20; ++k) {
      recs.push_back("p" + std::to_string(producer) + "-" + std::to_string(seq) + "-" +
                     std::to_string(k) + std::string(40, 'x'));
      b.Add(recs.back());
    }
    Bytes chunk = b.Finish(1000 + producer, seq, 1);
    {
      std::lock_guard<std::mutex> lock(acked->mu);
      acked->last_unacked[producer] = {seq, recs};
    }
    net::AppendRequest req;
    req.stream = stream;
    req.entries.push_back({streamlet, chunk.data(), static_cast<uint32_t>(chunk.size())});
    auto r = c->Append(req);
    if (!r.ok()) return;  // the broker died
    ASSERT_EQ(r->results[0].status, 0) << r->results[0].message;
    std::lock_guard<std::mutex> lock(acked->mu);
    acked->records.insert(recs.begin(), recs.end());
    acked->last_unacked.erase(producer);
    total->fetch_add(1);
  }
}

void KillDuringAppendsThenRecover(const std::string& durability) {
  TestBroker::Options options;
  auto broker = TestBroker::Start(options);
  ASSERT_TRUE(broker.ok()) << broker.status().ToString();
  TestBroker& b = **broker;
  {
    Client admin = MustConnect(b);
    storage::StreamConfig config;
    config.name = "crash";
    config.streamlets = 2;
    config.segment_bytes = 16 * 1024;  // small: the run crosses many segments and groups
    config.segments_per_group = 3;
    config.active_groups = 1;
    config.durability = storage::ParseDurability(durability).value();
    ASSERT_TRUE(admin.CreateStream(config).ok());
  }
  Acked acked;
  std::atomic<int> chunks{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < 4; ++p) {
    producers.emplace_back(ProduceUntilBroken, b.address(), "crash", p,
                           static_cast<uint32_t>(p % 2), &acked, &chunks);
  }
  // Let a few hundred appends land, then crash the broker in the middle of the stream of appends.
  for (int i = 0; i < 2000 && chunks.load() < 400; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GE(chunks.load(), 50) << "producers made no progress; broker log:\n" << b.log();
  EXPECT_EQ(b.Kill(), 128 + SIGKILL);
  for (auto& t : producers) t.join();

  ASSERT_TRUE(b.Restart().ok()) << b.log();
  Client c = MustConnect(b);
  std::multiset<std::string> found;
  for (uint32_t s = 0; s < 2; ++s) {
    for (auto& r : ReadAll(c, "crash", s)) found.insert(std::move(r));
  }
  for (const auto& r : acked.records) {
    ASSERT_EQ(found.count(r), 1u) << "acknowledged record " << r << " lost or duplicated";
  }
  for (const auto& r : found) ASSERT_EQ(found.count(r), 1u) << r << " duplicated";

  // A producer retrying its unacknowledged chunk after the restart gets it stored exactly once.
  for (const auto& [producer, pending] : acked.last_unacked) {
    storage::ChunkBuilder builder;
    for (const auto& r : pending.second) builder.Add(r);
    Bytes chunk = builder.Finish(1000 + producer, pending.first, 1);
    net::AppendRequest req;
    req.stream = "crash";
    uint32_t streamlet = static_cast<uint32_t>(producer % 2);
    req.entries.push_back({streamlet, chunk.data(), static_cast<uint32_t>(chunk.size())});
    auto r = c.Append(req);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->results[0].status, 0) << r->results[0].message;
    std::vector<std::string> all = ReadAll(c, "crash", streamlet);
    EXPECT_EQ(std::count(all.begin(), all.end(), pending.second.front()), 1);
  }
}

TEST(CrashRecoveryTest, SyncAppendsSurviveKill9) { KillDuringAppendsThenRecover("sync"); }

// A process crash (unlike a power loss) keeps what reached the page cache: async loses nothing
// acknowledged either, and never surfaces a torn chunk.
TEST(CrashRecoveryTest, AsyncAppendsSurviveKill9) { KillDuringAppendsThenRecover("async"); }

TEST(CrashRecoveryTest, MemoryOnlyStreamsDoNotSurviveARestart) {
  auto broker = TestBroker::Start();
  ASSERT_TRUE(broker.ok()) << broker.status().ToString();
  {
    Client c = MustConnect(**broker);
    storage::StreamConfig config;
    config.name = "volatile";
    config.segment_bytes = 0;
    config.segments_per_group = 0;
    config.active_groups = 0;
    ASSERT_TRUE(c.CreateStream(config).ok());
  }
  ASSERT_TRUE((*broker)->Restart().ok());
  Client c = MustConnect(**broker);
  EXPECT_EQ(c.DescribeStream("volatile").status().code(), StatusCode::kStreamNotFound);
}

}  // namespace
}  // namespace nearstream::broker
