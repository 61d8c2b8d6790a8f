// PushManager on its own: a storage::StreamStore, a manager with a temporary push directory,
// subscriptions made through push::SubscriptionSpec and consumers attached with RingConsumer to
// the region file. No server, no sockets: appends go to the streamlets directly, followed by
// NoteAppended and NotifyAppend as the broker's append path does.
#include "nearstream/push/push_manager.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "nearstream/push/slot_ring.h"
#include "nearstream/shm_layout.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/storage/stream_store.h"
#include "nearstream/testing/test_broker_process.h"
#include "nearstream/testing/view_slot_reader.h"

namespace nearstream::push {
namespace {

using storage::Position;
using namespace std::chrono_literals;

constexpr uint64_t kConn = 1;

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.push_back(e.path().filename().string());
  }
  return out;
}

// One chunk as the reader sees it: where it is and its records.
struct ChunkSeen {
  uint32_t streamlet = 0;
  Position at;
  std::vector<std::string> records;
  bool operator==(const ChunkSeen&) const = default;
};

std::ostream& operator<<(std::ostream& os, const ChunkSeen& c) {
  return os << "{streamlet " << c.streamlet << " at " << c.at << ", " << c.records.size()
            << " records}";
}

// Every chunk of a streamlet from the earliest on, as Fetch would return them (Streamlet::Read,
// the same read a Fetch does).
std::vector<ChunkSeen> ReadStreamlet(storage::Streamlet* s, uint32_t streamlet) {
  std::vector<ChunkSeen> out;
  Position pos;
  for (;;) {
    Result<storage::ReadOutcome> r =
        s->Read(pos, 16 * 1024, [&](const Position& at, const uint8_t* data, uint32_t size) {
          uint32_t off = 0;
          while (off < size) {
            auto h = storage::DecodeChunkHeader(data + off, size - off);
            EXPECT_TRUE(h.ok()) << h.status().ToString();
            if (!h.ok()) return;
            ChunkSeen c;
            c.streamlet = streamlet;
            c.at = Position{at.group, at.segment, at.offset + off};
            storage::RecordIterator it(data + off + storage::kChunkHeaderSize, h->payload_length);
            std::string_view rec;
            while (it.Next(&rec)) c.records.emplace_back(rec);
            out.push_back(std::move(c));
            off += h->total_size();
          }
        });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok() || r->chunks == 0) return out;
    pos = r->next;
  }
}

// One slot as read by a consumer: its descriptor flags and chunk map, with the records of each
// chunk (none for a marker slot).
struct SlotSeen {
  uint32_t flags = 0;
  uint32_t row_count = 0;
  std::vector<ns_shm_chunk_map_entry> entries;
  std::vector<ChunkSeen> chunks;
  size_t buffer_files = 0;    // binary_view: segment files in the buffer table
  uint32_t copied_bytes = 0;  // binary_view: bytes in buffer 0
};

// The segment files a binary_view region's views point into, mapped read-only as a consumer maps
// them: by the name the region header gives, in the region's directory.
class SegmentFileMaps {
 public:
  explicit SegmentFileMaps(const ShmRegion* region)
      : dir_(std::filesystem::path(region->path()).parent_path().string()),
        prefix_(region->header()->segment_file_prefix) {}
  ~SegmentFileMaps() {
    for (auto& [n, m] : maps_) ::munmap(const_cast<uint8_t*>(m.data), m.size);
  }
  SegmentFileMaps(const SegmentFileMaps&) = delete;
  SegmentFileMaps& operator=(const SegmentFileMaps&) = delete;

  testing::MappedFile Map(uint64_t number) {
    auto it = maps_.find(number);
    if (it != maps_.end()) return it->second;
    const std::string path = dir_ + "/" + prefix_ + std::to_string(number);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    struct stat st;
    void* p = MAP_FAILED;
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      p = ::mmap(nullptr, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    }
    ::close(fd);
    if (p == MAP_FAILED) return {};
    testing::MappedFile m{static_cast<const uint8_t*>(p), uint64_t(st.st_size)};
    maps_.emplace(number, m);
    return m;
  }

 private:
  std::string dir_;
  std::string prefix_;
  std::map<uint64_t, testing::MappedFile> maps_;
};

// `files`: the segment file mappings of a binary_view region; null for a binary one.
SlotSeen DecodeSlot(const RingConsumer::Slot& slot, SegmentFileMaps* files = nullptr) {
  SlotSeen out;
  const SlotLayout& l = slot.layout;
  out.flags = l.flags;
  out.row_count = l.row_count;
  const uint8_t* offsets = slot.payload + l.offsets_offset;
  const uint8_t* data = slot.payload + l.data_offset;
  std::vector<std::string> view_rows;
  if (files != nullptr && l.flags == 0) {
    view_rows =
        testing::ReadViewRows(slot.payload, l, [&](uint64_t number) { return files->Map(number); });
    out.buffer_files = testing::BufferTable(slot.payload, l).size();
    out.copied_bytes = l.data_length;
  }
  uint32_t row = 0;
  for (uint32_t c = 0; c < l.chunk_count; ++c) {
    ns_shm_chunk_map_entry e;
    std::memcpy(&e, slot.payload + l.chunk_map_offset + c * sizeof e, sizeof e);
    out.entries.push_back(e);
    if (l.flags != 0) continue;  // a marker: the entry names a range, the slot has no rows
    ChunkSeen cs;
    cs.streamlet = e.streamlet;
    cs.at = Position{e.group, e.segment, e.byte_position};
    for (uint32_t r = 0; r < e.record_count; ++r, ++row) {
      if (files != nullptr) {
        if (row < view_rows.size()) cs.records.push_back(view_rows[row]);
        continue;
      }
      const uint32_t begin = LoadLe32(offsets + 4 * row);
      const uint32_t end = LoadLe32(offsets + 4 * (row + 1));
      cs.records.emplace_back(reinterpret_cast<const char*>(data + begin), end - begin);
    }
    out.chunks.push_back(std::move(cs));
  }
  EXPECT_EQ(row, l.row_count);
  return out;
}

