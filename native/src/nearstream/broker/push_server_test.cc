// Push subscriptions end to end against the in-process server: PushSubscribe over a real
// connection, then test consumers (push::RingConsumer) attached to the region it announces read
// the pushed Arrow slots and check records, order and chunk maps against what Fetch returns.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/broker/server.h"
#include "nearstream/net/client.h"
#include "nearstream/push/slot_ring.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/testing/push_test_consumer.h"
#include "nearstream/testing/test_broker_process.h"
#include "nearstream/testing/test_records.h"
#include "nearstream/testing/test_threads.h"
#include "nearstream/testing/view_slot_reader.h"

namespace nearstream::broker {
namespace {

using net::Client;
using storage::Position;

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

using testing::TestConsumer;

class PushServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nearstream-push-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    StartServer(dir_);
  }
  void TearDown() override {
    if (server_) server_->Stop();
    std::filesystem::remove_all(dir_);
  }

  void StartServer(const std::string& push_dir, uint32_t linger_us = 1000, int nice = 0) {
    store_ = std::make_unique<storage::StreamStore>(storage::StoreOptions{});
    ASSERT_TRUE(store_->Open(0).ok());
    ServerOptions options;
    options.workers = 2;
    options.handler.broker_epoch = 77;
    options.push.dir = push_dir;
    options.push.threads = 1;
    options.push.linger_us = linger_us;
    options.push.nice = nice;
    server_ = std::make_unique<Server>(options, store_.get());
    ASSERT_TRUE(server_->Start().ok());
  }

  Client Connect() {
    auto c = Client::Connect("127.0.0.1:" + std::to_string(server_->port()));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(c).value();
  }

  // Small segments and groups of 2 segments, so the data crosses segment and group boundaries.
  void CreateStream(Client& c, const std::string& name, uint32_t streamlets,
                    uint32_t segment_bytes = 4096) {
    storage::StreamConfig config;
    config.name = name;
    config.streamlets = streamlets;
    config.segment_bytes = segment_bytes;
    config.segments_per_group = 2;
    config.active_groups = 1;
    Status s = c.CreateStream(config);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Appends `chunks` chunks of `per_chunk` records to `streamlet`; returns the records.
  std::vector<std::string> Append(Client& c, const std::string& stream, uint32_t streamlet,
                                  int chunks, int per_chunk = 5, size_t record_bytes = 60) {
    std::vector<std::string> all;
    for (int i = 0; i < chunks; ++i) {
      storage::ChunkBuilder b;
      for (int r = 0; r < per_chunk; ++r) {
        std::string rec = "s" + std::to_string(streamlet) + "-c" + std::to_string(next_seq_) +
                          "-r" + std::to_string(r) + "-";
        rec.resize(std::max(rec.size(), record_bytes), 'x');
        b.Add(rec);
        all.push_back(rec);
      }
      Bytes chunk = b.Finish(0, 0, 1000);
      ++next_seq_;
      net::AppendRequest req;
      req.stream = stream;
      req.entries.push_back({streamlet, chunk.data(), static_cast<uint32_t>(chunk.size())});
      auto r = c.Append(req);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (r.ok()) {
        EXPECT_EQ(r->results.at(0).status, 0) << r->results.at(0).message;
      }
    }
    return all;
  }

  // The chunk positions Fetch returns for a streamlet, from the earliest on.
  std::vector<Position> FetchChunkPositions(Client& c, const std::string& stream,
                                            uint32_t streamlet) {
    std::vector<Position> out;
    Position pos;
    for (;;) {
      net::FetchRequest req;
      req.stream = stream;
      req.entries.push_back({streamlet, pos, 16 * 1024});
      auto reply = c.Fetch(req);
      EXPECT_TRUE(reply.ok());
      if (!reply.ok()) return out;
      const auto& r = reply->response.results.at(0);
      if (r.blocks.empty()) return out;
      for (const auto& b : r.blocks) {
        uint32_t off = 0;
        while (off < b.size) {
          out.push_back(Position{b.at.group, b.at.segment, b.at.offset + off});
          off += storage::kChunkHeaderSize + LoadLe32(b.data + off + 8);
        }
      }
      pos = r.next;
    }
  }

  static net::PushSubscribeRequest Subscribe(const std::string& stream,
                                             std::vector<std::vector<uint32_t>> rings,
                                             uint32_t timeout_ms = 60000,
                                             uint32_t slot_bytes = 64 * 1024) {
    net::PushSubscribeRequest req;
    req.stream = stream;
    req.slots_per_ring = 4;
    req.slot_bytes = slot_bytes;
    req.consumer_timeout_ms = timeout_ms;
    for (size_t i = 0; i < rings.size(); ++i) {
      net::PushRing ring;
      ring.subtask_index = static_cast<uint32_t>(i);
      for (uint32_t s : rings[i]) ring.splits.push_back({s, Position{}});
      req.rings.push_back(std::move(ring));
    }
    return req;
  }

  uint64_t StatValue(Client& c, const std::string& name) {
    auto stats = c.Stats();
    EXPECT_TRUE(stats.ok());
    if (!stats.ok()) return 0;
    for (const auto& [n, v] : stats->values) {
      if (n == name) return v;
    }
    ADD_FAILURE() << "no stat " << name;
    return 0;
  }

  std::string dir_;
  std::unique_ptr<storage::StreamStore> store_;
  std::unique_ptr<Server> server_;
  uint64_t next_seq_ = 0;
};

TEST_F(PushServerTest, PushesEveryRecordInOrderWithFetchPositions) {
  Client c = Connect();
  CreateStream(c, "s", 4);
  std::map<uint32_t, std::vector<std::string>> want;
  for (uint32_t s = 0; s < 4; ++s) want[s] = Append(c, "s", s, 20);

  auto sub = c.PushSubscribe(Subscribe("s", {{0, 1}, {2, 3}}));
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->broker_epoch, 77u);
  EXPECT_EQ(sub->region_path.rfind(dir_ + "/nearstream-push-", 0), 0u) << sub->region_path;
  auto region = push::ShmRegion::Open(sub->region_path);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  EXPECT_EQ((*region)->size(), sub->region_bytes);
  EXPECT_EQ((*region)->broker_epoch(), 77u);
  EXPECT_EQ((*region)->geometry().ring_count, 2u);

