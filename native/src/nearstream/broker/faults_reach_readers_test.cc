// Faults that must reach readers instead of stalling or thinning them silently, through a real
// in-process broker: a chunk too large for the push slots (a FETCH_CHUNK marker slot in its
// place), a damaged range in a middle segment after a restart (DATA_LOSS on Fetch, a DAMAGED
// marker slot on push, the range in Stats), and a ring whose reader went away (reclaimed once,
// not every consumer timeout).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/broker/server.h"
#include "nearstream/net/client.h"
#include "nearstream/push/slot_ring.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/testing/test_broker_process.h"

namespace nearstream::broker {
namespace {

using net::Client;
using storage::Position;

// One slot as a consumer sees it: its flags and chunk map entries (records decoded for batches).
struct SlotSeen {
  uint32_t flags = 0;
  std::vector<ns_shm_chunk_map_entry> entries;
  std::vector<std::string> records;
};

class FaultsReachReadersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(temp_.ok());
    dir_ = temp_.path();
    Start();
  }
  void TearDown() override { Stop(); }  // temp_ removes the directory

  void Start() {
    storage::StoreOptions so;
    so.data_dir = dir_ + "/data";
    store_ = std::make_unique<storage::StreamStore>(so);
    ASSERT_TRUE(store_->Open(0).ok());
    ServerOptions options;
    options.workers = 1;
    options.push.dir = dir_;
    options.push.linger_us = 0;
    server_ = std::make_unique<Server>(options, store_.get());
    ASSERT_TRUE(server_->Start().ok());
  }
  void Stop() {
    if (server_) server_->Stop();
    server_.reset();
    store_.reset();
  }

  Client Connect() {
    auto c = Client::Connect("127.0.0.1:" + std::to_string(server_->port()));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(c).value();
  }

