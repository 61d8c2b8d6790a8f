#include "nearstream/storage/held_appends.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/storage/chunk.h"
#include "nearstream/testing/forwarding_env.h"

namespace nearstream::storage {
namespace {

constexpr uint32_t kSegmentBytes = 4096;
constexpr uint32_t kRecordBytes = 900;  // four chunks fill a segment, a fifth needs the next

Bytes Chunk(uint64_t producer, uint64_t sequence) {
  ChunkBuilder b;
  b.Add(std::string(kRecordBytes, static_cast<char>('a' + sequence % 26)));
  return b.Finish(producer, sequence, 1700000000000 + static_cast<int64_t>(sequence));
}

// Every chunk a reader gets from the start, as (position, sequence).
std::vector<std::pair<Position, uint64_t>> ReadAll(const Streamlet& s) {
  std::vector<std::pair<Position, uint64_t>> out;
  Position from;
  for (int i = 0; i < 100; ++i) {
    auto r = s.Read(from, 1u << 30, [&](const Position& at, const uint8_t* data, uint32_t size) {
      for (uint32_t off = 0; off < size;) {
        auto h = DecodeChunkHeader(data + off, size - off);
        EXPECT_TRUE(h.ok());
        if (!h.ok()) return;
        out.emplace_back(Position{at.group, at.segment, at.offset + off}, h->sequence);
        off += h->total_size();
      }
    });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok() || r->bytes == 0) break;
    from = r->next;
  }
  return out;
}

// Fails every segment write while `fail` is set, as a full disk would; counts the writes.
class FailingWritesEnv final : public ForwardingEnv {
 public:
  FailingWritesEnv() : ForwardingEnv(Env::Default()) {}
  std::atomic<bool> fail{false};
  std::atomic<int> writes{0};

  Result<std::unique_ptr<WritableFile>> OpenAppendable(const std::string& path) override {
    ASSIGN_OR_RETURN(auto file, base()->OpenAppendable(path));
    return std::unique_ptr<WritableFile>(new File(this, std::move(file)));
  }

 private:
  class File final : public WritableFile {
   public:
    File(FailingWritesEnv* env, std::unique_ptr<WritableFile> base)
        : env_(env), base_(std::move(base)) {}
    Status Append(const uint8_t* data, size_t n) override {
      ++env_->writes;
      if (env_->fail.load()) return Status(StatusCode::kStorageError, "injected: disk full");
      return base_->Append(data, n);
    }
    Status Truncate(uint64_t size) override { return base_->Truncate(size); }
    Status Sync() override { return base_->Sync(); }
    uint64_t size() const override { return base_->size(); }

   private:
    FailingWritesEnv* const env_;
    const std::unique_ptr<WritableFile> base_;
  };
};

class HeldAppendsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nearstream_held_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    config_.name = "held";
    config_.segment_bytes = kSegmentBytes;
    config_.segments_per_group = 4;
    config_.active_groups = 2;
    config_.durability = Durability::kAsync;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::unique_ptr<Streamlet> Open(uint32_t id = 0, Env* env = Env::Default()) {
    auto s = std::make_unique<Streamlet>(id, &config_, env, dir_ + "/" + std::to_string(id));
    Status st = s->Recover(0);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return s;
  }
  // AppendHeld of `chunk`; `flush` says whether the streamlet asked for a flush first.
  static Result<AppendOutcome> Hold(Streamlet& s, const Bytes& chunk, HeldAppends* held,
                                    bool* flush) {
    auto h = ValidateChunk(chunk.data(), chunk.size());
    if (!h.ok()) return h.status();
    return s.AppendHeld(chunk.data(), *h, 0, held, flush);
  }
  // Holds `producer`'s chunks `first`..`last`, none of which may ask for a flush; their
  // positions.
  static std::vector<Position> HoldRange(Streamlet& s, uint64_t producer, uint64_t first,
                                         uint64_t last, HeldAppends* held) {
    std::vector<Position> at;
    for (uint64_t seq = first; seq <= last; ++seq) {
      bool flush = false;
      auto r = Hold(s, Chunk(producer, seq), held, &flush);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_FALSE(flush);
      if (!r.ok() || flush) break;
      EXPECT_FALSE(r->duplicate);
      at.push_back(r->position);
    }
    return at;
  }

