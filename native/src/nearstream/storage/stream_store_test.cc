#include "nearstream/storage/stream_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "nearstream/storage/chunk.h"
#include "nearstream/testing/fault_injection_env.h"

namespace nearstream::storage {

namespace {

namespace fs = std::filesystem;

constexpr uint32_t kBig = 1u << 30;

Bytes MakeChunk(uint64_t producer, uint64_t sequence, uint32_t size = 1000) {
  const uint32_t record_size = size - kChunkHeaderSize - kRecordLengthPrefix;
  std::string record(record_size, 'a');
  for (uint32_t i = 0; i < record_size; ++i) {
    record[i] = static_cast<char>('a' + (producer * 131 + sequence * 7 + i) % 26);
  }
  ChunkBuilder b;
  b.Add(record);
  return b.Finish(producer, sequence, 1700000000000);
}

Result<AppendOutcome> AppendChunk(Streamlet* s, const Bytes& chunk, int64_t now_ms = 0) {
  auto h = ValidateChunk(chunk.data(), chunk.size());
  if (!h.ok()) return h.status();
  return s->Append(chunk.data(), *h, now_ms);
}

struct ReadChunk {
  Position at;
  Bytes bytes;
  bool operator==(const ReadChunk& o) const { return at == o.at && bytes == o.bytes; }
};

void PrintTo(const ReadChunk& c, std::ostream* os) {
  *os << "{" << c.at.ToString() << ", " << c.bytes.size() << " bytes}";
}

// Everything a streamlet returns from its earliest position, chunk by chunk, each one validated.
std::vector<ReadChunk> ReadAll(const Streamlet* s) {
  std::vector<ReadChunk> out;
  Position from;
  for (int i = 0; i < 100000; ++i) {
    auto r = s->Read(from, kBig, [&](const Position& at, const uint8_t* data, uint32_t size) {
      uint32_t off = 0;
      while (off < size) {
        auto h = DecodeChunkHeader(data + off, size - off);
        if (!h.ok() || !ValidateChunk(data + off, h->total_size()).ok()) {
          ADD_FAILURE() << "corrupt chunk handed out at " << at.ToString() << " +" << off;
          return;
        }
        out.push_back({Position{at.group, at.segment, at.offset + off},
                       Bytes(data + off, data + off + h->total_size())});
        off += h->total_size();
      }
    });
    if (!r.ok()) {
      ADD_FAILURE() << r.status().ToString();
      break;
    }
    from = r->next;
    if (r->bytes == 0) break;
  }
  return out;
}

void SortByPosition(std::vector<ReadChunk>* v) {
  std::sort(v->begin(), v->end(),
            [](const ReadChunk& a, const ReadChunk& b) { return a.at < b.at; });
}

StreamConfig Config(const std::string& name, Durability d, uint32_t streamlets = 1) {
  StreamConfig c;
  c.name = name;
  c.streamlets = streamlets;
  c.segment_bytes = 4096;
  c.segments_per_group = 2;
  c.active_groups = 1;
  c.durability = d;
  return c;
}

class StreamStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nearstream_store_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    data_ = root_ + "/data";
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  StoreOptions Options() const {
    StoreOptions o;
    o.data_dir = data_;
    o.env = const_cast<FaultInjectionEnv*>(&env_);
    o.group_idle_close_ms = 1000;
    return o;
  }
  // (Re)opens store_ on data_, as a restarted broker would.
  void Reopen(int64_t now_ms = 0) {
    store_.reset();
    store_ = std::make_unique<StreamStore>(Options());
    Status s = store_->Open(now_ms);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // Power loss: the broker is gone, unsynced bytes (and directory entries) with it.
  void PowerLoss(uint64_t keep_unsynced_bytes = 0, bool drop_dir_entries = true) {
    store_.reset();
    ASSERT_TRUE(env_.DropUnsyncedData(keep_unsynced_bytes).ok());
    if (drop_dir_entries) {
      ASSERT_TRUE(env_.DropUnsyncedDirEntries().ok());
    }
  }
  Streamlet* StreamletOf(const std::string& name, uint32_t id) {
    auto stream = store_->Find(name);
    return stream == nullptr ? nullptr : stream->streamlet(id);
  }
  std::string StreamDir(const std::string& name) const { return data_ + "/streams/" + name; }

  std::string root_;
  std::string data_;
  FaultInjectionEnv env_{Env::Default()};
  std::unique_ptr<StreamStore> store_;
};

// ---------------------------------------------------------------------------------------------
// The catalog

TEST_F(StreamStoreTest, CreateFindListDelete) {
  Reopen();
  EXPECT_TRUE(store_->List().empty());
  EXPECT_EQ(store_->Find("a"), nullptr);
  ASSERT_TRUE(store_->Create(Config("b", Durability::kNone, 3)).ok());
  ASSERT_TRUE(store_->Create(Config("a", Durability::kSync)).ok());
  EXPECT_EQ(store_->List(), (std::vector<std::string>{"a", "b"}));
  auto b = store_->Find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->config().name, "b");
  EXPECT_EQ(b->streamlet_count(), 3u);
  EXPECT_NE(b->streamlet(2), nullptr);
  EXPECT_EQ(b->streamlet(3), nullptr);