  void CreateStream(Client& c, uint32_t segment_bytes, storage::Durability durability) {
    storage::StreamConfig config;
    config.name = "s";
    config.streamlets = 1;
    config.segment_bytes = segment_bytes;
    config.segments_per_group = 4;
    config.active_groups = 1;
    config.durability = durability;
    Status st = c.CreateStream(config);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  // Appends one chunk of `count` records of `bytes` bytes; returns its position.
  Position AppendChunk(Client& c, int count, size_t bytes, std::vector<std::string>* all) {
    storage::ChunkBuilder b;
    for (int r = 0; r < count; ++r) {
      std::string rec = "c" + std::to_string(chunks_) + "-r" + std::to_string(r) + "-";
      rec.resize(std::max(rec.size(), bytes), 'x');
      b.Add(rec);
      all->push_back(rec);
    }
    Bytes chunk = b.Finish(0, 0, 1000 + chunks_++);
    net::AppendRequest req;
    req.stream = "s";
    req.entries.push_back({0, chunk.data(), static_cast<uint32_t>(chunk.size())});
    auto r = c.Append(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return Position{};
    EXPECT_EQ(r->results.at(0).status, 0) << r->results.at(0).message;
    return r->results.at(0).position;
  }

  // Subscribes streamlet 0 from the earliest position into one ring of 4 slots.
  std::unique_ptr<push::ShmRegion> Subscribe(Client& c, uint32_t slot_bytes,
                                             uint32_t timeout_ms = 60000) {
    net::PushSubscribeRequest req;
    req.stream = "s";
    req.slots_per_ring = 4;
    req.slot_bytes = slot_bytes;
    req.consumer_timeout_ms = timeout_ms;
    net::PushRing ring;
    ring.splits.push_back({0, Position{}});
    req.rings.push_back(ring);
    auto sub = c.PushSubscribe(req);
    EXPECT_TRUE(sub.ok()) << sub.status().ToString();
    if (!sub.ok()) return nullptr;
    auto region = push::ShmRegion::Open(sub->region_path);
    EXPECT_TRUE(region.ok()) << region.status().ToString();
    return region.ok() ? std::move(*region) : nullptr;
  }

  // Reads and releases slots until `n` were read or 10 s passed.
  static std::vector<SlotSeen> ReadSlots(push::RingConsumer& consumer, size_t n) {
    std::vector<SlotSeen> out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
      consumer.Heartbeat(push::MonotonicNowNs());
      auto slot = consumer.TryNext();
      if (!slot) {
        (void)consumer.Wait(std::chrono::milliseconds(20));
        continue;
      }
      const push::SlotLayout& l = slot->layout;
      SlotSeen seen;
      seen.flags = l.flags;
      for (uint32_t i = 0; i < l.chunk_count; ++i) {
        ns_shm_chunk_map_entry e;
        std::memcpy(&e, slot->payload + l.chunk_map_offset + i * sizeof e, sizeof e);
        seen.entries.push_back(e);
      }
      for (uint32_t r = 0; r < l.row_count; ++r) {
        const uint8_t* offsets = slot->payload + l.offsets_offset;
        const uint32_t begin = LoadLe32(offsets + 4 * r), end = LoadLe32(offsets + 4 * (r + 1));
        seen.records.emplace_back(
            reinterpret_cast<const char*>(slot->payload + l.data_offset) + begin, end - begin);
      }
      out.push_back(std::move(seen));
      EXPECT_TRUE(consumer.Release(slot->position).ok());
    }
    return out;
  }

  uint64_t Stat(Client& c, const std::string& name) {
    auto stats = c.Stats();
    EXPECT_TRUE(stats.ok());
    if (!stats.ok()) return 0;
    for (const auto& [n, v] : stats->values) {
      if (n == name) return v;
    }
    ADD_FAILURE() << "no stat " << name;
    return 0;
  }

  nearstream::testing::TempDir temp_{"nearstream-faults"};  // the broker's data and push dirs
  std::string dir_;
  std::unique_ptr<storage::StreamStore> store_;
  std::unique_ptr<Server> server_;
  uint64_t chunks_ = 0;
};

TEST_F(FaultsReachReadersTest, AChunkLargerThanASlotComesAsAFetchMarkerInItsPlace) {
  Client c = Connect();
  CreateStream(c, 1 << 20, storage::Durability::kNone);
  std::vector<std::string> small1, big, small2;
  AppendChunk(c, 5, 100, &small1);
  const Position big_at = AppendChunk(c, 200, 500, &big);  // ~100 KB: no 64 KiB slot holds it
  AppendChunk(c, 5, 100, &small2);

  auto region = Subscribe(c, 64 * 1024);
  ASSERT_NE(region, nullptr);
  auto consumer = push::RingConsumer::Attach(region.get(), 0, push::MonotonicNowNs());
  ASSERT_TRUE(consumer.ok()) << consumer.status().ToString();
  std::vector<SlotSeen> slots = ReadSlots(*consumer, 3);
  ASSERT_EQ(slots.size(), 3u);
  EXPECT_EQ(slots[0].flags, 0u);
  EXPECT_EQ(slots[0].records, small1);
  // The marker: no rows, the big chunk's position, size and record count, in the split's order.
  EXPECT_EQ(slots[1].flags, NS_SHM_SLOT_FETCH_CHUNK);
  EXPECT_TRUE(slots[1].records.empty());
  ASSERT_EQ(slots[1].entries.size(), 1u);
  const ns_shm_chunk_map_entry& e = slots[1].entries[0];
  EXPECT_EQ((Position{e.group, e.segment, e.byte_position}), big_at);
  EXPECT_EQ(e.record_count, 200u);
  EXPECT_EQ(e.first_timestamp_ms, 1001);
  EXPECT_EQ(slots[2].flags, 0u);
  EXPECT_EQ(slots[2].records, small2);
  EXPECT_EQ(Stat(c, "nearstream_push_chunks_by_fetch_total"), 1u);

  // What the reader does with it: one Fetch of exactly that chunk.
  net::FetchRequest req;
  req.stream = "s";
  req.entries.push_back({0, big_at, e.chunk_bytes});
  auto reply = c.Fetch(req);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  const auto& r = reply->response.results.at(0);
  ASSERT_EQ(r.blocks.size(), 1u);
  EXPECT_EQ(r.blocks[0].at, big_at);
  EXPECT_EQ(r.blocks[0].size, e.chunk_bytes);
}

TEST_F(FaultsReachReadersTest, ADamagedMiddleSegmentFailsFetchAndPushAndShowsInStats) {
  std::vector<std::string> records;
  std::vector<Position> at;
  {
    Client c = Connect();
    // 4 KiB segments of three ~1.1 KB chunks each: 9 chunks fill segments 1..3 of group 1.
    CreateStream(c, 4096, storage::Durability::kSync);
    for (int i = 0; i < 9; ++i) at.push_back(AppendChunk(c, 2, 500, &records));
  }
  ASSERT_EQ(at[4].segment, 2u);
  ASSERT_GT(at[6].segment, at[4].segment);  // a later segment follows: not a torn tail
  Stop();
  // Flip a byte inside the payload of the middle segment's second chunk.
  char name[64];
  std::snprintf(name, sizeof name, "%020llu-%020llu.seg",
                static_cast<unsigned long long>(at[4].group),
                static_cast<unsigned long long>(at[4].segment));
  const std::string path = dir_ + "/data/streams/s/0/" + name;
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.is_open()) << path;
    f.seekg(at[4].offset + 200);
    char b = 0;
    f.read(&b, 1);
    b ^= 0x10;
    f.seekp(at[4].offset + 200);
    f.write(&b, 1);
  }
  Start();
  Client c = Connect();
  const Position damage_end = at[5];

  // Pull: chunks up to the damage, then DATA_LOSS naming it, with `next` after it.
  std::vector<Position> fetched;
  Position pos;
  bool lost = false;
  for (int i = 0; i < 20; ++i) {
    net::FetchRequest req;
    req.stream = "s";
    req.entries.push_back({0, pos, 1 << 20});
    auto reply = c.Fetch(req);
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    const auto& r = reply->response.results.at(0);
    if (r.status == static_cast<uint16_t>(StatusCode::kDataLoss)) {
      EXPECT_FALSE(lost) << "one damaged range, reported once";
      lost = true;
      EXPECT_EQ(pos, at[4]);
      EXPECT_EQ(r.next, damage_end);
      EXPECT_NE(r.message.find("stream 's' streamlet 0"), std::string::npos) << r.message;
      EXPECT_NE(r.message.find(at[4].ToString() + " to " + damage_end.ToString()),
                std::string::npos)
          << r.message;
      pos = r.next;
      continue;
    }
    ASSERT_EQ(r.status, 0) << r.message;
    if (r.blocks.empty()) break;
    for (const auto& b : r.blocks) {
      for (uint32_t off = 0; off < b.size;
           off += storage::kChunkHeaderSize + LoadLe32(b.data + off + 8)) {
        fetched.push_back(Position{b.at.group, b.at.segment, b.at.offset + off});
      }
    }
    pos = r.next;
  }
  EXPECT_TRUE(lost);
  std::vector<Position> want = at;
  want.erase(want.begin() + 4);
  EXPECT_EQ(fetched, want);

  // Stats and /metrics name the range.
  EXPECT_EQ(Stat(c, "nearstream_damaged_ranges"), 1u);
  const std::string series =
      "nearstream_damaged_range_bytes{stream=\"s\",streamlet=\"0\",group=\"" +
      std::to_string(at[4].group) + "\",segment=\"" + std::to_string(at[4].segment) +
      "\",offset=\"" + std::to_string(at[4].offset) + "\"}";
  EXPECT_EQ(Stat(c, series), damage_end.offset - at[4].offset);

  // Push: the chunks before, a DAMAGED marker for the range, the chunks after.
  auto region = Subscribe(c, 64 * 1024);
  ASSERT_NE(region, nullptr);
  auto consumer = push::RingConsumer::Attach(region.get(), 0, push::MonotonicNowNs());
  ASSERT_TRUE(consumer.ok()) << consumer.status().ToString();
  std::vector<SlotSeen> slots = ReadSlots(*consumer, 3);
  ASSERT_EQ(slots.size(), 3u);
  EXPECT_EQ(slots[0].flags, 0u);
  EXPECT_EQ(slots[0].entries.size(), 4u);  // chunks 0..3 (the read stops before the damage)
  EXPECT_EQ(slots[1].flags, NS_SHM_SLOT_DAMAGED);
  ASSERT_EQ(slots[1].entries.size(), 1u);
  const ns_shm_chunk_map_entry& e = slots[1].entries[0];
  EXPECT_EQ((Position{e.group, e.segment, e.byte_position}), at[4]);
  EXPECT_EQ(e.chunk_bytes, damage_end.offset - at[4].offset);
  EXPECT_EQ(e.record_count, 0u);
  EXPECT_EQ(slots[2].flags, 0u);
  EXPECT_EQ(slots[2].entries.size(), 4u);  // chunks 5..8
  std::vector<std::string> pushed = slots[0].records;
  pushed.insert(pushed.end(), slots[2].records.begin(), slots[2].records.end());
  std::vector<std::string> want_records = records;
  want_records.erase(want_records.begin() + 8, want_records.begin() + 10);  // chunk 4's two
  EXPECT_EQ(pushed, want_records);
  EXPECT_EQ(Stat(c, "nearstream_push_damaged_ranges_total"), 1u);
}