  std::string dir_;
  StreamConfig config_;
};

TEST_F(HeldAppendsTest, HeldChunksReachReadersOnlyWhenPublishedAndInOrder) {
  auto s = Open();
  HeldAppends held;
  std::vector<Position> at = HoldRange(*s, 2, 1, 3, &held);
  ASSERT_EQ(at.size(), 3u);
  // One segment, one after the other, as a follower must take them.
  EXPECT_EQ(at[1].segment, at[0].segment);
  EXPECT_GT(at[1].offset, at[0].offset);
  EXPECT_GT(at[2].offset, at[1].offset);
  std::vector<HeldAppends::Chunk> chunks = held.ChunksOf(s.get(), held.flight());
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[2].at, at[2]);
  EXPECT_TRUE(ReadAll(*s).empty()) << "a reader saw a held chunk";
  EXPECT_EQ(s->tail(), at[0]) << "the tail moved before the publish";

  held.WriteFiles(held.flight());
  held.Publish(s.get(), held.flight());
  held.Release();
  auto read = ReadAll(*s);
  ASSERT_EQ(read.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(read[k].first, at[k]);
    EXPECT_EQ(read[k].second, k + 1);
  }
}

TEST_F(HeldAppendsTest, DiscardCutsTheChunksAndTheirSequencesSoRetriesAppendAnew) {
  auto s = Open();
  {
    HeldAppends held;
    bool flush = false;
    ASSERT_TRUE(Hold(*s, Chunk(2, 1), &held, &flush).ok());
    held.WriteFiles(held.flight());
    held.Publish(s.get(), held.flight());
    ASSERT_TRUE(Hold(*s, Chunk(2, 2), &held, &flush).ok());
    ASSERT_TRUE(Hold(*s, Chunk(2, 3), &held, &flush).ok());
    held.Discard(s.get());
  }
  // Sequences 2 and 3 were taken back: they are new again, not duplicates.
  HeldAppends held;
  bool flush = false;
  auto again = Hold(*s, Chunk(2, 2), &held, &flush);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->duplicate);
  EXPECT_FALSE(flush);
  held.WriteFiles(held.flight());
  held.Publish(s.get(), held.flight());
  held.Release();
  auto read = ReadAll(*s);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].second, 1u);
  EXPECT_EQ(read[1].second, 2u);
  // The cut segment took nothing more; the retry went to the next one.
  EXPECT_NE(read[1].first.segment, read[0].first.segment);

  // The files hold what was published, nothing discarded: a restart reads the same.
  s.reset();
  auto recovered = Open();
  EXPECT_EQ(ReadAll(*recovered), read);
}

TEST_F(HeldAppendsTest, ReleaseWithoutPublishDiscards) {
  auto s = Open();
  {
    HeldAppends held;
    bool flush = false;
    ASSERT_TRUE(Hold(*s, Chunk(2, 1), &held, &flush).ok());
  }
  EXPECT_TRUE(ReadAll(*s).empty());
  HeldAppends held;
  bool flush = false;
  auto r = Hold(*s, Chunk(2, 1), &held, &flush);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->duplicate);
}