  EXPECT_EQ(store_->Create(Config("b", Durability::kNone)).code(), StatusCode::kStreamExists);
  EXPECT_EQ(store_->Create(Config("a", Durability::kNone)).code(), StatusCode::kStreamExists);

  ASSERT_TRUE(AppendChunk(b->streamlet(0), MakeChunk(0, 0)).ok());
  ASSERT_TRUE(store_->Delete("b").ok());
  EXPECT_TRUE(b->deleted());  // holders of the old reference learn it is gone
  EXPECT_EQ(store_->Find("b"), nullptr);
  EXPECT_EQ(store_->List(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(store_->Delete("b").code(), StatusCode::kStreamNotFound);
  // The name can be used again, for a fresh stream.
  ASSERT_TRUE(store_->Create(Config("b", Durability::kNone)).ok());
  EXPECT_TRUE(ReadAll(StreamletOf("b", 0)).empty());
}

TEST_F(StreamStoreTest, InvalidNamesAreRejected) {
  Reopen();
  for (const std::string& name :
       {std::string(), std::string(".hidden"), std::string(".."), std::string("a/b"),
        std::string("a b"), std::string("naïve"), std::string(201, 'x'), std::string("a\nb")}) {
    Status s = store_->Create(Config(name, Durability::kSync));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << "'" << name << "': " << s.ToString();
  }
  EXPECT_TRUE(store_->Create(Config(std::string(200, 'x'), Durability::kSync)).ok());
  EXPECT_TRUE(store_->Create(Config("A-z_0.9", Durability::kSync)).ok());
  EXPECT_EQ(store_->List().size(), 2u);
}

TEST_F(StreamStoreTest, InvalidConfigsAreRejected) {
  Reopen();
  std::vector<StreamConfig> bad;
  auto with = [&](auto change) {
    StreamConfig c = Config("s", Durability::kNone);
    change(c);
    bad.push_back(c);
  };
  with([](StreamConfig& c) { c.streamlets = 0; });
  with([](StreamConfig& c) { c.streamlets = 65537; });
  with([](StreamConfig& c) { c.segment_bytes = 4095; });
  with([](StreamConfig& c) { c.segment_bytes = (1u << 30) + 1; });
  with([](StreamConfig& c) { c.segments_per_group = 0; });
  with([](StreamConfig& c) { c.active_groups = 0; });
  with([](StreamConfig& c) { c.active_groups = 1025; });
  with([](StreamConfig& c) { c.durability = static_cast<Durability>(3); });
  with([](StreamConfig& c) { c.retention_bytes = 0; });
  with([](StreamConfig& c) { c.retention_bytes = -2; });
  with([](StreamConfig& c) { c.retention_ms = 0; });
  with([](StreamConfig& c) { c.retention_ms = -5; });
  for (const auto& c : bad) {
    Status s = store_->Create(c);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << FormatStreamMeta(c);
    EXPECT_FALSE(s.message().empty());
  }
  EXPECT_TRUE(store_->List().empty());
  EXPECT_FALSE(fs::exists(StreamDir("s")));
}

TEST_F(StreamStoreTest, DurableStreamNeedsADataDir) {
  StoreOptions o;
  o.env = &env_;
  StreamStore store(o);
  ASSERT_TRUE(store.Open(0).ok());
  for (Durability d : {Durability::kAsync, Durability::kSync}) {
    Status s = store.Create(Config("s", d));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("data-dir"), std::string::npos) << s.ToString();
  }
  EXPECT_TRUE(store.Create(Config("s", Durability::kNone)).ok());
}

TEST_F(StreamStoreTest, DurableStreamsSurviveReopenMemoryOnlyOnesDoNot) {
  Reopen();
  ASSERT_TRUE(store_->Create(Config("mem", Durability::kNone)).ok());
  ASSERT_TRUE(store_->Create(Config("as", Durability::kAsync)).ok());
  ASSERT_TRUE(store_->Create(Config("sy", Durability::kSync)).ok());
  for (const char* name : {"mem", "as", "sy"}) {
    ASSERT_TRUE(AppendChunk(StreamletOf(name, 0), MakeChunk(0, 0)).ok());
  }
  EXPECT_FALSE(fs::exists(StreamDir("mem")));  // durability none: no files at all
  Reopen();
  EXPECT_EQ(store_->List(), (std::vector<std::string>{"as", "sy"}));
  for (const char* name : {"as", "sy"}) {
    auto stream = store_->Find(name);
    ASSERT_NE(stream, nullptr);
    StreamConfig want = Config(name, stream->config().durability);
    EXPECT_EQ(FormatStreamMeta(stream->config()), FormatStreamMeta(want));
    std::vector<ReadChunk> got = ReadAll(stream->streamlet(0));
    ASSERT_EQ(got.size(), 1u) << name;
    EXPECT_EQ(got[0].bytes, MakeChunk(0, 0));
  }
  EXPECT_EQ(store_->Find("as")->config().durability, Durability::kAsync);
  EXPECT_EQ(store_->Find("sy")->config().durability, Durability::kSync);
}

TEST_F(StreamStoreTest, MemoryOnlyStreamWritesNoFiles) {
  Reopen();
  ASSERT_TRUE(store_->Create(Config("mem", Durability::kNone, 2)).ok());
  for (uint64_t i = 0; i < 20; ++i) {
    ASSERT_TRUE(AppendChunk(StreamletOf("mem", i % 2), MakeChunk(0, i)).ok());
  }
  store_->Maintain(0);
  EXPECT_EQ(store_->FlushAsync(), 0);
  EXPECT_TRUE(env_.TrackedFiles().empty());
  EXPECT_EQ(env_.sync_count(), 0);
  EXPECT_TRUE(fs::is_empty(data_ + "/streams"));
  EXPECT_EQ(store_->total_bytes(), 20000u);
}

TEST_F(StreamStoreTest, StreamMetaRoundTrips) {
  StreamConfig c = Config("meta.test-1", Durability::kAsync, 7);
  c.segment_bytes = 1u << 20;
  c.segments_per_group = 9;
  c.active_groups = 3;
  c.retention_bytes = 123456789012;
  c.retention_ms = 86400000;
  auto parsed = ParseStreamMeta(FormatStreamMeta(c));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->name, c.name);
  EXPECT_EQ(parsed->streamlets, 7u);
  EXPECT_EQ(parsed->segment_bytes, 1u << 20);
  EXPECT_EQ(parsed->segments_per_group, 9u);
  EXPECT_EQ(parsed->active_groups, 3u);
  EXPECT_EQ(parsed->durability, Durability::kAsync);
  EXPECT_EQ(parsed->retention_bytes, 123456789012);
  EXPECT_EQ(parsed->retention_ms, 86400000);
  EXPECT_EQ(FormatStreamMeta(*parsed), FormatStreamMeta(c));
  // Unknown keys (a newer broker's) and blank lines are ignored.
  auto extra = ParseStreamMeta("future=1\n\n" + FormatStreamMeta(c));
  ASSERT_TRUE(extra.ok()) << extra.status().ToString();
  EXPECT_EQ(FormatStreamMeta(*extra), FormatStreamMeta(c));
}

TEST_F(StreamStoreTest, ParseStreamMetaRejectsCorruptText) {
  const std::string good = FormatStreamMeta(Config("s", Durability::kSync));
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  struct Case {
    std::string text;
    std::string says;  // part of the expected message
  };
  std::vector<Case> cases = {
      {"", "incomplete"},
      {"garbage\x01\x02", "incomplete"},
      {replace("streamlets=1\n", ""), "incomplete"},
      {replace("format=1", "format=2"), "format"},
      {replace("segment_bytes=4096", "segment_bytes=lots"), "bad number"},
      {replace("durability=sync", "durability=fast"), "durability"},
      {replace("segment_bytes=4096", "segment_bytes=12"), "segment_bytes"},
      {replace("name=s", "name=../etc"), "name"},
  };
  for (const auto& c : cases) {
    auto r = ParseStreamMeta(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << r.status().ToString() << " for:\n"
        << c.text;
  }
}

// Numbers that do not fit their field must be refused, not wrapped: std::stoul("4294967297")
// cast to uint32_t is 1, a valid value, so a damaged stream.meta is silently accepted.
TEST_F(StreamStoreTest, ParseStreamMetaRejectsOutOfRangeNumbers) {
  const std::string good = FormatStreamMeta(Config("s", Durability::kSync));
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"streamlets=1", "streamlets=4294967297"},
           {"segment_bytes=4096", "segment_bytes=4294971392"},
           {"active_groups=1", "active_groups=1x"}}) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    auto r = ParseStreamMeta(text);
    std::string parsed = r.ok() ? FormatStreamMeta(*r) : std::string();
    std::replace(parsed.begin(), parsed.end(), '\n', ' ');
    EXPECT_FALSE(r.ok()) << to << " was accepted as: " << parsed;
  }
}