  TestConsumer r0(region->get(), 0), r1(region->get(), 1);
  r0.ReadUntil(2 * 20 * 5);
  r1.ReadUntil(2 * 20 * 5);
  // Appended after the subscription: pushed too.
  for (uint32_t s = 0; s < 4; ++s) {
    auto more = Append(c, "s", s, 25);
    want[s].insert(want[s].end(), more.begin(), more.end());
  }
  r0.ReadUntil(2 * 45 * 5);
  r1.ReadUntil(2 * 45 * 5);
  for (uint32_t s = 0; s < 4; ++s) {
    SCOPED_TRACE("streamlet " + std::to_string(s));
    TestConsumer& r = s < 2 ? r0 : r1;
    EXPECT_EQ(r.Records(s), want[s]);
    std::vector<Position> fetched = FetchChunkPositions(c, "s", s);
    EXPECT_EQ(r.ChunkPositions(s), fetched);
    // 45 chunks of ~400 bytes in 4 KiB segments, 2 segments per group: several groups.
    ASSERT_FALSE(fetched.empty());
    EXPECT_GT(fetched.back().group, 2u);
  }
  EXPECT_TRUE((r0.Records(2).empty() && r1.Records(0).empty()));
  EXPECT_GE(StatValue(c, "nearstream_push_records_total"), 4u * 45 * 5);
  EXPECT_GE(StatValue(c, "nearstream_push_slots_published_total"), 2u);
  EXPECT_GT(StatValue(c, "nearstream_push_thread_busy_ns_total{thread=\"push-0\"}"), 0u);
}