TEST_F(HeldAppendsTest, AsksForAFlushRatherThanSealAHeldSegmentOrAnswerAHeldRetry) {
  auto s = Open();
  HeldAppends held;
  bool flush = false;
  for (uint64_t seq = 1; seq <= 4; ++seq) {
    ASSERT_TRUE(Hold(*s, Chunk(2, seq), &held, &flush).ok());
    ASSERT_FALSE(flush);
  }
  // A retry of a held chunk: its answer must wait for the publish.
  auto retry = Hold(*s, Chunk(2, 3), &held, &flush);
  EXPECT_TRUE(flush);
  // The fifth chunk needs a new segment, which would seal the one holding unpublished chunks.
  auto fifth = Hold(*s, Chunk(2, 5), &held, &flush);
  EXPECT_TRUE(flush);
  EXPECT_EQ(held.ChunksOf(s.get(), held.flight()).size(), 4u) << "a refused call held something";

  held.WriteFiles(held.flight());
  held.Publish(s.get(), held.flight());
  held.Release();
  retry = Hold(*s, Chunk(2, 3), &held, &flush);
  ASSERT_TRUE(retry.ok());
  EXPECT_FALSE(flush);
  EXPECT_TRUE(retry->duplicate);
  fifth = Hold(*s, Chunk(2, 5), &held, &flush);
  ASSERT_TRUE(fifth.ok()) << fifth.status().ToString();
  EXPECT_FALSE(flush);
  held.WriteFiles(held.flight());
  held.Publish(s.get(), held.flight());
  held.Release();
  EXPECT_EQ(ReadAll(*s).size(), 5u);
}

TEST_F(HeldAppendsTest, AContendedSlotAsksForAFlushInsteadOfWaitingWhileHoldingAnother) {
  auto a = Open(0);
  auto b = Open(1);
  HeldAppends first;   // another worker, holding slot 0 of `a`
  HeldAppends second;  // this worker
  bool flush = false;
  ASSERT_TRUE(Hold(*a, Chunk(2, 1), &first, &flush).ok());
  ASSERT_TRUE(Hold(*b, Chunk(2, 1), &second, &flush).ok());
  // Slot 0 of `a` is taken; waiting for it while holding slot 0 of `b` could deadlock.
  auto r = Hold(*a, Chunk(4, 1), &second, &flush);
  EXPECT_TRUE(flush);
  // Another slot of `a` is free: taken without a flush.
  flush = false;
  auto other_slot = Hold(*a, Chunk(3, 1), &second, &flush);
  ASSERT_TRUE(other_slot.ok()) << other_slot.status().ToString();
  EXPECT_FALSE(flush);
  EXPECT_EQ(second.streamlets(second.flight()), (std::vector<Streamlet*>{b.get(), a.get()}));
  first.WriteFiles(first.flight());
  first.Publish(a.get(), first.flight());
  first.Release();
  second.WriteFiles(second.flight());
  second.Publish(a.get(), second.flight());
  second.Publish(b.get(), second.flight());
  second.Release();
  // Two slots, two open groups: a reader would wait at the first, so count the published bytes.
  const uint64_t chunk_bytes = Chunk(2, 1).size();
  EXPECT_EQ(a->bytes(), 2 * chunk_bytes);
  EXPECT_EQ(b->bytes(), chunk_bytes);
}

TEST_F(HeldAppendsTest, AFlightIsWrittenWhileTheOneBeforeIsOnItsWayAndPublishedAfterIt) {
  auto s = Open();
  HeldAppends held;
  bool flush = false;
  std::vector<Position> at = HoldRange(*s, 2, 1, 2, &held);
  ASSERT_EQ(at.size(), 2u);
  const uint64_t first = held.flight();
  held.CloseFlight();
  auto third = Hold(*s, Chunk(2, 3), &held, &flush);
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_FALSE(flush) << "the slot of the flight on its way was not kept for the next one";
  at.push_back(third->position);
  EXPECT_EQ(at[2].segment, at[1].segment);
  EXPECT_GT(at[2].offset, at[1].offset);
  // Each flight sends only its own chunks.
  EXPECT_EQ(held.ChunksOf(s.get(), first).size(), 2u);
  std::vector<HeldAppends::Chunk> next = held.ChunksOf(s.get(), held.flight());
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].at, at[2]);

  held.WriteFiles(first);
  held.Publish(s.get(), first);
  held.ReleaseIdle();  // the slot still holds the next flight's chunk: it stays locked
  auto read = ReadAll(*s);
  ASSERT_EQ(read.size(), 2u) << "the next flight's chunk was published with the first";
  EXPECT_EQ(read[1].first, at[1]);
  {
    auto b = Open(1);
    HeldAppends other;  // another worker holding a slot of another streamlet (gone before it)
    ASSERT_TRUE(Hold(*b, Chunk(2, 1), &other, &flush).ok());
    (void)Hold(*s, Chunk(4, 1), &other, &flush);  // producer 4 maps to the same slot as 2
    EXPECT_TRUE(flush) << "the slot was free while a flight held a chunk of it";
  }
  held.WriteFiles(held.flight());
  held.Publish(s.get(), held.flight());
  held.ReleaseIdle();
  read = ReadAll(*s);
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(read[2].second, 3u);
  EXPECT_TRUE(held.empty()) << "the slot stayed locked with nothing held";
}

