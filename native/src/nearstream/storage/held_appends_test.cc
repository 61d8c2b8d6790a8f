#include "nearstream/storage/held_appends.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "nearstream/storage/chunk.h"

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
  std::unique_ptr<Streamlet> Open(uint32_t id = 0) {
    auto s =
        std::make_unique<Streamlet>(id, &config_, Env::Default(), dir_ + "/" + std::to_string(id));
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

  std::string dir_;
  StreamConfig config_;
};

TEST_F(HeldAppendsTest, HeldChunksReachReadersOnlyWhenPublishedAndInOrder) {
  auto s = Open();
  HeldAppends held;
  bool flush = false;
  std::vector<Position> at;
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    auto r = Hold(*s, Chunk(2, seq), &held, &flush);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_FALSE(flush);
    EXPECT_FALSE(r->duplicate);
    at.push_back(r->position);
  }
  // One segment, one after the other, as a follower must take them.
  EXPECT_EQ(at[1].segment, at[0].segment);
  EXPECT_GT(at[1].offset, at[0].offset);
  EXPECT_GT(at[2].offset, at[1].offset);
  std::vector<HeldAppends::Chunk> chunks = held.ChunksOf(s.get());
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[2].at, at[2]);
  EXPECT_TRUE(ReadAll(*s).empty()) << "a reader saw a held chunk";
  EXPECT_EQ(s->tail(), at[0]) << "the tail moved before the publish";

  held.Publish(s.get());
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
    held.Publish(s.get());
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
  held.Publish(s.get());
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
  EXPECT_EQ(held.ChunksOf(s.get()).size(), 4u) << "a refused call held something";

  held.Publish(s.get());
  held.Release();
  retry = Hold(*s, Chunk(2, 3), &held, &flush);
  ASSERT_TRUE(retry.ok());
  EXPECT_FALSE(flush);
  EXPECT_TRUE(retry->duplicate);
  fifth = Hold(*s, Chunk(2, 5), &held, &flush);
  ASSERT_TRUE(fifth.ok()) << fifth.status().ToString();
  EXPECT_FALSE(flush);
  held.Publish(s.get());
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
  EXPECT_EQ(second.streamlets(), (std::vector<Streamlet*>{b.get(), a.get()}));
  first.Publish(a.get());
  first.Release();
  second.Publish(a.get());
  second.Publish(b.get());
  second.Release();
  // Two slots, two open groups: a reader would wait at the first, so count the published bytes.
  const uint64_t chunk_bytes = Chunk(2, 1).size();
  EXPECT_EQ(a->bytes(), 2 * chunk_bytes);
  EXPECT_EQ(b->bytes(), chunk_bytes);
}

}  // namespace
}  // namespace nearstream::storage