TEST_F(PushServerTest, AFilteredSubscriptionPushesWhatPassesAndEveryChunkInItsPlace) {
  Client c = Connect();
  CreateStream(c, "s", 1);
  // Records "s0-c<chunk>-r<record>-xx..": the needle passes the chunks whose number ends in 1
  // (c1, c11, c21, c31); the 28 others are pushed as chunk map entries without rows.
  const std::vector<std::string> all = Append(c, "s", 0, 32);
  std::vector<std::string> want;
  for (const std::string& r : all) {
    if (r.find("1-r") != std::string::npos) want.push_back(r);
  }
  ASSERT_EQ(want.size(), 4u * 5);

  auto req = Subscribe("s", {{0}});
  req.filter.kind = net::RecordFilterKind::kBytesContain;
  req.filter.needle = "1-r";
  auto sub = c.PushSubscribe(req);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  auto region = push::ShmRegion::Open(sub->region_path);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  TestConsumer r(region->get(), 0);
  r.ReadUntil(want.size());
  EXPECT_EQ(r.Records(0), want);
  EXPECT_EQ(r.ChunkPositions(0), FetchChunkPositions(c, "s", 0));
  EXPECT_EQ(StatValue(c, "nearstream_push_records_filtered_total"), all.size() - want.size());

  // Filters outside docs/protocol.md's bounds are refused whole.
  req.filter.needle.clear();
  EXPECT_EQ(c.PushSubscribe(req).status().code(), StatusCode::kInvalidArgument);
  req.filter.kind = net::RecordFilterKind::kJsonFieldIn;
  req.filter.field = "event_type";
  EXPECT_EQ(c.PushSubscribe(req).status().code(), StatusCode::kInvalidArgument);  // no values
}

TEST_F(PushServerTest, AFullRingDoesNotBlockTheOtherRing) {
  Client c = Connect();
  CreateStream(c, "s", 2, 64 * 1024);
  // 10 KB chunks: about 6 per 64 KiB slot, so 40 of them overfill a ring of 4 slots.
  Append(c, "s", 0, 40, 10, 1000);
  auto want1 = Append(c, "s", 1, 40, 10, 1000);
  auto sub = c.PushSubscribe(Subscribe("s", {{0}, {1}}));
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  auto region = push::ShmRegion::Open(sub->region_path);
  ASSERT_TRUE(region.ok());
  TestConsumer stuck(region->get(), 0);  // attached, heartbeating, never releasing
  TestConsumer r1(region->get(), 1);
  r1.ReadUntil(want1.size());
  EXPECT_EQ(r1.Records(1), want1);
  // New data for the free ring while the other stays full: the push thread is woken for it.
  auto more = Append(c, "s", 1, 5, 10, 1000);
  want1.insert(want1.end(), more.begin(), more.end());
  r1.ReadUntil(want1.size(), std::chrono::seconds(5));
  EXPECT_EQ(r1.Records(1), want1);
  // Ring 0 holds 4 published slots that nobody released.
  int published = 0;
  for (uint32_t s = 0; s < 4; ++s) {
    uint64_t seq = std::atomic_ref<uint64_t>((*region)->descriptor(0, s)->sequence).load();
    if (seq == s + 1) ++published;
  }
  EXPECT_EQ(published, 4);
}