TEST_F(HeldAppendsTest, DiscardCutsEveryFlightAndRestoresTheSequencesOfTheOldest) {
  auto s = Open();
  {
    HeldAppends held;
    ASSERT_EQ(HoldRange(*s, 2, 1, 1, &held).size(), 1u);
    held.WriteFiles(held.flight());
    held.Publish(s.get(), held.flight());
    ASSERT_EQ(HoldRange(*s, 2, 2, 2, &held).size(), 1u);
    held.CloseFlight();
    ASSERT_EQ(HoldRange(*s, 2, 3, 4, &held).size(), 2u);
    held.Discard(s.get());  // the leader was deposed before the first flight was answered
    EXPECT_TRUE(held.ChunksOf(s.get(), held.flight()).empty());
  }
  HeldAppends held;
  bool flush = false;
  auto again = Hold(*s, Chunk(2, 2), &held, &flush);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->duplicate) << "sequence 2 was left taken: the retry would be dropped";
  held.WriteFiles(held.flight());
  held.Publish(s.get(), held.flight());
  held.Release();
  auto read = ReadAll(*s);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[1].second, 2u);
  s.reset();
  EXPECT_EQ(ReadAll(*Open()), read) << "the files hold a discarded chunk";
}

TEST_F(HeldAppendsTest, ASlotSomeoneWaitsForIsLetGoAfterItsFlightsInsteadOfKeptForTheNext) {
  config_.segment_bytes = 8u << 20;  // no segment fills up (which asks for a flush anyway)
  auto s = Open();
  HeldAppends held;
  bool flush = false;
  ASSERT_TRUE(Hold(*s, Chunk(2, 1), &held, &flush).ok());
  held.CloseFlight();
  // Another thread wants the slot (closing the active groups waits for every slot, as a seal
  // does).
  std::atomic<bool> closed{false};
  std::thread close([&] {
    s->CloseActiveGroups();
    closed = true;
  });
  // The next flight's chunk of that slot asks for the flights to be settled instead.
  uint64_t seq = 2;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = Hold(*s, Chunk(2, seq), &held, &flush);
    if (flush) break;
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ++seq;
    held.CloseFlight();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(flush) << "the slot was kept across flights while another thread waited for it";
  EXPECT_FALSE(closed.load());
  for (uint64_t f = 1; f <= held.flight(); ++f) {
    held.WriteFiles(f);
    held.Publish(s.get(), f);
  }
  held.ReleaseIdle();
  close.join();
  EXPECT_TRUE(closed.load());
  EXPECT_EQ(ReadAll(*s).size(), seq - 1);
}