// A consumer of one ring: reads and releases slots (unless told to hold them) and keeps what it
// read.
class Reader {
 public:
  Reader(ShmRegion* region, uint32_t ring) {
    auto c = RingConsumer::Attach(region, ring, MonotonicNowNs());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (c.ok()) consumer_.emplace(std::move(*c));
    if (region->header()->slot_format == NS_SHM_SLOT_FORMAT_BINARY_VIEW) {
      files_ = std::make_unique<SegmentFileMaps>(region);
    }
  }
  SegmentFileMaps* files() { return files_.get(); }
  bool attached() const { return consumer_.has_value(); }

  // Reads until `records` records in all were read or `timeout` passed.
  void ReadRecords(size_t records, std::chrono::milliseconds timeout = 10s) {
    ReadWhile([&] { return records_ < records; }, timeout);
  }
  void ReadSlots(size_t slots, std::chrono::milliseconds timeout = 10s) {
    ReadWhile([&] { return slots_.size() < slots; }, timeout);
  }

  // The records of `streamlet` in the order read.
  std::vector<std::string> Records(uint32_t streamlet) const {
    std::vector<std::string> out;
    for (const ChunkSeen& c : Chunks(streamlet)) {
      out.insert(out.end(), c.records.begin(), c.records.end());
    }
    return out;
  }
  std::vector<ChunkSeen> Chunks(uint32_t streamlet) const {
    std::vector<ChunkSeen> out;
    for (const SlotSeen& s : slots_) {
      for (const ChunkSeen& c : s.chunks) {
        if (c.streamlet == streamlet) out.push_back(c);
      }
    }
    return out;
  }
  const std::vector<SlotSeen>& slots() const { return slots_; }
  size_t records() const { return records_; }
  RingConsumer& consumer() { return *consumer_; }

 private:
  template <typename More>
  void ReadWhile(More more, std::chrono::milliseconds timeout) {
    ASSERT_TRUE(consumer_.has_value());
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (more() && std::chrono::steady_clock::now() < deadline) {
      consumer_->Heartbeat(MonotonicNowNs());
      auto slot = consumer_->TryNext();
      if (!slot) {
        (void)consumer_->Wait(20ms);
        continue;
      }
      slots_.push_back(DecodeSlot(*slot, files_.get()));
      records_ += slots_.back().row_count;
      ASSERT_TRUE(consumer_->Release(slot->position).ok());
    }
  }

  std::optional<RingConsumer> consumer_;
  std::unique_ptr<SegmentFileMaps> files_;
  std::vector<SlotSeen> slots_;
  size_t records_ = 0;
};

class PushManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(data_dir_.ok());
    ASSERT_TRUE(push_dir_.ok());
    storage::StoreOptions so;
    so.data_dir = data_dir_.path();
    store_ = std::make_unique<storage::StreamStore>(so);
    ASSERT_TRUE(store_->Open(0).ok());
  }
  void TearDown() override {
    if (manager_) manager_->Stop();
  }

  void StartManager(uint32_t linger_us = 1000, int threads = 1, bool segment_files_always = false) {
    PushOptions o;
    o.segment_files_always = segment_files_always;
    o.dir = push_dir_.path();
    o.threads = threads;
    o.broker_epoch = 42;
    o.linger_us = linger_us;
    manager_ = std::make_unique<PushManager>(o, store_.get());
    Status s = manager_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Small segments and groups of 2 segments by default, so the data crosses segment and group
  // boundaries.
  std::shared_ptr<storage::Stream> CreateStream(
      const std::string& name, uint32_t streamlets, uint32_t segment_bytes = 4096,
      storage::Durability durability = storage::Durability::kNone) {
    storage::StreamConfig config;
    config.name = name;
    config.streamlets = streamlets;
    config.segment_bytes = segment_bytes;
    config.segments_per_group = 2;
    config.active_groups = 1;
    config.durability = durability;
    Status s = store_->Create(config);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return store_->Find(name);
  }

  // Appends one chunk of `records` to `streamlet` as the broker does (append, NoteAppended,
  // NotifyAppend); returns where it went.
  Position AppendChunk(storage::Stream* stream, uint32_t streamlet,
                       const std::vector<std::string>& records) {
    storage::ChunkBuilder b;
    for (const std::string& r : records) b.Add(r);
    // First-record timestamp 1000 + the chunk's sequence number in this test.
    Bytes chunk = b.Finish(0, 0, 1000 + static_cast<int64_t>(next_seq_++));
    auto h = storage::ValidateChunk(chunk.data(), chunk.size());
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    if (!h.ok()) return Position{};
    auto r = stream->streamlet(streamlet)->Append(chunk.data(), *h, 0);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    stream->NoteAppended(streamlet);
    if (manager_) manager_->NotifyAppend(stream);
    return r.ok() ? r->position : Position{};
  }

  // Appends `chunks` chunks of `per_chunk` records of `record_bytes` bytes; returns the records.
  std::vector<std::string> Append(storage::Stream* stream, uint32_t streamlet, int chunks,
                                  int per_chunk = 5, size_t record_bytes = 60) {
    std::vector<std::string> all;
    for (int i = 0; i < chunks; ++i) {
      std::vector<std::string> records;
      for (int r = 0; r < per_chunk; ++r) {
        std::string rec = "s" + std::to_string(streamlet) + "-c" + std::to_string(next_seq_) +
                          "-r" + std::to_string(r) + "-";
        rec.resize(std::max(rec.size(), record_bytes), 'x');
        records.push_back(rec);
      }
      AppendChunk(stream, streamlet, records);
      all.insert(all.end(), records.begin(), records.end());
    }
    return all;
  }

  // A spec of one ring per entry of `rings` (ring i for subtask i), every split from the
  // earliest position.
  static SubscriptionSpec Spec(const std::string& stream, std::vector<std::vector<uint32_t>> rings,
                               uint32_t timeout_ms = 60000, uint32_t slot_bytes = 64 * 1024,
                               uint32_t slots_per_ring = 4) {
    SubscriptionSpec spec;
    spec.stream = stream;
    spec.slots_per_ring = slots_per_ring;
    spec.slot_bytes = slot_bytes;
    spec.consumer_timeout_ms = timeout_ms;
    for (size_t i = 0; i < rings.size(); ++i) {
      RingSpec ring;
      ring.subtask_index = static_cast<uint32_t>(i);
      for (uint32_t s : rings[i]) ring.splits.push_back({s, Position{}});
      spec.rings.push_back(std::move(ring));
    }
    return spec;
  }

  struct Sub {
    Subscribed subscribed;
    std::unique_ptr<ShmRegion> region;
  };
  // Subscribes on connection kConn and maps the region.
  Sub SubscribeAndMap(const SubscriptionSpec& spec) {
    Sub out;
    auto sub = manager_->Subscribe(kConn, spec);
    EXPECT_TRUE(sub.ok()) << sub.status().ToString();
    if (!sub.ok()) return out;
    out.subscribed = *sub;
    auto region = ShmRegion::Open(sub->region_path);
    EXPECT_TRUE(region.ok()) << region.status().ToString();
    if (region.ok()) out.region = std::move(*region);
    return out;
  }

  uint64_t Metric(const std::string& name) const {
    std::vector<std::pair<std::string, uint64_t>> values;
    manager_->CollectMetrics(&values);
    for (const auto& [n, v] : values) {
      if (n == name) return v;
    }
    ADD_FAILURE() << "no metric " << name;
    return 0;
  }

  // Waits up to `timeout` for metric `name` to reach `at_least`; returns its value.
  uint64_t AwaitMetric(const std::string& name, uint64_t at_least,
                       std::chrono::milliseconds timeout = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    uint64_t v = Metric(name);
    while (v < at_least && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(5ms);
      v = Metric(name);
    }
    return v;
  }

  testing::TempDir data_dir_{"nearstream-push-manager-data"};
  testing::TempDir push_dir_{"nearstream-push-manager-regions"};
  std::unique_ptr<storage::StreamStore> store_;
  std::unique_ptr<PushManager> manager_;
  uint64_t next_seq_ = 0;
};

// Several splits per ring, a memory-only and a durable stream: every record is pushed once, in
// its streamlet's order, in chunks at the positions a Fetch (Streamlet::Read) gives; appends after
// the subscription are pushed too.
TEST_F(PushManagerTest, PushesEverySplitInOrderAtTheFetchPositions) {
  StartManager();
  for (auto durability : {storage::Durability::kNone, storage::Durability::kSync}) {
    const std::string name = std::string("s-") + storage::DurabilityName(durability);
    SCOPED_TRACE(name);
    auto stream = CreateStream(name, 3, 4096, durability);
    ASSERT_NE(stream, nullptr);
    for (uint32_t s = 0; s < 3; ++s) Append(stream.get(), s, 20);

    Sub sub = SubscribeAndMap(Spec(name, {{0, 1}, {2}}));
    ASSERT_NE(sub.region, nullptr);
    EXPECT_EQ(sub.subscribed.broker_epoch, 42u);
    EXPECT_EQ(sub.subscribed.region_bytes, sub.region->size());
    EXPECT_EQ(sub.subscribed.region_path.rfind(push_dir_.path() + "/nearstream-push-", 0), 0u)
        << sub.subscribed.region_path;
    EXPECT_EQ(sub.region->geometry().ring_count, 2u);
    EXPECT_EQ(sub.region->ring(1)->subtask_index, 1u);

    Reader r0(sub.region.get(), 0), r1(sub.region.get(), 1);
    r0.ReadRecords(2 * 20 * 5);
    r1.ReadRecords(20 * 5);
    for (uint32_t s = 0; s < 3; ++s) Append(stream.get(), s, 25);
    r0.ReadRecords(2 * 45 * 5);
    r1.ReadRecords(45 * 5);

    for (uint32_t s = 0; s < 3; ++s) {
      SCOPED_TRACE("streamlet " + std::to_string(s));
      const std::vector<ChunkSeen> want = ReadStreamlet(stream->streamlet(s), s);
      ASSERT_EQ(want.size(), 45u);
      EXPECT_GT(want.back().at.group, 2u);  // several groups: the push crossed their boundaries
      EXPECT_EQ((s < 2 ? r0 : r1).Chunks(s), want);
    }
    EXPECT_TRUE(r0.Chunks(2).empty());
    EXPECT_TRUE(r1.Chunks(0).empty() && r1.Chunks(1).empty());
    EXPECT_EQ(r0.records() + r1.records(), 3u * 45 * 5);
  }
  // The push thread counts a slot's records just after publishing it: a consumer can be faster.
  EXPECT_GE(AwaitMetric("nearstream_push_records_total", 2u * 3 * 45 * 5), 2u * 3 * 45 * 5);
  EXPECT_EQ(Metric("nearstream_push_subscriptions"), 2u);
}