TEST_F(PushServerTest, UpdateMovesASplitWithoutLossOrDuplicates) {
  Client c = Connect();
  CreateStream(c, "s", 2);
  std::map<uint32_t, std::vector<std::string>> want;
  for (uint32_t s = 0; s < 2; ++s) want[s] = Append(c, "s", s, 10);
  auto sub = c.PushSubscribe(Subscribe("s", {{0, 1}, {}}));
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  auto region = push::ShmRegion::Open(sub->region_path);
  ASSERT_TRUE(region.ok());
  TestConsumer r0(region->get(), 0), r1(region->get(), 1);
  r0.ReadUntil(2 * 10 * 5);
  ASSERT_EQ(r0.total(), 100u);

  net::PushUpdateRequest update;
  update.subscription_id = sub->subscription_id;
  update.rings.resize(2);
  update.rings[0].subtask_index = 0;
  update.rings[0].splits.push_back({0, Position{}});
  update.rings[1].subtask_index = 1;
  update.rings[1].splits.push_back({1, Position{}});  // stays in the subscription: keeps its place
  ASSERT_TRUE(c.PushUpdate(update).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // applied at the next pass
  for (uint32_t s = 0; s < 2; ++s) {
    auto more = Append(c, "s", s, 10);
    want[s].insert(want[s].end(), more.begin(), more.end());
  }
  r0.ReadUntil(100 + 50);
  r1.ReadUntil(50);
  EXPECT_EQ(r0.Records(0), want[0]);
  std::vector<std::string> s1 = r0.Records(1);
  EXPECT_EQ(s1.size(), 50u);  // only what was pushed before the update
  auto after = r1.Records(1);
  s1.insert(s1.end(), after.begin(), after.end());
  EXPECT_EQ(s1, want[1]);
  EXPECT_TRUE(r1.Records(0).empty());
}

TEST_F(PushServerTest, CloseAndConnectionCloseUnlinkTheRegion) {
  Client c = Connect();
  CreateStream(c, "s", 1);
  auto sub = c.PushSubscribe(Subscribe("s", {{0}}));
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  ASSERT_TRUE(FileExists(sub->region_path));
  auto region = push::ShmRegion::Open(sub->region_path);
  ASSERT_TRUE(region.ok());
  EXPECT_EQ((*region)->region_state(), NS_SHM_REGION_OPEN);
  ASSERT_TRUE(c.PushClose(sub->subscription_id).ok());
  EXPECT_FALSE(FileExists(sub->region_path));
  EXPECT_EQ((*region)->region_state(), NS_SHM_REGION_CLOSED);
  // Closing twice: the subscription is gone.
  EXPECT_EQ(c.PushClose(sub->subscription_id).code(), StatusCode::kInvalidArgument);

  std::string path;
  {
    Client owner = Connect();
    auto sub2 = owner.PushSubscribe(Subscribe("s", {{0}}));
    ASSERT_TRUE(sub2.ok()) << sub2.status().ToString();
    path = sub2->region_path;
    ASSERT_TRUE(FileExists(path));
  }  // the control connection closes
  for (int i = 0; i < 200 && FileExists(path); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(FileExists(path));
  EXPECT_EQ(StatValue(c, "nearstream_push_subscriptions"), 0u);
}

TEST_F(PushServerTest, Errors) {
  Client c = Connect();
  CreateStream(c, "s", 2);
  EXPECT_EQ(c.PushSubscribe(Subscribe("nope", {{0}})).status().code(), StatusCode::kStreamNotFound);
  EXPECT_EQ(c.PushSubscribe(Subscribe("s", {{0, 9}})).status().code(),
            StatusCode::kStreamletNotFound);
  EXPECT_EQ(c.PushSubscribe(Subscribe("s", {{0}, {0}})).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(c.PushSubscribe(Subscribe("s", {})).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.PushSubscribe(Subscribe("s", {{0}}, 1000, 1000)).status().code(),
            StatusCode::kInvalidArgument);  // slot_bytes below 64 KiB
  EXPECT_EQ(c.PushSubscribe(Subscribe("s", {{0}}, 1000, (64 << 10) + 1)).status().code(),
            StatusCode::kInvalidArgument);  // not a multiple of 64
  auto one_slot = Subscribe("s", {{0}});
  one_slot.slots_per_ring = 1;
  EXPECT_EQ(c.PushSubscribe(one_slot).status().code(), StatusCode::kInvalidArgument);
  auto huge = Subscribe("s", {{0}, {1}}, 1000, 64 << 20);
  huge.slots_per_ring = 1024;  // 2 x 64 GiB
  EXPECT_EQ(c.PushSubscribe(huge).status().code(), StatusCode::kInvalidArgument);

  auto sub = c.PushSubscribe(Subscribe("s", {{0}, {1}}));
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  net::PushUpdateRequest update;
  update.subscription_id = sub->subscription_id;
  update.rings.resize(2);
  Client other = Connect();
  EXPECT_EQ(other.PushUpdate(update).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(other.PushClose(sub->subscription_id).code(), StatusCode::kInvalidArgument);
  update.rings.resize(1);
  EXPECT_EQ(c.PushUpdate(update).code(), StatusCode::kInvalidArgument);
  update.rings.resize(2);
  update.rings[0].splits.push_back({7, Position{}});
  EXPECT_EQ(c.PushUpdate(update).code(), StatusCode::kStreamletNotFound);
  update.subscription_id = 12345;
  update.rings[0].splits.clear();
  EXPECT_EQ(c.PushUpdate(update).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(FileExists(sub->region_path));  // the failed requests left it alone
}

// A thread that published only a part-filled slot (it is at the tail) waits --push-linger-us
// before its next pass: an append right after that slot is not pushed within the linger, then is;
// the appends during the linger arrive together.
TEST_F(PushServerTest, ATailingThreadLingersBeforeTheNextSlot) {
  server_->Stop();
  server_.reset();
  constexpr auto kLinger = std::chrono::milliseconds(400);
  StartServer(dir_, static_cast<uint32_t>(std::chrono::microseconds(kLinger).count()));
  Client c = Connect();
  CreateStream(c, "s", 1, 64 * 1024);
  auto sub = c.PushSubscribe(Subscribe("s", {{0}}));
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  auto region = push::ShmRegion::Open(sub->region_path);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  TestConsumer r(region->get(), 0);

  Append(c, "s", 0, 1);
  r.ReadUntil(5);  // published at once: the thread was asleep, the append woke it
  ASSERT_EQ(r.total(), 5u);
  ASSERT_EQ(r.slots(), 1u);
  const auto after_first = std::chrono::steady_clock::now();
  Append(c, "s", 0, 3);  // while the thread lingers
  // Only meaningful when the appends themselves took well under the linger (a machine that
  // stalls this thread for 200 ms proves nothing either way).
  const bool appended_within_linger = std::chrono::steady_clock::now() - after_first < kLinger / 4;
  r.ReadUntil(20, std::chrono::milliseconds(100));
  if (appended_within_linger && std::chrono::steady_clock::now() - after_first < kLinger / 2) {
    EXPECT_EQ(r.total(), 5u) << "pushed before the linger ended";
  }
  r.ReadUntil(20);
  EXPECT_EQ(r.total(), 20u);
  if (appended_within_linger) {
    EXPECT_EQ(r.slots(), 2u) << "the three appends during the linger share one slot";
  }
  EXPECT_GE(StatValue(c, "nearstream_push_lingers_total"), 1u);
}

// The nice value of the thread named `name` in this process, or -100 when there is none.
int NiceOfThread(const std::string& name) {
  for (const auto& [n, task] : testing::ThreadsOfThisProcess()) {
    if (n == name) return testing::NiceOf(task);
  }
  return -100;
}

// --push-nice: the push threads run at that nice value (and still push); the rest of the broker
// keeps its own. Values a broker without CAP_SYS_NICE cannot set, or beyond 19, are refused.
TEST_F(PushServerTest, PushThreadsRunAtTheNiceValueAsked) {
  server_->Stop();
  server_.reset();
  StartServer(dir_, 1000, 7);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (NiceOfThread("ns-push-0") != 7 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(NiceOfThread("ns-push-0"), 7);
  EXPECT_EQ(NiceOfThread("ns-worker-0"), NiceOfThread("ns-dispatch"));
  EXPECT_NE(NiceOfThread("ns-worker-0"), 7);
  Client c = Connect();
  CreateStream(c, "s", 1);
  Append(c, "s", 0, 2);  // 2 chunks of 5 records
  auto sub = c.PushSubscribe(Subscribe("s", {{0}}));
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  auto region = push::ShmRegion::Open(sub->region_path);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  TestConsumer r(region->get(), 0);
  r.ReadUntil(10);
  EXPECT_EQ(r.total(), 10u);

  for (int bad : {-1, 20}) {
    push::PushOptions options;
    options.dir = dir_;
    options.nice = bad;
    push::PushManager manager(options, store_.get());
    Status s = manager.Start();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("--push-nice"), std::string::npos) << s.message();
  }
}

TEST_F(PushServerTest, StatsCountOneSubscribe) {
  Client c = Connect();
  CreateStream(c, "s", 1);
  auto sub = c.PushSubscribe(Subscribe("s", {{0}}));
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(StatValue(c, "nearstream_push_subscribe_requests_total"), 1u);
  EXPECT_EQ(StatValue(c, "nearstream_push_subscriptions"), 1u);
  EXPECT_EQ(StatValue(c, "nearstream_push_rings_reclaimed_total"), 0u);
}

// A consumer process killed with -9 stops heartbeating: its ring is reclaimed after the timeout,
// re-activated, and a new consumer gets the data appended afterwards.
TEST_F(PushServerTest, KilledConsumerRingIsReclaimed) {
  Client c = Connect();
  CreateStream(c, "s", 1);
  Append(c, "s", 0, 5);
  auto sub = c.PushSubscribe(Subscribe("s", {{0}}, /*timeout_ms=*/300));
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  const std::string path = sub->region_path;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Async-signal-safe calls only (the parent has threads): map, heartbeat once, stop.
    int fd = ::open(path.c_str(), O_RDWR);
    if (fd < 0) ::_exit(1);
    void* base = ::mmap(nullptr, sub->region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) ::_exit(2);
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    ns_shm_ring(base, 0)->consumer_heartbeat_ns =
        static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
    char one = 1;
    if (::write(ready[1], &one, 1) != 1) ::_exit(3);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));

  uint64_t reclaimed = 0;
  for (int i = 0; i < 300 && reclaimed == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    reclaimed = StatValue(c, "nearstream_push_rings_reclaimed_total");
  }
  EXPECT_GE(reclaimed, 1u);
  // The broker keeps serving: a new consumer attaches to the re-activated ring.
  auto region = push::ShmRegion::Open(path);
  ASSERT_TRUE(region.ok());
  EXPECT_EQ(std::atomic_ref<uint32_t>((*region)->ring(0)->state).load(), NS_SHM_RING_ACTIVE);
  EXPECT_GE(std::atomic_ref<uint32_t>((*region)->ring(0)->generation).load(), 2u);
  TestConsumer fresh(region->get(), 0);
  auto more = Append(c, "s", 0, 5);
  fresh.ReadUntil(more.size());
  auto got = fresh.Records(0);
  ASSERT_GE(got.size(), more.size());
  EXPECT_EQ(std::vector<std::string>(got.end() - static_cast<long>(more.size()), got.end()), more);
}

// Two push threads serve three subscriptions while two producers append concurrently.
TEST_F(PushServerTest, ConcurrentAppendsAndSubscriptionsOnTwoPushThreads) {
  server_->Stop();
  server_.reset();
  store_.reset();
  store_ = std::make_unique<storage::StreamStore>(storage::StoreOptions{});
  ASSERT_TRUE(store_->Open(0).ok());
  ServerOptions options;
  options.workers = 2;
  options.push.dir = dir_;
  options.push.threads = 2;
  server_ = std::make_unique<Server>(options, store_.get());
  ASSERT_TRUE(server_->Start().ok());

  Client c = Connect();
  CreateStream(c, "s", 3);
  constexpr int kChunks = 60;
  std::vector<std::thread> producers;
  for (uint32_t s = 0; s < 3; s += 2) {  // streamlets 0 and 2 from two threads
    producers.emplace_back([this, s] {
      Client p = Connect();
      for (int i = 0; i < kChunks; ++i) {
        storage::ChunkBuilder b;
        b.Add("p" + std::to_string(s) + "-" + std::to_string(i));
        Bytes chunk = b.Finish(0, 0, 1000);
        net::AppendRequest req;
        req.stream = "s";
        req.entries.push_back({s, chunk.data(), static_cast<uint32_t>(chunk.size())});
        ASSERT_TRUE(p.Append(req).ok());
      }
    });
  }
  std::vector<Client> owners;
  std::vector<std::unique_ptr<push::ShmRegion>> regions;
  std::vector<std::unique_ptr<TestConsumer>> consumers;
  for (uint32_t s = 0; s < 3; ++s) {
    owners.push_back(Connect());
    auto sub = owners.back().PushSubscribe(Subscribe("s", {{s}}));
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    auto region = push::ShmRegion::Open(sub->region_path);
    ASSERT_TRUE(region.ok());
    regions.push_back(std::move(*region));
    consumers.push_back(std::make_unique<TestConsumer>(regions.back().get(), 0));
  }
  for (auto& t : producers) t.join();
  for (uint32_t s = 0; s < 3; s += 2) {
    consumers[s]->ReadUntil(kChunks);
    std::vector<std::string> want;
    for (int i = 0; i < kChunks; ++i)
      want.push_back("p" + std::to_string(s) + "-" + std::to_string(i));
    EXPECT_EQ(consumers[s]->Records(s), want);
  }
  EXPECT_EQ(consumers[1]->total(), 0u);
  EXPECT_EQ(StatValue(c, "nearstream_push_subscriptions"), 3u);
  EXPECT_GT(StatValue(c, "nearstream_push_thread_busy_ns_total{thread=\"push-1\"}"), 0u);
}

// With the real /dev/shm: stopping the broker unlinks every region it created.
TEST(PushShutdownTest, StopLeavesNothingInDevShm) {
  storage::StreamStore store(storage::StoreOptions{});
  ASSERT_TRUE(store.Open(0).ok());
  ServerOptions options;
  Server server(options, &store);
  ASSERT_TRUE(server.Start().ok());
  auto c = Client::Connect("127.0.0.1:" + std::to_string(server.port()));
  ASSERT_TRUE(c.ok());
  storage::StreamConfig config;
  config.name = "s";
  config.streamlets = 2;
  ASSERT_TRUE(c->CreateStream(config).ok());
  std::vector<std::string> paths;
  for (int i = 0; i < 2; ++i) {
    net::PushSubscribeRequest req;
    req.stream = "s";
    req.slots_per_ring = 2;
    req.slot_bytes = 64 * 1024;
    req.consumer_timeout_ms = 10000;
    req.rings.push_back({0, {{static_cast<uint32_t>(i), Position{}}}});
    auto sub = c->PushSubscribe(req);
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    EXPECT_EQ(
        sub->region_path.rfind("/dev/shm/nearstream-push-" + std::to_string(::getpid()) + "-", 0),
        0u);
    paths.push_back(sub->region_path);
    EXPECT_TRUE(FileExists(sub->region_path));
  }
  server.Stop();
  for (const auto& p : paths) EXPECT_FALSE(FileExists(p)) << p;
  const std::string prefix = "nearstream-push-" + std::to_string(::getpid()) + "-";
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
    EXPECT_NE(e.path().filename().string().rfind(prefix, 0), 0u) << e.path();
  }
}

// For the broker-process tests: creates stream "s" of one streamlet holding `records` in one
// chunk, and returns a subscription request for one ring (subtask `subtask`) reading it from the
// start, in `slot_format`.
net::PushSubscribeRequest OneStreamletSubscription(Client& c,
                                                   const std::vector<std::string>& records,
                                                   uint32_t subtask, uint8_t slot_format) {
  storage::StreamConfig config;
  config.name = "s";
  config.streamlets = 1;
  EXPECT_TRUE(c.CreateStream(config).ok());
  storage::ChunkBuilder b;
  for (const std::string& r : records) b.Add(r);
  Bytes chunk = b.Finish(0, 0, 1000);
  net::AppendRequest append;
  append.stream = "s";
  append.entries.push_back({0, chunk.data(), static_cast<uint32_t>(chunk.size())});
  EXPECT_TRUE(c.Append(append).ok());
  net::PushSubscribeRequest req;
  req.stream = "s";
  req.slots_per_ring = 2;
  req.slot_bytes = 64 * 1024;
  req.consumer_timeout_ms = 10000;
  req.rings.push_back({subtask, {{0, Position{}}}});
  req.slot_format = slot_format;
  return req;
}

// The real nearstreamd: --push-dir and --push-threads, and a graceful stop (SIGTERM) unlinks the
// regions of the subscriptions still open.
TEST(PushBrokerProcessTest, FlagsAndSigtermUnlink) {
  testing::TempDir push_dir("nearstream-push-dir");
  ASSERT_TRUE(push_dir.ok());
  testing::TestBroker::Options options;
  options.extra_args = {"--push-threads", "2", "--push-dir", push_dir.path()};
  auto broker = testing::TestBroker::Start(options);
  ASSERT_TRUE(broker.ok()) << broker.status().ToString();
  auto c = Client::Connect((*broker)->address());
  ASSERT_TRUE(c.ok());
  auto sub = c->PushSubscribe(
      OneStreamletSubscription(*c, {"hello", "push"}, 3, NS_SHM_SLOT_FORMAT_BINARY));
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->region_path, push_dir.path() + "/nearstream-push-" +
                                  std::to_string((*broker)->pid()) + "-" +
                                  std::to_string(sub->subscription_id));
  auto region = push::ShmRegion::Open(sub->region_path);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  EXPECT_EQ((*region)->ring(0)->subtask_index, 3u);
  TestConsumer consumer(region->get(), 0);
  consumer.ReadUntil(2);
  EXPECT_EQ(consumer.Records(0), (std::vector<std::string>{"hello", "push"}));
  EXPECT_EQ((*broker)->Stop(SIGTERM), 0) << (*broker)->log();
  EXPECT_FALSE(FileExists(sub->region_path));
  EXPECT_EQ((*region)->region_state(), NS_SHM_REGION_CLOSED);
}

// A broker killed with SIGKILL cannot unlink its segment files. A consumer holding a view slot
// keeps reading it through its own mappings; the next broker on the push directory removes the
// dead broker's files (and region), and the held slot still reads the same records.
TEST(PushBrokerProcessTest, AKilledBrokersSegmentFilesServeHeldSlotsAndGoAtTheNextStart) {
  testing::TempDir push_dir("nearstream-push-dir");
  ASSERT_TRUE(push_dir.ok());
  testing::TestBroker::Options options;
  options.extra_args = {"--push-dir", push_dir.path(), "--push-segment-files", "always"};
  auto broker = testing::TestBroker::Start(options);
  ASSERT_TRUE(broker.ok()) << broker.status().ToString();
  const std::string dead_prefix = "nearstream-seg-" + std::to_string((*broker)->pid()) + "-";
  auto c = Client::Connect((*broker)->address());
  ASSERT_TRUE(c.ok());
  std::vector<std::string> records;
  for (int i = 0; i < 20; ++i) {
    records.push_back("record " + std::to_string(i) + " " + std::string(100, char('a' + i)));
  }
  auto sub =
      c->PushSubscribe(OneStreamletSubscription(*c, records, 0, NS_SHM_SLOT_FORMAT_BINARY_VIEW));
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  auto region = push::ShmRegion::Open(sub->region_path);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  ASSERT_EQ(std::string((*region)->header()->segment_file_prefix), dead_prefix);
  auto consumer = push::RingConsumer::Attach(region->get(), 0, push::MonotonicNowNs());
  ASSERT_TRUE(consumer.ok());
  std::optional<push::RingConsumer::Slot> held;
  for (int i = 0; i < 500 && !held; ++i) {
    held = consumer->TryNext();
    if (!held) (void)consumer->Wait(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(held.has_value());
  // Map the slot's segment files as a consumer does, then lose the broker.
  std::map<uint64_t, testing::MappedFile> maps;
  for (const ns_shm_buffer_table_entry& e : testing::BufferTable(held->payload, held->layout)) {
    const std::string path = push_dir.path() + "/" + dead_prefix + std::to_string(e.segment_file);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0) << path;
    void* p = ::mmap(nullptr, e.file_bytes, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    ASSERT_NE(p, MAP_FAILED);
    maps[e.segment_file] = testing::MappedFile{static_cast<const uint8_t*>(p), e.file_bytes};
  }
  ASSERT_EQ(maps.size(), 1u);
  auto map = [&](uint64_t n) { return maps.contains(n) ? maps[n] : testing::MappedFile{}; };
  ASSERT_EQ(testing::ReadViewRows(held->payload, held->layout, map), records);
  (*broker)->Stop(SIGKILL);
  auto segment_files = [&] {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(push_dir.path())) {
      n += e.path().filename().string().rfind(dead_prefix, 0) == 0 ? 1 : 0;
    }
    return n;
  };
  EXPECT_GE(segment_files(), 1u);  // nobody unlinked them
  EXPECT_EQ(testing::ReadViewRows(held->payload, held->layout, map), records);

  auto next = testing::TestBroker::Start(options);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(segment_files(), 0u);
  EXPECT_FALSE(FileExists(sub->region_path));
  // The mappings outlive the names: the held slot still reads its records.
  EXPECT_EQ(testing::ReadViewRows(held->payload, held->layout, map), records);
  for (auto& [n, m] : maps) ::munmap(const_cast<uint8_t*>(m.data), m.size);
}

}  // namespace
}  // namespace nearstream::broker