TEST_F(HeldAppendsTest, AFailedWriteDiscardsItsFlightOnlyAndTheEarlierOneIsPublishedFirst) {
  FailingWritesEnv env;
  auto s = Open(0, &env);
  HeldAppends held;
  bool flush = false;
  // Published: producer 2's first chunk (slot 0's group) and producer 3's (slot 1's group).
  ASSERT_TRUE(Hold(*s, Chunk(2, 1), &held, &flush).ok());
  ASSERT_TRUE(Hold(*s, Chunk(3, 1), &held, &flush).ok());
  held.WriteFiles(held.flight());
  held.Publish(s.get(), held.flight());
  held.CloseFlight();
  // Flight `first` is on its way with producer 2's second chunk; the next flight's write fails.
  auto two = Hold(*s, Chunk(2, 2), &held, &flush);
  ASSERT_TRUE(two.ok());
  const uint64_t first = held.flight();
  held.WriteFiles(first);
  held.CloseFlight();
  ASSERT_TRUE(Hold(*s, Chunk(2, 3), &held, &flush).ok());
  ASSERT_TRUE(Hold(*s, Chunk(2, 4), &held, &flush).ok());
  env.fail = true;
  held.WriteFiles(held.flight());
  env.fail = false;
  EXPECT_FALSE(held.failure(s.get(), held.flight()).ok());
  EXPECT_TRUE(held.failure(s.get(), first).ok()) << "the failure reached the flight before it";
  EXPECT_EQ(held.streamlets(held.flight()), std::vector<Streamlet*>{s.get()});
  // Nothing more is written to the streamlet until the flights are settled.
  (void)Hold(*s, Chunk(2, 5), &held, &flush);
  EXPECT_TRUE(flush);

  // A reader meanwhile reaches the end of what slot 0's segment published. The segment is still
  // open (a sealed one's length is final), so the reader stops there rather than going on to
  // slot 1's group and past the first flight's chunk.
  auto before = s->Read(Position{}, 1u << 20, [](const Position&, const uint8_t*, uint32_t) {});
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  // The first flight stands (its followers hold it); the failed one is cut off.
  held.Publish(s.get(), first);
  held.Discard(s.get());
  held.Release();
  std::vector<uint64_t> resumed;
  auto next = s->Read(before->next, 1u << 20, [&](const Position&, const uint8_t* d, uint32_t) {
    resumed.push_back(DecodeChunkHeader(d, kSegmentBytes)->sequence);
  });
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  ASSERT_FALSE(resumed.empty());
  EXPECT_EQ(resumed[0], 2u) << "a reader went past the first flight's chunk";

  // Sequence 3 is new again, and goes to a new segment: the failed one takes nothing more.
  auto three = Hold(*s, Chunk(2, 3), &held, &flush);
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_FALSE(three->duplicate);
  EXPECT_NE(three->position.segment, two->position.segment);
  held.WriteFiles(held.flight());
  held.Publish(s.get(), held.flight());
  held.Release();
  auto producer_two = [&](const Streamlet& from) {
    std::vector<uint64_t> out;
    for (const auto& [at, seq] : ReadAll(from)) {
      if (at.group == two->position.group) out.push_back(seq);
    }
    return out;
  };
  EXPECT_EQ(producer_two(*s), (std::vector<uint64_t>{1, 2, 3}));
  s.reset();
  EXPECT_EQ(producer_two(*Open(0, &env)), (std::vector<uint64_t>{1, 2, 3}))
      << "the files hold a discarded chunk, or lost one";
}

TEST_F(HeldAppendsTest, AFlightsChunksReachTheirSegmentsFileInOneWriteBeforeTheyArePublished) {
  FailingWritesEnv env;
  auto s = Open(0, &env);
  HeldAppends held;
  HoldRange(*s, 2, 1, 3, &held);  // one slot, one segment
  const uint64_t flight = held.flight();
  EXPECT_EQ(env.writes.load(), 0) << "a held chunk was written to the file before its flight";
  held.WriteFiles(flight);
  EXPECT_EQ(env.writes.load(), 1);
  held.WriteFiles(flight);
  EXPECT_EQ(env.writes.load(), 1) << "the flight was written twice";
  held.Publish(s.get(), flight);
  held.Release();
  s.reset();
  std::vector<uint64_t> sequences;
  for (const auto& [at, seq] : ReadAll(*Open(0, &env))) sequences.push_back(seq);
  EXPECT_EQ(sequences, (std::vector<uint64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace nearstream::storage