// Ring 0's consumer never releases: its ring fills, and ring 1 is still served, also for data
// appended while ring 0 stays full.
TEST_F(PushManagerTest, AFullRingDoesNotBlockAnotherRing) {
  StartManager();
  auto stream = CreateStream("s", 2, 1 << 20);
  // 10 KB chunks: about 6 per 64 KiB slot, so 40 of them overfill a ring of 4 slots.
  Append(stream.get(), 0, 40, 10, 1000);
  auto want1 = Append(stream.get(), 1, 40, 10, 1000);
  Sub sub = SubscribeAndMap(Spec("s", {{0}, {1}}));
  ASSERT_NE(sub.region, nullptr);
  Reader stuck(sub.region.get(), 0);  // attached, never reading
  Reader r1(sub.region.get(), 1);
  r1.ReadRecords(want1.size());
  EXPECT_EQ(r1.Records(1), want1);
  auto more = Append(stream.get(), 1, 5, 10, 1000);
  want1.insert(want1.end(), more.begin(), more.end());
  r1.ReadRecords(want1.size(), 5s);
  EXPECT_EQ(r1.Records(1), want1);
  // Ring 0 holds all its 4 slots published and unreleased.
  for (uint32_t s = 0; s < 4; ++s) {
    EXPECT_EQ(std::atomic_ref<uint64_t>(sub.region->descriptor(0, s)->sequence).load(), s + 1u)
        << "slot " << s;
  }
  EXPECT_EQ(std::atomic_ref<uint64_t>(sub.region->ring(0)->published).load(), 4u);
}

// An update: a split that stays (moved to another ring, asked to start at the earliest position)
// keeps its push position; a split new to the subscription starts at the start it names.
TEST_F(PushManagerTest, UpdateKeepsAStayingSplitAndStartsANewOneAtItsStart) {
  StartManager();
  auto stream = CreateStream("s", 3);
  std::map<uint32_t, std::vector<std::string>> want;
  for (uint32_t s = 0; s < 3; ++s) want[s] = Append(stream.get(), s, 10);
  Sub sub = SubscribeAndMap(Spec("s", {{0, 1}, {}}));
  ASSERT_NE(sub.region, nullptr);
  Reader r0(sub.region.get(), 0), r1(sub.region.get(), 1);
  r0.ReadRecords(2 * 10 * 5);
  ASSERT_EQ(r0.records(), 100u);

  // Streamlet 2 joins at its 4th chunk.
  const std::vector<ChunkSeen> chunks2 = ReadStreamlet(stream->streamlet(2), 2);
  ASSERT_EQ(chunks2.size(), 10u);
  std::vector<RingSpec> rings(2);
  rings[0].subtask_index = 0;
  rings[0].splits.push_back({0, Position{}});
  rings[1].subtask_index = 1;
  rings[1].splits.push_back({1, Position{}});  // stays: keeps its position, not the earliest
  rings[1].splits.push_back({2, chunks2[3].at});
  Status s = manager_->Update(kConn, sub.subscribed.id, rings);
  ASSERT_TRUE(s.ok()) << s.ToString();
  r1.ReadRecords(7 * 5);  // streamlet 2 from its 4th chunk
  for (uint32_t sl = 0; sl < 2; ++sl) {
    auto more = Append(stream.get(), sl, 10);
    want[sl].insert(want[sl].end(), more.begin(), more.end());
  }
  r0.ReadRecords(100 + 50);
  r1.ReadRecords(7 * 5 + 50);
  r1.ReadRecords(7 * 5 + 50 + 1, 200ms);  // and nothing more comes

  EXPECT_EQ(r0.Records(0), want[0]);
  std::vector<std::string> s1 = r0.Records(1);
  EXPECT_EQ(s1.size(), 50u);  // what was pushed before the update
  const std::vector<std::string> after = r1.Records(1);
  EXPECT_EQ(after.size(), 50u) << "the staying split was pushed again from the earliest position";
  s1.insert(s1.end(), after.begin(), after.end());
  EXPECT_EQ(s1, want[1]);
  EXPECT_EQ(r1.Records(2), std::vector<std::string>(want[2].begin() + 15, want[2].end()));
  EXPECT_EQ(r1.Chunks(2).front().at, chunks2[3].at);
  EXPECT_TRUE(r1.Records(0).empty());
}