TEST_F(StreamStoreTest, CorruptMetaFailsOpenWithClearError) {
  Reopen();
  ASSERT_TRUE(store_->Create(Config("s", Durability::kSync)).ok());
  store_.reset();
  { std::ofstream(StreamDir("s") + "/stream.meta", std::ios::trunc) << "format=1\nname=s\n"; }
  StreamStore store(Options());
  Status s = store.Open(0);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("stream s"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("incomplete"), std::string::npos) << s.ToString();

  // A meta file naming another stream is refused as well.
  {
    std::ofstream(StreamDir("s") + "/stream.meta", std::ios::trunc)
        << FormatStreamMeta(Config("t", Durability::kSync));
  }
  StreamStore other(Options());
  s = other.Open(0);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'t'"), std::string::npos) << s.ToString();
}

TEST_F(StreamStoreTest, DeleteRemovesTheDirectory) {
  Reopen();
  ASSERT_TRUE(store_->Create(Config("s", Durability::kSync, 2)).ok());
  for (uint64_t i = 0; i < 10; ++i)
    ASSERT_TRUE(AppendChunk(StreamletOf("s", 0), MakeChunk(0, i)).ok());
  ASSERT_TRUE(fs::exists(StreamDir("s") + "/stream.meta"));
  ASSERT_TRUE(fs::exists(StreamDir("s") + "/1"));
  ASSERT_TRUE(store_->Delete("s").ok());
  EXPECT_FALSE(fs::exists(StreamDir("s")));
  EXPECT_TRUE(!fs::exists(data_ + "/trash") || fs::is_empty(data_ + "/trash"));
  Reopen();
  EXPECT_TRUE(store_->List().empty());
  // Re-created under the same name, it starts empty.
  ASSERT_TRUE(store_->Create(Config("s", Durability::kSync)).ok());
  EXPECT_TRUE(ReadAll(StreamletOf("s", 0)).empty());
}