TEST_F(FaultsReachReadersTest, ARingWhoseReaderLeftIsReclaimedOnceNotEveryTimeout) {
  Client c = Connect();
  CreateStream(c, 1 << 20, storage::Durability::kNone);
  std::vector<std::string> records;
  AppendChunk(c, 5, 100, &records);
  auto region = Subscribe(c, 64 * 1024, /*timeout_ms=*/100);
  ASSERT_NE(region, nullptr);
  {
    auto consumer = push::RingConsumer::Attach(region.get(), 0, push::MonotonicNowNs());
    ASSERT_TRUE(consumer.ok()) << consumer.status().ToString();
    ASSERT_EQ(ReadSlots(*consumer, 1).size(), 1u);
  }  // the reader is gone: no more heartbeats
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  // Reclaimed once after 100 ms; the re-activated ring nobody attached to is left alone
  // (before: once per timeout, 10 or more here, each logged).
  EXPECT_EQ(Stat(c, "nearstream_push_rings_reclaimed_total"), 1u);
  // A new reader attaches to it and gets what was appended since.
  AppendChunk(c, 3, 100, &records);
  auto again = push::RingConsumer::Attach(region.get(), 0, push::MonotonicNowNs());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  std::vector<SlotSeen> slots = ReadSlots(*again, 1);
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_EQ(slots[0].records, std::vector<std::string>(records.end() - 3, records.end()));
}

}  // namespace
}  // namespace nearstream::broker