// Two updates queued before the push thread applies either (it lingers after a part-filled slot,
// a plain sleep): they act as if applied in turn. The first drops split 1, the second adds it
// back, so it restarts at its start instead of keeping the position it had before both.
TEST_F(PushManagerTest, QueuedUpdatesFoldAsIfAppliedInTurn) {
  StartManager(/*linger_us=*/300'000);
  auto stream = CreateStream("s", 2);
  std::map<uint32_t, std::vector<std::string>> want;
  for (uint32_t s = 0; s < 2; ++s) want[s] = Append(stream.get(), s, 4);
  Sub sub = SubscribeAndMap(Spec("s", {{0, 1}}));
  ASSERT_NE(sub.region, nullptr);
  Reader r(sub.region.get(), 0);
  r.ReadRecords(2 * 4 * 5);  // one part-filled slot: the thread now lingers 300 ms
  ASSERT_EQ(r.records(), 40u);
  ASSERT_EQ(r.slots().size(), 1u);

  std::vector<RingSpec> pause(1);
  pause[0].splits.push_back({0, Position{}});
  std::vector<RingSpec> resume = pause;
  resume[0].splits.push_back({1, Position{}});
  ASSERT_TRUE(manager_->Update(kConn, sub.subscribed.id, pause).ok());
  ASSERT_TRUE(manager_->Update(kConn, sub.subscribed.id, resume).ok());
  r.ReadRecords(40 + 20);

  EXPECT_EQ(r.Records(0), want[0]);
  std::vector<std::string> twice = want[1];
  twice.insert(twice.end(), want[1].begin(), want[1].end());
  EXPECT_EQ(r.Records(1), twice) << "split 1 resumed: pushed again from its start";
}

// Close (by the owning connection) and ConnectionClosed unlink the region and mark it closed;
// another connection's subscription is left alone.
TEST_F(PushManagerTest, CloseAndConnectionClosedUnlinkTheRegion) {
  StartManager();
  auto stream = CreateStream("s", 2);
  Sub a = SubscribeAndMap(Spec("s", {{0}}));
  Sub b = SubscribeAndMap(Spec("s", {{1}}));
  ASSERT_NE(a.region, nullptr);
  ASSERT_NE(b.region, nullptr);
  auto other = manager_->Subscribe(kConn + 1, Spec("s", {{0, 1}}));
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(manager_->subscriptions(), 3u);

  // Only the owning connection may close it.
  EXPECT_EQ(manager_->Close(kConn + 1, a.subscribed.id).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(FileExists(a.subscribed.region_path));
  EXPECT_EQ(a.region->region_state(), NS_SHM_REGION_OPEN);
  ASSERT_TRUE(manager_->Close(kConn, a.subscribed.id).ok());
  EXPECT_FALSE(FileExists(a.subscribed.region_path));
  EXPECT_EQ(a.region->region_state(), NS_SHM_REGION_CLOSED);
  EXPECT_EQ(manager_->Close(kConn, a.subscribed.id).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(manager_->subscriptions(), 2u);

  manager_->ConnectionClosed(kConn);
  EXPECT_FALSE(FileExists(b.subscribed.region_path));
  EXPECT_EQ(b.region->region_state(), NS_SHM_REGION_CLOSED);
  EXPECT_TRUE(FileExists(other->region_path));
  EXPECT_EQ(manager_->subscriptions(), 1u);
  EXPECT_EQ(FilesIn(push_dir_.path()).size(), 1u);
}

// A consumer that stops heartbeating loses its ring after the consumer timeout: the ring is
// reclaimed once and re-activated (generation 2), and while nobody attaches it is not reclaimed
// again. A new consumer gets what is appended afterwards (not the slots the dead one was sent);
// once it too goes silent the ring is reclaimed again.
TEST_F(PushManagerTest, AStaleConsumersRingIsReclaimedOnceThenLeftAloneUntilSomeoneAttaches) {
  constexpr uint32_t kTimeoutMs = 300;
  StartManager();
  auto stream = CreateStream("s", 1);
  Append(stream.get(), 0, 2);
  Sub sub = SubscribeAndMap(Spec("s", {{0}}, kTimeoutMs));
  ASSERT_NE(sub.region, nullptr);
  {
    Reader dead(sub.region.get(), 0);
    ASSERT_TRUE(dead.attached());
    EXPECT_EQ(std::atomic_ref<uint32_t>(sub.region->ring(0)->generation).load(), 1u);
  }  // attached (one heartbeat), then silent
  ASSERT_EQ(AwaitMetric("nearstream_push_rings_reclaimed_total", 1), 1u);
  EXPECT_EQ(std::atomic_ref<uint32_t>(sub.region->ring(0)->state).load(), NS_SHM_RING_ACTIVE);
  EXPECT_EQ(std::atomic_ref<uint32_t>(sub.region->ring(0)->generation).load(), 2u);

  // Five timeouts with nobody attached: left alone.
  std::this_thread::sleep_for(std::chrono::milliseconds(5 * kTimeoutMs));
  EXPECT_EQ(Metric("nearstream_push_rings_reclaimed_total"), 1u);
  EXPECT_EQ(std::atomic_ref<uint32_t>(sub.region->ring(0)->generation).load(), 2u);

  Reader fresh(sub.region.get(), 0);
  ASSERT_TRUE(fresh.attached());
  auto more = Append(stream.get(), 0, 1);
  fresh.ReadRecords(more.size());
  EXPECT_EQ(fresh.Records(0), more);
  fresh.ReadRecords(more.size() + 1, 200ms);  // nothing else comes
  EXPECT_EQ(fresh.records(), more.size());

  // The new consumer goes silent too: reclaimed again.
  EXPECT_EQ(AwaitMetric("nearstream_push_rings_reclaimed_total", 2), 2u);
  EXPECT_EQ(std::atomic_ref<uint32_t>(sub.region->ring(0)->generation).load(), 3u);
}

// A chunk whose batch cannot fit a slot goes out as a FETCH_CHUNK marker slot in its place: no
// rows, one chunk map entry with the chunk's position, size, record count and timestamp; the
// chunks around it come as batches, in order.
TEST_F(PushManagerTest, AChunkTooLargeForTheSlotComesAsAFetchChunkMarker) {
  StartManager();
  auto stream = CreateStream("s", 1, 1 << 20);
  const std::vector<std::string> before = {"before-1", "before-2"};
  const std::vector<std::string> big = {std::string(40000, 'a'), std::string(40000, 'b')};
  const std::vector<std::string> after = {"after-1"};
  AppendChunk(stream.get(), 0, before);
  const Position big_at = AppendChunk(stream.get(), 0, big);
  AppendChunk(stream.get(), 0, after);
  const std::vector<ChunkSeen> chunks = ReadStreamlet(stream->streamlet(0), 0);
  ASSERT_EQ(chunks.size(), 3u);
  ASSERT_EQ(chunks[1].at, big_at);

  Sub sub = SubscribeAndMap(Spec("s", {{0}}));
  ASSERT_NE(sub.region, nullptr);
  Reader r(sub.region.get(), 0);
  r.ReadSlots(3);
  ASSERT_EQ(r.slots().size(), 3u);

  const SlotSeen& first = r.slots()[0];
  EXPECT_EQ(first.flags, 0u);
  ASSERT_EQ(first.chunks.size(), 1u);
  EXPECT_EQ(first.chunks[0], chunks[0]);

  const SlotSeen& marker = r.slots()[1];
  EXPECT_EQ(marker.flags, NS_SHM_SLOT_FETCH_CHUNK);
  EXPECT_EQ(marker.row_count, 0u);
  ASSERT_EQ(marker.entries.size(), 1u);
  const ns_shm_chunk_map_entry& e = marker.entries[0];
  EXPECT_EQ(e.streamlet, 0u);
  EXPECT_EQ((Position{e.group, e.segment, e.byte_position}), big_at);
  uint32_t big_bytes = storage::kChunkHeaderSize;
  for (const std::string& rec : big) big_bytes += storage::kRecordLengthPrefix + rec.size();
  EXPECT_EQ(e.chunk_bytes, big_bytes);
  EXPECT_EQ(e.record_count, 2u);
  EXPECT_EQ(e.first_timestamp_ms, 1001);
  // What a Fetch at the marker's position returns is the big chunk.
  EXPECT_EQ(chunks[1].records, big);

  const SlotSeen& last = r.slots()[2];
  EXPECT_EQ(last.flags, 0u);
  ASSERT_EQ(last.chunks.size(), 1u);
  EXPECT_EQ(last.chunks[0], chunks[2]);
  EXPECT_EQ(Metric("nearstream_push_chunks_by_fetch_total"), 1u);
}

// The geometry bounds of shm_layout.h: INVALID_ARGUMENT just outside each of them, and no region
// file made; accepted on the bounds themselves.
TEST_F(PushManagerTest, GeometryOutsideTheBoundsIsRefused) {
  StartManager();
  auto stream = CreateStream("s", 2);
  auto refused = [&](const SubscriptionSpec& spec, const std::string& why) {
    auto r = manager_->Subscribe(kConn, spec);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << why;
  };
  auto accepted = [&](const SubscriptionSpec& spec, const std::string& why) {
    auto r = manager_->Subscribe(kConn, spec);
    ASSERT_TRUE(r.ok()) << why << ": " << r.status().ToString();
    EXPECT_TRUE(manager_->Close(kConn, r->id).ok());
  };
  SubscriptionSpec spec = Spec("s", {{0}});
  spec.slots_per_ring = NS_SHM_MIN_SLOTS_PER_RING - 1;
  refused(spec, "too few slots");
  spec.slots_per_ring = NS_SHM_MAX_SLOTS_PER_RING + 1;
  refused(spec, "too many slots");
  spec = Spec("s", {{0}}, 1000, NS_SHM_MIN_SLOT_BYTES - NS_SHM_BUFFER_ALIGNMENT);
  refused(spec, "slot too small");
  spec = Spec("s", {{0}}, 1000, NS_SHM_MIN_SLOT_BYTES + 1);
  refused(spec, "slot not a multiple of 64");
  spec = Spec("s", {{0}}, 1000, NS_SHM_MAX_PUSH_SLOT_BYTES + NS_SHM_BUFFER_ALIGNMENT);
  refused(spec, "slot too large");
  refused(Spec("s", {}), "no ring");
  spec = Spec("s", {{0}});
  spec.rings.resize(NS_SHM_MAX_RINGS + 1);
  refused(spec, "too many rings");
  // 16 rings of 1024 slots of 1 MiB: each bound alone is kept, the region would be 16 GiB + .
  spec = Spec("s", {{0}}, 1000, 1 << 20, NS_SHM_MAX_SLOTS_PER_RING);
  spec.rings.resize(NS_SHM_MAX_REGION_BYTES / (uint64_t{NS_SHM_MAX_SLOTS_PER_RING} << 20));
  ASSERT_GT(ns_shm_region_bytes(static_cast<uint32_t>(spec.rings.size()), spec.slots_per_ring,
                                spec.slot_bytes),
            NS_SHM_MAX_REGION_BYTES);
  refused(spec, "region too large");
  EXPECT_TRUE(FilesIn(push_dir_.path()).empty());
  EXPECT_EQ(manager_->subscriptions(), 0u);

  spec = Spec("s", {{0}}, 1000, NS_SHM_MIN_SLOT_BYTES, NS_SHM_MIN_SLOTS_PER_RING);
  accepted(spec, "the smallest geometry");
  spec = Spec("s", {{0}}, 1000, NS_SHM_MIN_SLOT_BYTES, NS_SHM_MAX_SLOTS_PER_RING);
  accepted(spec, "the most slots");
  spec = Spec("s", {{0}}, 1000, NS_SHM_MAX_PUSH_SLOT_BYTES, NS_SHM_MIN_SLOTS_PER_RING);
  accepted(spec, "the largest slots");
  spec = Spec("s", {{0}, {1}}, 1000, NS_SHM_MIN_SLOT_BYTES, NS_SHM_MIN_SLOTS_PER_RING);
  spec.rings.resize(NS_SHM_MAX_RINGS);
  accepted(spec, "the most rings");
  EXPECT_TRUE(FilesIn(push_dir_.path()).empty());
}

// Stop ends every subscription: nothing is left in the push directory, and later subscribes are
// refused.
TEST_F(PushManagerTest, StopLeavesNoFileInThePushDir) {
  StartManager(1000, /*threads=*/2);
  auto stream = CreateStream("s", 2);
  Append(stream.get(), 0, 3);
  for (uint64_t conn = 1; conn <= 3; ++conn) {
    auto r = manager_->Subscribe(conn, Spec("s", {{0}, {1}}));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  Sub mapped = SubscribeAndMap(Spec("s", {{0, 1}}));
  ASSERT_NE(mapped.region, nullptr);
  Reader r(mapped.region.get(), 0);
  r.ReadRecords(15);
  EXPECT_EQ(FilesIn(push_dir_.path()).size(), 4u);
  manager_->Stop();
  EXPECT_TRUE(FilesIn(push_dir_.path()).empty());
  EXPECT_EQ(mapped.region->region_state(), NS_SHM_REGION_CLOSED);
  EXPECT_EQ(manager_->subscriptions(), 0u);
  EXPECT_EQ(manager_->Subscribe(kConn, Spec("s", {{0}})).status().code(),
            StatusCode::kShuttingDown);
  EXPECT_TRUE(FilesIn(push_dir_.path()).empty());
}

// A view subscription: new segments live in segment files named by the region header, views
// point into them (records of at most 12 bytes inline), and the records of segments made before
// the subscription arrive as copies in buffer 0. Every record arrives once, at its position.
TEST_F(PushManagerTest, AViewSubscriptionPointsIntoSegmentFilesAndCopiesOlderSegmentsRecords) {
  StartManager();
  for (auto durability : {storage::Durability::kNone, storage::Durability::kSync}) {
    const std::string name = std::string("v-") + storage::DurabilityName(durability);
    SCOPED_TRACE(name);
    auto stream = CreateStream(name, 2, 4096, durability);
    ASSERT_NE(stream, nullptr);
    Append(stream.get(), 0, 6);  // before the subscription: private memory

    SubscriptionSpec spec = Spec(name, {{0, 1}});
    spec.slot_format = NS_SHM_SLOT_FORMAT_BINARY_VIEW;
    Sub sub = SubscribeAndMap(spec);
    ASSERT_NE(sub.region, nullptr);
    EXPECT_EQ(sub.region->header()->slot_format, NS_SHM_SLOT_FORMAT_BINARY_VIEW);
    EXPECT_EQ(std::string(sub.region->header()->segment_file_prefix),
              "nearstream-seg-" + std::to_string(::getpid()) + "-");
    Reader r(sub.region.get(), 0);
    ASSERT_TRUE(r.attached());

    Append(stream.get(), 0, 20, 5, 300);
    for (int i = 0; i < 30; ++i) {
      AppendChunk(stream.get(), 1,
                  {"", "a", "twelve bytes", "thirteen byte", std::string(200, 'z')});
    }
    const size_t total = 26 * 5 + 30 * 5;
    r.ReadRecords(total);
    for (uint32_t s = 0; s < 2; ++s) {
      SCOPED_TRACE("streamlet " + std::to_string(s));
      const std::vector<ChunkSeen> want = ReadStreamlet(stream->streamlet(s), s);
      EXPECT_GE(want.back().at.group, 2u);  // across segments and groups
      EXPECT_EQ(r.Chunks(s), want);
    }
    EXPECT_EQ(r.records(), total);
    bool pointed = false, copied = false;
    for (const SlotSeen& slot : r.slots()) {
      pointed |= slot.buffer_files > 0;
      copied |= slot.copied_bytes > 0;
    }
    EXPECT_TRUE(pointed) << "no view pointed into a segment file";
    EXPECT_TRUE(copied) << "the older segments' records were not copied";
  }
  EXPECT_GT(Metric("nearstream_push_view_slots_total"), 0u);
  EXPECT_GT(Metric("nearstream_push_segment_files_created_total"), 0u);
  EXPECT_EQ(Metric("nearstream_push_segment_file_failures_total"), 0u);
  // The segments are still alive (their streams are), but their names go with the broker.
  manager_->Stop();
  EXPECT_TRUE(FilesIn(push_dir_.path()).empty());
}

// Confined to one CPU (the affinity of the thread that starts it, which its threads inherit), the
// broker's push threads do not spin before sleeping: the spin would only take that CPU from the
// workers whose appends they wait for.
TEST_F(PushManagerTest, PushThreadsDoNotSpinOnASingleCpu) {
  cpu_set_t all;
  ASSERT_EQ(::sched_getaffinity(0, sizeof all, &all), 0);
  {
    PushOptions o;
    o.dir = push_dir_.path();
    PushManager spread(o, store_.get());
    ASSERT_TRUE(spread.Start().ok());
    EXPECT_EQ(spread.spins(), CPU_COUNT(&all) > 1 ? kDefaultSpins : 0);
  }
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
  PushOptions o;
  o.dir = push_dir_.path();
  PushManager pinned(o, store_.get());
  Status s = pinned.Start();
  ASSERT_EQ(::sched_setaffinity(0, sizeof all, &all), 0);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(pinned.spins(), 0);
}

// With segment files always on, segments made before any subscription are files too: a view
// subscription then copies nothing.
TEST_F(PushManagerTest, WithSegmentFilesAlwaysAViewSubscriptionCopiesNothing) {
  StartManager(1000, 1, /*segment_files_always=*/true);
  auto stream = CreateStream("always", 1);
  Append(stream.get(), 0, 12, 5, 100);
  SubscriptionSpec spec = Spec("always", {{0}});
  spec.slot_format = NS_SHM_SLOT_FORMAT_BINARY_VIEW;
  Sub sub = SubscribeAndMap(spec);
  ASSERT_NE(sub.region, nullptr);
  Reader r(sub.region.get(), 0);
  r.ReadRecords(60);
  EXPECT_EQ(r.Chunks(0), ReadStreamlet(stream->streamlet(0), 0));
  for (const SlotSeen& slot : r.slots()) {
    EXPECT_EQ(slot.copied_bytes, 0u);
    EXPECT_GT(slot.buffer_files, 0u);
  }
}

// A slot the consumer has not released keeps the segment files its views point into: retention
// drops the segment from the stream, new segments of the same size are made, and the held slot
// still reads its own records. Without the pin the dropped segment's file would be reused at once.
TEST_F(PushManagerTest, ASegmentFileNamedByAnUnreleasedSlotOutlivesRetention) {
  StartManager();
  storage::StreamConfig config;
  config.name = "r";
  config.streamlets = 1;
  config.segment_bytes = 4096;
  config.segments_per_group = 2;
  config.active_groups = 1;
  config.retention_bytes = 8192;
  ASSERT_TRUE(store_->Create(config).ok());
  auto stream = store_->Find("r");
  SubscriptionSpec spec = Spec("r", {{0}}, 60000, 64 * 1024, /*slots_per_ring=*/2);
  spec.slot_format = NS_SHM_SLOT_FORMAT_BINARY_VIEW;
  Sub sub = SubscribeAndMap(spec);
  ASSERT_NE(sub.region, nullptr);
  Reader r(sub.region.get(), 0);
  ASSERT_TRUE(r.attached());

  std::vector<std::string> first(10);
  for (size_t i = 0; i < first.size(); ++i) first[i] = "first-" + std::string(100, char('a' + i));
  const Position at = AppendChunk(stream.get(), 0, first);
  std::optional<RingConsumer::Slot> held;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!held && std::chrono::steady_clock::now() < deadline) {
    r.consumer().Heartbeat(MonotonicNowNs());
    held = r.consumer().TryNext();
    if (!held) (void)r.consumer().Wait(20ms);
  }
  ASSERT_TRUE(held.has_value());
  SlotSeen before = DecodeSlot(*held, r.files());
  ASSERT_EQ(before.chunks.size(), 1u);
  ASSERT_EQ(before.chunks[0].records, first);
  ASSERT_EQ(before.buffer_files, 1u);

  // Five times the retention limit, with retention applied as the broker's maintenance does.
  for (int i = 0; i < 40; ++i) {
    Append(stream.get(), 0, 1, 10, 100);
    store_->Maintain(0);
  }
  const std::vector<ChunkSeen> kept = ReadStreamlet(stream->streamlet(0), 0);
  ASSERT_FALSE(kept.empty());
  EXPECT_NE(kept.front().at, at) << "retention did not drop the first segment";

  SlotSeen after = DecodeSlot(*held, r.files());
  ASSERT_EQ(after.chunks.size(), 1u);
  EXPECT_EQ(after.chunks[0].records, first);
  ASSERT_TRUE(r.consumer().Release(held->position).ok());
}

}  // namespace
}  // namespace nearstream::push