TEST_F(StreamStoreTest, IncompletelyCreatedStreamIsRemovedOnOpen) {
  fs::create_directories(StreamDir("half") + "/0");
  { std::ofstream(StreamDir("half") + "/0/00000000000000000001-00000000000000000001.seg") << "x"; }
  fs::create_directories(data_ + "/trash/old.1/0");  // a delete interrupted by a crash
  Reopen();
  EXPECT_TRUE(store_->List().empty());
  EXPECT_FALSE(fs::exists(StreamDir("half")));
  EXPECT_FALSE(fs::exists(data_ + "/trash"));
}

TEST_F(StreamStoreTest, RecoveryKeepsRecordsPositionsAndProducers) {
  Reopen();
  StreamConfig c = Config("s", Durability::kSync, 3);
  c.active_groups = 2;
  ASSERT_TRUE(store_->Create(c).ok());
  std::vector<std::vector<ReadChunk>> appended(3);
  std::vector<Position> last_of_producer(3);
  for (uint64_t i = 0; i < 30; ++i) {
    for (uint32_t sl = 0; sl < 3; ++sl) {
      const uint64_t producer = 1 + (i % 2);
      Bytes chunk = MakeChunk(producer, i / 2, 300 + static_cast<uint32_t>((i * 97 + sl) % 1500));
      auto r = AppendChunk(StreamletOf("s", sl), chunk);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      appended[sl].push_back({r->position, chunk});
      if (producer == 2) last_of_producer[sl] = r->position;
    }
  }
  Reopen(5000);
  for (uint32_t sl = 0; sl < 3; ++sl) {
    SortByPosition(&appended[sl]);
    EXPECT_EQ(ReadAll(StreamletOf("s", sl)), appended[sl]) << "streamlet " << sl;
    for (const auto& g : StreamletOf("s", sl)->Describe().groups) EXPECT_TRUE(g.closed);
    // A retry after the restart is still recognised, with its original position.
    auto retry = AppendChunk(StreamletOf("s", sl), MakeChunk(2, 14, 300));
    ASSERT_TRUE(retry.ok()) << retry.status().ToString();
    EXPECT_TRUE(retry->duplicate);
    EXPECT_EQ(retry->position, last_of_producer[sl]);
    auto next = AppendChunk(StreamletOf("s", sl), MakeChunk(2, 15));
    ASSERT_TRUE(next.ok());
    EXPECT_FALSE(next->duplicate);
    EXPECT_GT(next->position.group, appended[sl].back().at.group);
  }
}

TEST_F(StreamStoreTest, RetentionDeletesSegmentFiles) {
  Reopen();
  StreamConfig c = Config("s", Durability::kAsync);
  c.retention_bytes = 4096;
  ASSERT_TRUE(store_->Create(c).ok());
  for (uint64_t i = 0; i < 12; ++i)
    ASSERT_TRUE(AppendChunk(StreamletOf("s", 0), MakeChunk(0, i)).ok());
  auto count_files = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(StreamDir("s") + "/0")) n += e.is_regular_file();
    return n;
  };
  EXPECT_EQ(count_files(), 3u);
  EXPECT_EQ(store_->total_bytes(), 12000u);
  const uint64_t generation = store_->Find("s")->append_generation();
  store_->Maintain(0);
  EXPECT_GT(store_->Find("s")->append_generation(), generation);
  EXPECT_EQ(store_->total_bytes(), 4000u);
  EXPECT_EQ(count_files(), 1u);
  EXPECT_EQ(StreamletOf("s", 0)->Describe().head, (Position{2, 3, 0}));
  Reopen();  // what was dropped stays dropped
  std::vector<ReadChunk> got = ReadAll(StreamletOf("s", 0));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].bytes, MakeChunk(0, 8));
}

TEST_F(StreamStoreTest, FlushAsyncSyncsOnlyAsyncStreams) {
  Reopen();
  ASSERT_TRUE(store_->Create(Config("as", Durability::kAsync, 2)).ok());
  ASSERT_TRUE(store_->Create(Config("sy", Durability::kSync)).ok());
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(AppendChunk(StreamletOf("as", 0), MakeChunk(0, i)).ok());
    ASSERT_TRUE(AppendChunk(StreamletOf("as", 1), MakeChunk(0, i)).ok());
  }
  const std::string seg = StreamDir("as") + "/0/00000000000000000001-00000000000000000001.seg";
  EXPECT_EQ(env_.FileSize(seg), 3000u);
  EXPECT_EQ(env_.SyncedSize(seg), 0u);
  EXPECT_EQ(env_.sync_count(), 0);
  EXPECT_EQ(store_->FlushAsync(), 0);
  EXPECT_EQ(env_.SyncedSize(seg), 3000u);
  EXPECT_EQ(env_.sync_count(), 2);
  EXPECT_EQ(store_->FlushAsync(), 0);
  EXPECT_EQ(env_.sync_count(), 2);

  ASSERT_TRUE(AppendChunk(StreamletOf("as", 0), MakeChunk(0, 3)).ok());
  ASSERT_TRUE(AppendChunk(StreamletOf("as", 1), MakeChunk(0, 3)).ok());
  env_.SetSyncFailure(true);
  EXPECT_EQ(store_->FlushAsync(), 2);  // one failure per streamlet
  env_.SetSyncFailure(false);
  EXPECT_EQ(store_->FlushAsync(), 0);  // retried
  EXPECT_EQ(env_.SyncedSize(seg), 4000u);
}

TEST_F(StreamStoreTest, AnAsyncStreamletWhoseFlushFailedRefusesAppendsUntilAFlushSucceeds) {
  Reopen();
  ASSERT_TRUE(store_->Create(Config("as", Durability::kAsync, 2)).ok());
  const Bytes acked = MakeChunk(7, 0);
  ASSERT_TRUE(AppendChunk(StreamletOf("as", 0), acked).ok());
  ASSERT_TRUE(AppendChunk(StreamletOf("as", 1), MakeChunk(7, 0)).ok());
  env_.SetSyncFailure(true);
  EXPECT_EQ(store_->FlushAsync(), 2);
  // What is acknowledged and not on disk stops growing while the disk fails...
  auto refused = AppendChunk(StreamletOf("as", 0), MakeChunk(7, 1));
  EXPECT_EQ(refused.status().code(), StatusCode::kStorageError);
  EXPECT_NE(refused.status().message().find("fdatasync"), std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(AppendChunk(StreamletOf("as", 1), MakeChunk(7, 1)).status().code(),
            StatusCode::kStorageError);
  // ...while a retry of an acknowledged chunk, which writes nothing, is still answered.
  auto retry = AppendChunk(StreamletOf("as", 0), acked);
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_TRUE(retry->duplicate);
  // A stream of its own is not held up.
  ASSERT_TRUE(store_->Create(Config("other", Durability::kSync)).ok());
  env_.SetSyncFailure(false);
  EXPECT_TRUE(AppendChunk(StreamletOf("other", 0), MakeChunk(7, 0)).ok());
  EXPECT_EQ(AppendChunk(StreamletOf("as", 0), MakeChunk(7, 1)).status().code(),
            StatusCode::kStorageError);  // still: no flush has succeeded yet

  EXPECT_EQ(store_->FlushAsync(), 0);
  auto taken = AppendChunk(StreamletOf("as", 0), MakeChunk(7, 1));
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_FALSE(taken->duplicate);
  EXPECT_EQ(ReadAll(StreamletOf("as", 0)).size(), 2u);
}

// ---------------------------------------------------------------------------------------------
// Power loss. The data directory exists and is durable before the broker starts (it is made by
// the operator), so these tests see only what the store itself does.

class StreamStorePowerLossTest : public StreamStoreTest {
 protected:
  void SetUp() override {
    StreamStoreTest::SetUp();
    fs::create_directories(data_ + "/streams");
  }
};

// A finished segment's file is closed once its bytes are durable, not kept open until retention
// drops it: at 256 MiB retained per streamlet and 8 MiB segments a broker held 32 descriptors per
// streamlet, and ran out at a few hundred streamlets. Under `async` the file must stay open
// until the flusher synced it: closed earlier, its bytes would never be synced.
TEST_F(StreamStorePowerLossTest, FinishedSegmentsCloseTheirFilesOnceDurable) {
  for (Durability d : {Durability::kSync, Durability::kAsync}) {
    SCOPED_TRACE(d == Durability::kSync ? "sync" : "async");
    Reopen();
    const std::string name = d == Durability::kSync ? "sy" : "as";
    ASSERT_TRUE(store_->Create(Config(name, d)).ok());
    // Four 1000-byte chunks per 4 KiB segment: ten segments, the last one active.
    for (uint64_t i = 0; i < 40; ++i) {
      ASSERT_TRUE(AppendChunk(StreamletOf(name, 0), MakeChunk(0, i)).ok());
    }
    ASSERT_EQ(env_.open_file_count(), 10u);
    store_->Maintain(0);
    if (d == Durability::kAsync) {
      EXPECT_EQ(env_.open_file_count(), 10u) << "closed before the flusher synced them";
      ASSERT_EQ(store_->FlushAsync(), 0);
      store_->Maintain(0);
    }
    EXPECT_EQ(env_.open_file_count(), 1u);  // the active segment's
    // Appends go on into the active segment and the ones after it.
    for (uint64_t i = 40; i < 48; ++i) {
      ASSERT_TRUE(AppendChunk(StreamletOf(name, 0), MakeChunk(0, i)).ok());
    }
    ASSERT_EQ(store_->FlushAsync(), 0);
    store_->Maintain(0);
    EXPECT_EQ(env_.open_file_count(), 1u);
    PowerLoss();  // what was acknowledged, and synced, survives
    Reopen();
    std::vector<ReadChunk> got = ReadAll(StreamletOf(name, 0));
    ASSERT_EQ(got.size(), 48u);
    for (uint64_t i = 0; i < 48; ++i) EXPECT_EQ(got[i].bytes, MakeChunk(0, i)) << i;
    store_.reset();
  }
}

TEST_F(StreamStorePowerLossTest, SyncLosesNothingAcknowledged) {
  Reopen();
  ASSERT_TRUE(store_->Create(Config("s", Durability::kSync, 2)).ok());
  std::vector<std::vector<ReadChunk>> acked(2);
  for (uint64_t i = 0; i < 25; ++i) {
    for (uint32_t sl = 0; sl < 2; ++sl) {
      Bytes chunk = MakeChunk(1, i, 200 + static_cast<uint32_t>((i * 613 + sl) % 1800));
      if (i % 10 == 5) {  // a failed fsync: the append is not acknowledged, the retry is
        env_.SetSyncFailure(true);
        EXPECT_EQ(AppendChunk(StreamletOf("s", sl), chunk).status().code(),
                  StatusCode::kStorageError);
        env_.SetSyncFailure(false);
      }
      auto r = AppendChunk(StreamletOf("s", sl), chunk);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_FALSE(r->duplicate);
      acked[sl].push_back({r->position, chunk});
    }
  }
  PowerLoss(/*keep_unsynced_bytes=*/0);
  Reopen();
  for (uint32_t sl = 0; sl < 2; ++sl) {
    EXPECT_EQ(ReadAll(StreamletOf("s", sl)), acked[sl]) << "streamlet " << sl;
  }
}

TEST_F(StreamStorePowerLossTest, AsyncLosesOnlyUnflushedDataAndNeverCorrupts) {
  for (uint64_t torn : {0u, 1u, 600u, 1500u}) {
    SCOPED_TRACE("keeping " + std::to_string(torn) + " unsynced bytes");
    fs::remove_all(StreamDir("s"));
    Reopen();
    ASSERT_TRUE(store_->Create(Config("s", Durability::kAsync)).ok());
    std::vector<ReadChunk> acked;
    auto append = [&](uint64_t i) {
      Bytes chunk = MakeChunk(1, i, 300 + static_cast<uint32_t>((i * 389) % 1700));
      auto r = AppendChunk(StreamletOf("s", 0), chunk);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      acked.push_back({r->position, chunk});
    };
    for (uint64_t i = 0; i < 10; ++i) append(i);
    ASSERT_EQ(store_->FlushAsync(), 0);
    const size_t flushed = acked.size();
    for (uint64_t i = 10; i < 17; ++i) append(i);
    PowerLoss(torn, /*drop_dir_entries=*/false);
    Reopen();
    std::vector<ReadChunk> got = ReadAll(StreamletOf("s", 0));
    // Everything flushed survives; the rest may be lost (not necessarily from the end: the disk
    // may have written a later segment's pages and not an earlier one's), but what is read is
    // whole, valid (ReadAll checks) and was acknowledged at that very position, in order.
    ASSERT_GE(got.size(), flushed);
    for (size_t i = 0; i < flushed; ++i) EXPECT_EQ(got[i], acked[i]) << i;
    size_t next_acked = 0;
    for (const auto& c : got) {
      while (next_acked < acked.size() && !(acked[next_acked] == c)) ++next_acked;
      EXPECT_LT(next_acked, acked.size()) << "chunk at " << c.at.ToString() << " is not one "
                                          << "that was acknowledged there";
      ++next_acked;
    }
    // The producer continues after the last surviving chunk.
    auto last = DecodeChunkHeader(got.back().bytes.data(), got.back().bytes.size());
    ASSERT_TRUE(last.ok());
    auto next = AppendChunk(StreamletOf("s", 0), MakeChunk(1, last->sequence + 1));
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    EXPECT_FALSE(next->duplicate);
    store_.reset();
  }
}

// Under async, FlushAsync fdatasyncs segment files but nothing ever fsyncs the streamlet
// directory for segment files created since the last flush, so a flushed segment can vanish
// with its directory entry (fsync(2): "an explicit fsync() on a file descriptor for the directory
// is also needed").
TEST_F(StreamStorePowerLossTest, AsyncFlushedSegmentsSurviveLosingUnsyncedDirEntries) {
  Reopen();
  ASSERT_TRUE(store_->Create(Config("s", Durability::kAsync)).ok());
  for (uint64_t i = 0; i < 10; ++i)
    ASSERT_TRUE(AppendChunk(StreamletOf("s", 0), MakeChunk(1, i)).ok());
  ASSERT_EQ(store_->FlushAsync(), 0);
  PowerLoss(0, /*drop_dir_entries=*/true);
  Reopen();
  EXPECT_EQ(ReadAll(StreamletOf("s", 0)).size(), 10u) << "flushed chunks were lost";
}

// The store creates <data_dir>/streams on first start but never fsyncs <data_dir>, so a sync
// stream created and written right after a first start can disappear with that directory entry.
TEST_F(StreamStoreTest, FirstStartLayoutIsDurable) {
  fs::create_directories(data_);  // the operator's directory; "streams" is the store's
  Reopen();
  ASSERT_TRUE(store_->Create(Config("s", Durability::kSync)).ok());
  ASSERT_TRUE(AppendChunk(StreamletOf("s", 0), MakeChunk(1, 0)).ok());
  PowerLoss();
  Reopen();
  EXPECT_NE(store_->Find("s"), nullptr) << "an acknowledged sync append was lost";
}

TEST_F(StreamStorePowerLossTest, CreatedStreamSurvivesPowerLoss) {
  Reopen();
  ASSERT_TRUE(store_->Create(Config("s", Durability::kSync, 4)).ok());
  ASSERT_TRUE(store_->Create(Config("a", Durability::kAsync, 2)).ok());
  PowerLoss();
  Reopen();
  EXPECT_EQ(store_->List(), (std::vector<std::string>{"a", "s"}));
  ASSERT_TRUE(AppendChunk(StreamletOf("s", 3), MakeChunk(0, 0)).ok());
}

// A Delete that fails half-way must leave the in-memory catalog and the disk in agreement: here
// the rename into trash/ succeeds and the directory fsync fails, Delete reports the error and
// keeps serving the stream, whose files now sit in trash/ and are removed at the next start.
TEST_F(StreamStoreTest, FailedDeleteLeavesCatalogAndDiskInAgreement) {
  Reopen();
  ASSERT_TRUE(store_->Create(Config("s", Durability::kSync)).ok());
  ASSERT_TRUE(AppendChunk(StreamletOf("s", 0), MakeChunk(1, 0)).ok());
  env_.SetSyncDirFailure(true);
  Status del = store_->Delete("s");
  env_.SetSyncDirFailure(false);
  const bool listed = store_->Find("s") != nullptr;
  if (listed) {
    EXPECT_FALSE(del.ok());
    ASSERT_TRUE(AppendChunk(StreamletOf("s", 0), MakeChunk(1, 1)).ok());
  }
  Reopen();
  EXPECT_EQ(store_->Find("s") != nullptr, listed)
      << "Delete returned " << del.ToString() << "; the stream was "
      << (listed ? "still served" : "gone") << " before the restart";
  if (listed && store_->Find("s") != nullptr) {
    EXPECT_EQ(ReadAll(StreamletOf("s", 0)).size(), 2u);
  }
}

}  // namespace
}  // namespace nearstream::storage
