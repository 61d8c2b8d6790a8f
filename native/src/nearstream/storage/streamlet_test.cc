#include "nearstream/storage/streamlet.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/storage/chunk.h"
#include "nearstream/testing/fault_injection_env.h"
#include "nearstream/testing/forwarding_env.h"
#include "nearstream/testing/test_chunks.h"

namespace nearstream::storage {

namespace {

constexpr uint32_t kSegmentBytes = 4096;  // the minimum: tests stay small and fast
constexpr uint32_t kChunkBytes = 1000;    // four of them fill a segment, the fifth does not fit
constexpr uint32_t kBig = 1u << 30;       // a read budget that never runs out

// testing/test_chunks.h's, with this file's chunk size by default.
Bytes MakeChunk(uint64_t producer, uint64_t sequence, uint32_t size = kChunkBytes,
                uint32_t tag = 0) {
  return storage::MakeChunk(producer, sequence, size, tag);
}

std::string SegmentPath(const std::string& dir, uint64_t group, uint64_t segment) {
  char name[64];
  std::snprintf(name, sizeof(name), "%020" PRIu64 "-%020" PRIu64 ".seg", group, segment);
  return dir + "/" + name;
}

uint64_t DiskSize(const std::string& path) { return std::filesystem::file_size(path); }

void FlipByte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.is_open()) << path;
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5A);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

class StreamletTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nearstream_streamlet_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/0";
    config_.name = "test";
    config_.segment_bytes = kSegmentBytes;
    config_.segments_per_group = 4;
    config_.active_groups = 1;
    config_.durability = Durability::kNone;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  // A memory-only streamlet (config_ must not change while it lives).
  std::unique_ptr<Streamlet> Memory(uint32_t id = 0) {
    return std::make_unique<Streamlet>(id, &config_, &env_, "");
  }
  // A streamlet with files in dir_, recovered from whatever is there.
  std::unique_ptr<Streamlet> Durable(Durability d, int64_t now_ms = 0) {
    config_.durability = d;
    auto s = std::make_unique<Streamlet>(0, &config_, &env_, dir_);
    Status st = s->Recover(now_ms);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return s;
  }
  std::string Seg(uint64_t group, uint64_t segment) const {
    return SegmentPath(dir_, group, segment);
  }

  std::string root_;
  std::string dir_;
  StreamConfig config_;
  FaultInjectionEnv env_{Env::Default()};
};

// ---------------------------------------------------------------------------------------------
// Segments and groups

TEST_F(StreamletTest, ChunkNeverStraddlesSegments) {
  auto s = Memory();
  std::vector<Position> at;
  for (uint64_t i = 0; i < 5; ++i) {
    auto r = AppendChunk(*s, MakeChunk(0, i));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    at.push_back(r->position);
  }
  EXPECT_EQ(at[0], (Position{1, 1, 0}));
  EXPECT_EQ(at[3], (Position{1, 1, 3000}));
  // 4000 + 1000 > 4096: the fifth chunk opens segment 2 of the same group.
  EXPECT_EQ(at[4], (Position{1, 2, 0}));
  StreamletInfo info = s->Describe();
  ASSERT_EQ(info.groups.size(), 1u);
  EXPECT_EQ(info.groups[0].segment_count, 2u);
  EXPECT_EQ(info.groups[0].bytes, 5000u);
  EXPECT_FALSE(info.groups[0].closed);

  // Odd sizes: every chunk ends inside its segment.
  for (uint64_t i = 5; i < 60; ++i) {
    const uint32_t size = 100 + static_cast<uint32_t>((i * 977) % 3900);
    auto r = AppendChunk(*s, MakeChunk(0, i, size));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_LE(r->position.offset + size, kSegmentBytes) << r->position.ToString();
  }
}

TEST_F(StreamletTest, FullGroupClosesAndNextGroupOpens) {
  config_.segments_per_group = 2;
  auto s = Memory();
  Position last;
  for (uint64_t i = 0; i < 9; ++i) {
    auto r = AppendChunk(*s, MakeChunk(0, i));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    last = r->position;
  }
  // Eight chunks fill segments 1 and 2 of group 1; the ninth opens group 2 with segment 3.
  EXPECT_EQ(last, (Position{2, 3, 0}));
  StreamletInfo info = s->Describe();
  ASSERT_EQ(info.groups.size(), 2u);
  EXPECT_EQ(info.groups[0].id, 1u);
  EXPECT_TRUE(info.groups[0].closed);
  EXPECT_EQ(info.groups[0].first_segment, 1u);
  EXPECT_EQ(info.groups[0].segment_count, 2u);
  EXPECT_EQ(info.groups[1].id, 2u);
  EXPECT_FALSE(info.groups[1].closed);
  EXPECT_EQ(info.groups[1].first_segment, 3u);
  EXPECT_EQ(info.head, (Position{1, 1, 0}));
  EXPECT_EQ(info.tail, (Position{2, 3, 1000}));
}

TEST_F(StreamletTest, IdsGrowMonotonically) {
  config_.segments_per_group = 2;
  auto s = Memory();
  Position prev;
  for (uint64_t i = 0; i < 200; ++i) {
    const uint32_t size = 60 + static_cast<uint32_t>((i * 2654435761u) % 4000);
    auto r = AppendChunk(*s, MakeChunk(0, i, size));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(prev < r->position) << prev.ToString() << " then " << r->position.ToString();
    if (r->position.group > prev.group) {
      EXPECT_GT(r->position.segment, prev.segment);
    }
    prev = r->position;
  }
  StreamletInfo info = s->Describe();
  ASSERT_GT(info.groups.size(), 10u);
  for (size_t i = 1; i < info.groups.size(); ++i) {
    EXPECT_EQ(info.groups[i].id, info.groups[i - 1].id + 1);
    EXPECT_GT(info.groups[i].first_segment, info.groups[i - 1].first_segment);
    EXPECT_TRUE(info.groups[i - 1].closed);
  }
  EXPECT_FALSE(info.groups.back().closed);
}

TEST_F(StreamletTest, ChunkLargerThanSegmentIsRejected) {
  auto s = Memory();
  auto r = AppendChunk(*s, MakeChunk(3, 0, kSegmentBytes + 1));
  EXPECT_EQ(r.status().code(), StatusCode::kChunkTooLarge) << r.status().ToString();
  EXPECT_EQ(s->bytes(), 0u);
  EXPECT_TRUE(s->Describe().groups.empty());
  EXPECT_TRUE(ReadAll(*s).empty());
  // Nothing was recorded for the producer either: its sequence 0 is still new.
  auto exact = AppendChunk(*s, MakeChunk(3, 0, kSegmentBytes));
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  EXPECT_FALSE(exact->duplicate);
  EXPECT_EQ(exact->position, (Position{1, 1, 0}));
  auto next = AppendChunk(*s, MakeChunk(3, 1, 100));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->position, (Position{1, 2, 0}));
}

// ---------------------------------------------------------------------------------------------
// Q active groups

TEST_F(StreamletTest, ProducersSpreadOverActiveGroups) {
  config_.active_groups = 3;
  auto s = Memory();
  std::vector<uint64_t> group;
  for (uint64_t p = 0; p < 5; ++p) {
    auto r = AppendChunk(*s, MakeChunk(p, 0));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    group.push_back(r->position.group);
  }
  EXPECT_NE(group[0], group[1]);
  EXPECT_NE(group[1], group[2]);
  EXPECT_NE(group[0], group[2]);
  EXPECT_EQ(group[3], group[0]);  // 3 mod 3 == 0
  EXPECT_EQ(group[4], group[1]);
  EXPECT_EQ(s->Describe().groups.size(), 3u);
}

TEST_F(StreamletTest, ReaderGoesGroupByGroupInIdOrder) {
  config_.active_groups = 2;
  config_.segments_per_group = 1;
  auto s = Memory();
  // Producers 0 and 1 interleave; with P = 1 each group holds four chunks.
  std::vector<ReadChunk> appended;
  for (uint64_t i = 0; i < 8; ++i) {
    for (uint64_t p = 0; p < 2; ++p) {
      Bytes c = MakeChunk(p, i);
      auto r = AppendChunk(*s, c);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      appended.push_back({r->position, c});
    }
  }
  // Groups: 1 = producer 0 seq 0-3, 2 = producer 1 seq 0-3, 3 and 4 = seq 4-7 (still active).
  Position end;
  std::vector<ReadChunk> got = ReadAll(*s, {}, kBig, &end);
  ASSERT_EQ(got.size(), 12u);  // group 4 waits behind active group 3
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].at.group, 1 + i / 4) << i;
    auto h = DecodeChunkHeader(got[i].bytes.data(), got[i].bytes.size());
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->producer_id, (i / 4) % 2) << i;
    EXPECT_EQ(h->sequence, i % 4 + (i >= 8 ? 4 : 0)) << i;
  }
  EXPECT_EQ(end.group, 3u);
  // Group 3 idles (it is not the newest group): closing it lets the reader reach group 4.
  s->Maintain(1000, 1000);
  std::vector<ReadChunk> rest = ReadAll(*s, end);
  ASSERT_EQ(rest.size(), 4u);
  for (const auto& c : rest) EXPECT_EQ(c.at.group, 4u);
  // Everything was read exactly once, in the order of positions.
  got.insert(got.end(), rest.begin(), rest.end());
  std::sort(appended.begin(), appended.end(),
            [](const ReadChunk& a, const ReadChunk& b) { return a.at < b.at; });
  EXPECT_EQ(got, appended);
}

TEST_F(StreamletTest, MaintainClosesIdleGroupSoReaderMovesOn) {
  config_.active_groups = 2;
  auto s = Memory();
  ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, 0), 0).ok());  // group 1
  ASSERT_TRUE(AppendChunk(*s, MakeChunk(1, 0), 0).ok());  // group 2
  Position at;
  std::vector<ReadChunk> got = ReadAll(*s, {}, kBig, &at);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].at.group, 1u);
  EXPECT_EQ(at, (Position{1, 1, 1000}));

  s->Maintain(999, 1000);  // not idle long enough
  EXPECT_TRUE(ReadAll(*s, at).empty());
  s->Maintain(1000, 1000);  // group 1 idle for 1000 ms: closed
  StreamletInfo info = s->Describe();
  ASSERT_EQ(info.groups.size(), 2u);
  EXPECT_TRUE(info.groups[0].closed);
  EXPECT_FALSE(info.groups[1].closed);  // the newest group is never closed for idleness
  got = ReadAll(*s, at, kBig, &at);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].at, (Position{2, 2, 0}));

  // Producer 0 comes back: a new group (3) replaces the closed one.
  auto r = AppendChunk(*s, MakeChunk(0, 1), 1500);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->position.group, 3u);
  EXPECT_TRUE(ReadAll(*s, at).empty());  // group 2 is still active
  s->Maintain(2000, 1000);               // group 2 idle since 0 and no longer the newest
  got = ReadAll(*s, at);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].at, r->position);
}

// ---------------------------------------------------------------------------------------------
// Reads

TEST_F(StreamletTest, ReadReturnsWholeChunksAndAtLeastOne) {
  auto s = Memory();
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
  ChunkBuilder b;
  for (int i = 0; i < 3; ++i) b.Add(std::string(900, 'x'));
  Bytes three = b.Finish(0, 0, 0);  // 48 + 3 * 904 = 2760 bytes, 3 records
  auto big = AppendChunk(*s, three);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->position, (Position{1, 2, 0}));

  std::vector<ReadChunk> got;
  auto r = ReadOnce(*s, {}, 1, &got);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->chunks, 1u);
  EXPECT_EQ(r->bytes, 1000u);
  EXPECT_EQ(r->records, 1u);
  EXPECT_EQ(r->next, (Position{1, 1, 1000}));

  got.clear();
  r = ReadOnce(*s, {}, 1999, &got);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(got.size(), 1u);
  got.clear();
  r = ReadOnce(*s, {}, 2000, &got);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(r->next, (Position{1, 1, 2000}));

  // A chunk bigger than the budget still comes whole.
  got.clear();
  r = ReadOnce(*s, big->position, 100, &got);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes, three);
  EXPECT_EQ(r->records, 3u);
  EXPECT_EQ(r->next, (Position{1, 2, 2760}));
}

TEST_F(StreamletTest, ManySmallReadsEqualOneBigRead) {
  config_.segments_per_group = 2;
  auto s = Memory();
  std::vector<ReadChunk> appended;
  for (uint64_t i = 0; i < 60; ++i) {
    Bytes c = MakeChunk(0, i, 60 + static_cast<uint32_t>((i * 7919) % 2500));
    auto r = AppendChunk(*s, c);
    ASSERT_TRUE(r.ok());
    appended.push_back({r->position, c});
  }
  // One read crosses segments and (closed) groups.
  std::vector<ReadChunk> one;
  auto r = ReadOnce(*s, {}, kBig, &one);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->chunks, 60u);
  EXPECT_EQ(r->next, r->tail);
  EXPECT_EQ(one, appended);
  for (uint32_t budget : {1u, 700u, 2500u, 5000u}) {
    Position end;
    EXPECT_EQ(ReadAll(*s, {}, budget, &end), appended) << "budget " << budget;
    EXPECT_EQ(end, r->tail);
  }
}

TEST_F(StreamletTest, EarliestAndTailPositions) {
  auto s = Memory();
  std::vector<ReadChunk> got;
  auto r = ReadOnce(*s, {}, kBig, &got);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bytes, 0u);
  EXPECT_TRUE(r->next.is_earliest());
  EXPECT_TRUE(r->tail.is_earliest());

  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
  r = ReadOnce(*s, {}, kBig, &got);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].at, (Position{1, 1, 0}));  // the earliest position is the first chunk
  EXPECT_EQ(r->next, (Position{1, 1, 3000}));
  EXPECT_EQ(r->tail, r->next);
  // At the tail: nothing, and the same position again.
  got.clear();
  auto again = ReadOnce(*s, r->next, kBig, &got);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->bytes, 0u);
  EXPECT_EQ(again->chunks, 0u);
  EXPECT_EQ(again->next, r->next);
  EXPECT_TRUE(got.empty());
}

TEST_F(StreamletTest, PositionOutsideDataIsOutOfRange) {
  auto s = Memory();
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
  std::vector<ReadChunk> got;
  for (Position p : {Position{2, 1, 0}, Position{1, 2, 0}, Position{1, 1, 3001}, Position{0, 0, 8},
                     Position{7, 7, 7}}) {
    auto r = ReadOnce(*s, p, kBig, &got);
    EXPECT_EQ(r.status().code(), StatusCode::kPositionOutOfRange) << p.ToString();
  }
  EXPECT_TRUE(got.empty());
}

// A position is client input (fetch requests). One that is not at a chunk boundary must be
// refused: otherwise Read takes record bytes for a chunk length and hands out a block that runs
// past the segment's committed bytes (and past its buffer: the broker copies it into a reply).
TEST_F(StreamletTest, ReadAtMidChunkOffsetIsRejected) {
  auto s = Memory();
  ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, 0)).ok());
  ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, 1)).ok());
  for (uint32_t offset : {1u, 8u, 47u, 52u, 999u}) {
    uint64_t handed_out = 0;
    bool past_committed = false;
    // The sink only looks at sizes: touching the bytes could run past the heap buffer.
    auto r = s->Read(Position{1, 1, offset}, kBig,
                     [&](const Position& at, const uint8_t*, uint32_t size) {
                       handed_out += size;
                       if (uint64_t{at.offset} + size > 2000) past_committed = true;
                     });
    EXPECT_EQ(r.status().code(), StatusCode::kPositionOutOfRange)
        << "offset " << offset << ": read handed out " << handed_out << " bytes";
    EXPECT_FALSE(past_committed) << "offset " << offset << ": a block of " << handed_out
                                 << " bytes runs past the 2000 committed bytes";
  }
}

// The mid-chunk check only verifies the header at the requested offset. A producer can put a
// valid chunk header inside a record; a fetch at that offset passes the check, and the walk then
// reads the record's following bytes as the next chunk's length. That must not take the broker
// down (NS_CHECK aborts the process): it is client input, like any other bad position.
class StreamletDeathTest : public StreamletTest {};

TEST_F(StreamletDeathTest, ReadAtChunkHeaderForgedInsideARecordDoesNotAbort) {
  auto s = Memory();
  ChunkBuilder inner;
  inner.Add("x");
  Bytes forged = inner.Finish(0, 0, 0);  // 53 bytes, valid on its own
  std::string record(forged.begin(), forged.end());
  for (int i = 0; i < 16; ++i) record += std::string("\xff\xff\xff\x00", 4);  // "length" 2^24-1
  ChunkBuilder outer;
  outer.Add(record);
  Bytes chunk = outer.Finish(0, 0, 0);
  ASSERT_TRUE(AppendChunk(*s, chunk).ok());
  ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, 1)).ok());
  const Position at{1, 1, kChunkHeaderSize + kRecordLengthPrefix};  // the forged header
  EXPECT_EXIT(
      {
        auto r = s->Read(at, kBig, [](const Position&, const uint8_t*, uint32_t) {});
        std::fprintf(stderr, "read returned %s\n", r.status().ToString().c_str());
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "read returned");
}

TEST_F(StreamletTest, ConcurrentReaderSeesOnlyWholeValidChunks) {
  config_.segments_per_group = 2;
  auto s = Memory();
  constexpr uint64_t kCount = 400;
  std::thread writer([&] {
    for (uint64_t i = 0; i < kCount; ++i) {
      auto r = AppendChunk(*s, MakeChunk(5, i, 60 + static_cast<uint32_t>((i * 131) % 1500)));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
  });
  Position at;
  uint64_t expected = 0;
  for (int spins = 0; expected < kCount && spins < 2000000; ++spins) {
    std::vector<ReadChunk> got;
    auto r = ReadOnce(*s, at, 3000, &got);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (const auto& c : got) {
      auto h = DecodeChunkHeader(c.bytes.data(), c.bytes.size());
      ASSERT_TRUE(h.ok());
      ASSERT_EQ(h->sequence, expected);
      ++expected;
    }
    at = r->next;
    if (got.empty()) std::this_thread::yield();
  }
  writer.join();
  EXPECT_EQ(expected, kCount);
}

// ---------------------------------------------------------------------------------------------
// Idempotent producers

TEST_F(StreamletTest, DuplicateSequenceAckedWithOriginalPosition) {
  auto s = Memory();
  std::vector<Position> at;
  for (uint64_t i = 0; i < 3; ++i) {
    auto r = AppendChunk(*s, MakeChunk(7, i));
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->duplicate);
    at.push_back(r->position);
  }
  for (uint64_t i : {1u, 0u, 2u}) {
    auto retry = AppendChunk(*s, MakeChunk(7, i));
    ASSERT_TRUE(retry.ok()) << retry.status().ToString();
    EXPECT_TRUE(retry->duplicate);
    EXPECT_EQ(retry->position, at[i]);
  }
  EXPECT_EQ(s->bytes(), 3000u);
  EXPECT_EQ(ReadAll(*s).size(), 3u);
  // Far older than the remembered window: still a duplicate, its place is forgotten.
  for (uint64_t i = 3; i < 20; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(7, i)).ok());
  auto old = AppendChunk(*s, MakeChunk(7, 0));
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(old->duplicate);
  EXPECT_TRUE(old->position.is_earliest());
  EXPECT_EQ(s->bytes(), 20000u);
}

TEST_F(StreamletTest, SequenceGapIsRejectedAndNothingAppended) {
  auto s = Memory();
  ASSERT_TRUE(AppendChunk(*s, MakeChunk(7, 0)).ok());
  auto gap = AppendChunk(*s, MakeChunk(7, 2));
  EXPECT_EQ(gap.status().code(), StatusCode::kOutOfOrderSequence) << gap.status().ToString();
  EXPECT_EQ(s->bytes(), 1000u);
  EXPECT_EQ(ReadAll(*s).size(), 1u);
  auto next = AppendChunk(*s, MakeChunk(7, 1));
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->duplicate);
  EXPECT_TRUE(AppendChunk(*s, MakeChunk(7, 2)).ok());
}

TEST_F(StreamletTest, ProducerZeroIsNeverDeduplicated) {
  auto s = Memory();
  Bytes c = MakeChunk(0, 0);
  auto a = AppendChunk(*s, c);
  auto b = AppendChunk(*s, c);
  auto old = AppendChunk(*s, MakeChunk(0, 0, 500));
  ASSERT_TRUE(a.ok() && b.ok() && old.ok());
  EXPECT_FALSE(a->duplicate);
  EXPECT_FALSE(b->duplicate);
  EXPECT_FALSE(old->duplicate);
  EXPECT_NE(a->position, b->position);
  EXPECT_EQ(ReadAll(*s).size(), 3u);
}

TEST_F(StreamletTest, SequencesAreIndependentPerStreamlet) {
  auto s0 = Memory(0);
  auto s1 = Memory(1);
  for (uint64_t i = 0; i < 3; ++i) {
    auto a = AppendChunk(*s0, MakeChunk(9, i));
    auto b = AppendChunk(*s1, MakeChunk(9, i));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_FALSE(a->duplicate);
    EXPECT_FALSE(b->duplicate);
  }
  // Streamlet 2 starts producer 9 at 10 (its own first sequence); streamlet 0 is not affected.
  auto s2 = Memory(2);
  ASSERT_TRUE(AppendChunk(*s2, MakeChunk(9, 10)).ok());
  EXPECT_EQ(AppendChunk(*s0, MakeChunk(9, 4)).status().code(), StatusCode::kOutOfOrderSequence);
  EXPECT_TRUE(AppendChunk(*s0, MakeChunk(9, 3)).ok());
}

// A producer's very first append fails (storage error). Its retry of the same chunk must be
// appended; a retry of sequence 0 (the first sequence clients use) must not be acknowledged as a
// duplicate of a chunk that was never stored, and a first sequence > 0 must not become a "gap".
TEST_F(StreamletTest, FailedFirstAppendDoesNotSwallowTheRetry) {
  auto s = Durable(Durability::kSync);
  env_.SetOpenAppendableFailure(true);
  EXPECT_EQ(AppendChunk(*s, MakeChunk(9, 0)).status().code(), StatusCode::kStorageError);
  EXPECT_EQ(AppendChunk(*s, MakeChunk(11, 5)).status().code(), StatusCode::kStorageError);
  env_.SetOpenAppendableFailure(false);

  auto retry = AppendChunk(*s, MakeChunk(9, 0));
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_FALSE(retry->duplicate) << "the retried chunk was dropped and acknowledged at "
                                 << retry->position.ToString();
  auto other = AppendChunk(*s, MakeChunk(11, 5));
  EXPECT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(ReadAll(*s).size(), 2u);
}

// ---------------------------------------------------------------------------------------------
// Durability

TEST_F(StreamletTest, AsyncAppendsMarkDirtyAndSyncDirtySyncsThem) {
  auto s = Durable(Durability::kAsync);
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
  EXPECT_EQ(env_.FileSize(Seg(1, 1)), 3000u);
  EXPECT_EQ(DiskSize(Seg(1, 1)), 3000u);
  EXPECT_EQ(env_.SyncedSize(Seg(1, 1)), 0u);
  EXPECT_EQ(env_.sync_count(), 0);

  ASSERT_TRUE(s->SyncDirty().ok());
  EXPECT_EQ(env_.SyncedSize(Seg(1, 1)), 3000u);
  EXPECT_EQ(env_.sync_count(), 1);
  ASSERT_TRUE(s->SyncDirty().ok());
  EXPECT_EQ(env_.sync_count(), 1);  // nothing new: no fsync

  for (uint64_t i = 3; i < 6; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
  EXPECT_EQ(env_.SyncedSize(Seg(1, 2)), 0u);
  ASSERT_TRUE(s->SyncDirty().ok());
  EXPECT_EQ(env_.sync_count(), 3);  // segments 1 and 2 were both appended to
  EXPECT_EQ(env_.SyncedSize(Seg(1, 1)), 4000u);
  EXPECT_EQ(env_.SyncedSize(Seg(1, 2)), 2000u);

  // A failed fsync keeps the segment dirty for the next round.
  ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, 6)).ok());
  env_.SetSyncFailure(true);
  EXPECT_EQ(s->SyncDirty().code(), StatusCode::kStorageError);
  env_.SetSyncFailure(false);
  EXPECT_EQ(env_.SyncedSize(Seg(1, 2)), 2000u);
  ASSERT_TRUE(s->SyncDirty().ok());
  EXPECT_EQ(env_.SyncedSize(Seg(1, 2)), 3000u);
}

TEST_F(StreamletTest, SyncDurabilitySyncsEveryAppendBeforeItIsAcknowledged) {
  auto s = Durable(Durability::kSync);
  for (uint64_t i = 0; i < 10; ++i) {
    auto r = AppendChunk(*s, MakeChunk(0, i));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const std::string path = Seg(r->position.group, r->position.segment);
    EXPECT_EQ(env_.FileSize(path), r->position.offset + kChunkBytes) << i;
    EXPECT_EQ(env_.SyncedSize(path), env_.FileSize(path)) << i;
  }
  EXPECT_EQ(env_.sync_count(), 10);
}

TEST_F(StreamletTest, MemoryOnlyStreamletTouchesNoFiles) {
  auto s = Memory();
  for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
  EXPECT_TRUE(s->Recover(0).ok());
  EXPECT_TRUE(s->SyncDirty().ok());
  EXPECT_TRUE(s->Maintain(0, 1).empty());
  EXPECT_TRUE(env_.TrackedFiles().empty());
  EXPECT_EQ(env_.sync_count(), 0);
  EXPECT_TRUE(std::filesystem::is_empty(root_));
}

// ---------------------------------------------------------------------------------------------
// Recovery

TEST_F(StreamletTest, RecoveryRestoresRecordsAndPositions) {
  config_.active_groups = 2;
  config_.segments_per_group = 2;
  std::vector<ReadChunk> appended;
  {
    auto s = Durable(Durability::kSync);
    for (uint64_t i = 0; i < 20; ++i) {
      for (uint64_t p = 1; p <= 2; ++p) {
        Bytes c = MakeChunk(p, i, 200 + static_cast<uint32_t>((i * 331 + p * 17) % 1800));
        auto r = AppendChunk(*s, c);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        appended.push_back({r->position, c});
      }
    }
  }
  std::sort(appended.begin(), appended.end(),
            [](const ReadChunk& a, const ReadChunk& b) { return a.at < b.at; });
  uint64_t max_segment = 0;
  for (const auto& c : appended) max_segment = std::max(max_segment, c.at.segment);
  auto s = Durable(Durability::kSync);
  StreamletInfo info = s->Describe();
  ASSERT_FALSE(info.groups.empty());
  for (const auto& g : info.groups) EXPECT_TRUE(g.closed) << "group " << g.id;
  // Every group is closed, so one read from the earliest position returns everything.
  Position end;
  EXPECT_EQ(ReadAll(*s, {}, kBig, &end), appended);
  EXPECT_EQ(s->bytes(), [&] {
    uint64_t n = 0;
    for (const auto& c : appended) n += c.bytes.size();
    return n;
  }());

  // Appends go to a new group with higher ids; the reader continues into it.
  Bytes c = MakeChunk(1, 20);
  auto r = AppendChunk(*s, c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->duplicate);
  EXPECT_GT(r->position.group, info.groups.back().id);
  EXPECT_GT(r->position.segment, max_segment);
  EXPECT_EQ(r->position.offset, 0u);
  std::vector<ReadChunk> more = ReadAll(*s, end);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0].at, r->position);
  EXPECT_EQ(more[0].bytes, c);
}

TEST_F(StreamletTest, ProducerStateSurvivesRecovery) {
  std::vector<Position> at;
  {
    auto s = Durable(Durability::kSync);
    for (uint64_t i = 0; i < 5; ++i) {
      auto r = AppendChunk(*s, MakeChunk(7, i));
      ASSERT_TRUE(r.ok());
      at.push_back(r->position);
    }
  }
  auto s = Durable(Durability::kSync);
  auto retry = AppendChunk(*s, MakeChunk(7, 4));
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_TRUE(retry->duplicate);
  EXPECT_EQ(retry->position, at[4]);
  auto older = AppendChunk(*s, MakeChunk(7, 2));
  ASSERT_TRUE(older.ok());
  EXPECT_TRUE(older->duplicate);
  EXPECT_EQ(older->position, at[2]);
  EXPECT_EQ(AppendChunk(*s, MakeChunk(7, 6)).status().code(), StatusCode::kOutOfOrderSequence);
  auto next = AppendChunk(*s, MakeChunk(7, 5));
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->duplicate);
  EXPECT_EQ(ReadAll(*s).size(), 6u);
}

TEST_F(StreamletTest, RecoveryCutsGarbageTail) {
  {
    auto s = Durable(Durability::kSync);
    for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
  }
  ASSERT_TRUE(env_.CorruptUnsyncedTail(Seg(1, 1), Bytes(100, 0xAB)).ok());
  ASSERT_EQ(DiskSize(Seg(1, 1)), 3100u);
  auto s = Durable(Durability::kSync);
  std::vector<ReadChunk> got = ReadAll(*s);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].bytes, MakeChunk(0, 2));
  EXPECT_EQ(DiskSize(Seg(1, 1)), 3000u);  // the file was cut too
  EXPECT_EQ(s->bytes(), 3000u);
}

TEST_F(StreamletTest, RecoveryCutsHalfWrittenChunk) {
  for (uint32_t torn : {20u, 48u, 500u, 999u}) {
    SCOPED_TRACE("torn chunk of " + std::to_string(torn) + " bytes");
    std::filesystem::remove_all(dir_);
    {
      auto s = Durable(Durability::kSync);
      for (uint64_t i = 0; i < 2; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
    }
    Bytes next = MakeChunk(0, 2);
    next.resize(torn);
    ASSERT_TRUE(env_.CorruptUnsyncedTail(Seg(1, 1), next).ok());
    auto s = Durable(Durability::kSync);
    EXPECT_EQ(ReadAll(*s).size(), 2u);
    EXPECT_EQ(DiskSize(Seg(1, 1)), 2000u);
    // The producer's state ends at the last whole chunk: sequence 2 is new, not a duplicate.
    auto r = AppendChunk(*s, MakeChunk(0, 2));
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->duplicate);
  }
}

// Reads everything from the earliest position like ReadAll, but steps over damaged ranges: each
// kDataLoss read is checked against DamageAt and recorded in `damage`.
std::vector<ReadChunk> ReadSkippingDamage(const Streamlet& s, std::vector<DamagedRange>* damage) {
  std::vector<ReadChunk> out;
  Position from;
  for (int i = 0; i < 1000; ++i) {
    auto r = ReadOnce(s, from, kBig, &out);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().ToString();
      std::optional<DamagedRange> d = s.DamageAt(from);
      if (!d.has_value()) {
        ADD_FAILURE() << "kDataLoss at " << from.ToString() << " but no damaged range there";
        break;
      }
      EXPECT_NE(r.status().message().find(d->from.ToString()), std::string::npos)
          << r.status().message();
      EXPECT_NE(r.status().message().find(d->next().ToString()), std::string::npos)
          << r.status().message();
      damage->push_back(*d);
      from = d->next();
      continue;
    }
    from = r->next;
    if (r->bytes == 0) break;
  }
  return out;
}

// A bit flipped in a sealed segment that a later segment of its group follows was not torn by a
// crash: the bytes were whole when the next segment began. Recovery keeps the file as it is and
// records the damage; reads stop there with kDataLoss instead of skipping acknowledged chunks.
TEST_F(StreamletTest, RecoveryReportsDamageInAMiddleSegment) {
  struct Case {
    uint64_t offset;     // the flipped byte
    uint32_t from;       // where the damaged range starts
    uint32_t length;     // and its length
    std::string reason;  // part of the reason given
    size_t lost;         // chunks in it
  };
  for (const Case& c : {Case{2100, 2000, 1000, "payload CRC", 1},  // the payload: that chunk
                        Case{3999, 3000, 1000, "payload CRC", 1},
                        Case{1020, 1000, 3000, "header", 3},  // a header: the rest of the segment
                        Case{3, 0, 4000, "magic", 4}}) {
    SCOPED_TRACE("byte " + std::to_string(c.offset));
    std::filesystem::remove_all(dir_);
    {
      auto s = Durable(Durability::kSync);
      for (uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
    }
    FlipByte(Seg(1, 1), c.offset);
    auto s = Durable(Durability::kSync);
    EXPECT_EQ(DiskSize(Seg(1, 1)), 4 * kChunkBytes);  // nothing is cut off the file

    std::vector<DamagedRange> all = s->Damaged();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].from, (Position{1, 1, c.from}));
    EXPECT_EQ(all[0].length, c.length);
    EXPECT_NE(all[0].reason.find(c.reason), std::string::npos) << all[0].reason;

    std::vector<DamagedRange> met;
    std::vector<ReadChunk> got = ReadSkippingDamage(*s, &met);
    ASSERT_EQ(met.size(), 1u);
    EXPECT_EQ(met[0].from, all[0].from);
    ASSERT_EQ(got.size(), 5 - c.lost);
    size_t g = 0;
    for (uint64_t i = 0; i < 5; ++i) {
      const uint32_t at = static_cast<uint32_t>(i % 4 * kChunkBytes);
      if (i < 4 && at >= c.from && at < c.from + c.length) continue;  // in the damaged range
      EXPECT_EQ(got[g++].bytes, MakeChunk(0, i)) << "chunk " << i;
    }
    EXPECT_EQ(got.back().at, (Position{1, 2, 0}));
    // A read that stops right before the damage serves what comes before it.
    if (c.from > 0) {
      std::vector<ReadChunk> before;
      auto r = ReadOnce(*s, Position{1, 1, 0}, kBig, &before);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->next, (Position{1, 1, c.from}));
      EXPECT_EQ(before.size(), c.from / kChunkBytes);
    }
    // Positions at and after the damaged range stay valid; inside it they are not.
    EXPECT_EQ(s->Read(Position{1, 1, c.from}, kBig, [](auto&&...) {}).status().code(),
              StatusCode::kDataLoss);
    if (c.length > 1) {
      EXPECT_EQ(s->Read(Position{1, 1, c.from + 1}, kBig, [](auto&&...) {}).status().code(),
                StatusCode::kPositionOutOfRange);
    }
    // The producer state comes from the intact chunks: the next sequence is new.
    auto r = AppendChunk(*s, MakeChunk(0, 5));
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->duplicate);
    // The damage is still there after another restart.
    s.reset();
    s = Durable(Durability::kSync);
    EXPECT_EQ(s->Damaged().size(), 1u);
  }
}

// Bytes that do not parse at the end of a group's last segment are a torn append (the crash hit
// it mid-write): cut off the file, as before, and not reported.
TEST_F(StreamletTest, RecoveryCutsAGarbledEndOfAGroupsLastSegment) {
  {
    auto s = Durable(Durability::kSync);
    for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
  }
  FlipByte(Seg(1, 1), 2003);  // the header of the last chunk
  auto s = Durable(Durability::kSync);
  EXPECT_TRUE(s->Damaged().empty());
  EXPECT_EQ(ReadAll(*s).size(), 2u);
  EXPECT_EQ(DiskSize(Seg(1, 1)), 2000u);
}

// Under `async` a power loss can keep a later segment's pages and lose an earlier one's unsynced
// end, so a truncated middle segment is torn, not damaged; under `sync` every acknowledged chunk
// was on disk, so the same truncation is damage.
TEST_F(StreamletTest, TruncatedMiddleSegmentIsTornUnderAsyncAndDamageUnderSync) {
  for (Durability d : {Durability::kAsync, Durability::kSync}) {
    SCOPED_TRACE(d == Durability::kAsync ? "async" : "sync");
    std::filesystem::remove_all(dir_);
    {
      auto s = Durable(d);
      for (uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
      ASSERT_TRUE(s->SyncDirty().ok());
    }
    std::filesystem::resize_file(Seg(1, 1), 2500);
    auto s = Durable(d);
    if (d == Durability::kAsync) {
      EXPECT_TRUE(s->Damaged().empty());
      EXPECT_EQ(ReadAll(*s).size(), 3u);  // chunks 0, 1 and 4
      EXPECT_EQ(DiskSize(Seg(1, 1)), 2000u);
    } else {
      ASSERT_EQ(s->Damaged().size(), 1u);
      EXPECT_EQ(s->Damaged()[0].from, (Position{1, 1, 2000}));
      EXPECT_EQ(s->Damaged()[0].length, 500u);
      std::vector<DamagedRange> met;
      EXPECT_EQ(ReadSkippingDamage(*s, &met).size(), 3u);
      EXPECT_EQ(met.size(), 1u);
      EXPECT_EQ(DiskSize(Seg(1, 1)), 2500u);
    }
  }
}

TEST_F(StreamletTest, RecoveryRemovesEmptySegmentFile) {
  {
    auto s = Durable(Durability::kSync);
    ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, 0)).ok());
  }
  // A crash right after a new segment file was created, before its first chunk was written.
  { std::ofstream(Seg(2, 2)).flush(); }
  auto s = Durable(Durability::kSync);
  EXPECT_FALSE(std::filesystem::exists(Seg(2, 2)));
  EXPECT_EQ(ReadAll(*s).size(), 1u);
  auto r = AppendChunk(*s, MakeChunk(0, 1));
  ASSERT_TRUE(r.ok());
  EXPECT_GE(r->position.group, 3u);  // ids are not reused
  EXPECT_GE(r->position.segment, 3u);
}

// ---------------------------------------------------------------------------------------------
// Injected faults

void CheckDiskFull(FaultInjectionEnv& env, Streamlet& s, const std::string& seg1, bool torn) {
  ASSERT_TRUE(AppendChunk(s, MakeChunk(5, 0)).ok());
  ASSERT_TRUE(AppendChunk(s, MakeChunk(5, 1)).ok());
  env.SetSpaceBudget(500, torn);
  auto full = AppendChunk(s, MakeChunk(5, 2));
  EXPECT_EQ(full.status().code(), StatusCode::kStorageError);
  EXPECT_NE(full.status().message().find("No space left"), std::string::npos)
      << full.status().ToString();
  // Nothing of the failed chunk is visible or left in the file.
  EXPECT_EQ(ReadAll(s).size(), 2u);
  EXPECT_EQ(s.bytes(), 2000u);
  EXPECT_EQ(DiskSize(seg1), 2000u);

  env.ClearSpaceBudget();
  auto r = AppendChunk(s, MakeChunk(5, 2));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->duplicate);
  EXPECT_EQ(r->position, (Position{1, 2, 0}));  // a fresh segment: the old file is not trusted
  std::vector<ReadChunk> got = ReadAll(s);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].bytes, MakeChunk(5, 2));
}

TEST_F(StreamletTest, DiskFullFailsAppendAndNextAppendUsesFreshSegment) {
  {
    auto s = Durable(Durability::kAsync);
    CheckDiskFull(env_, *s, Seg(1, 1), /*torn=*/false);
  }
  auto s = Durable(Durability::kAsync);
  EXPECT_EQ(ReadAll(*s).size(), 3u);
}

TEST_F(StreamletTest, TornWriteOnFullDiskIsRolledBack) {
  {
    auto s = Durable(Durability::kSync);
    CheckDiskFull(env_, *s, Seg(1, 1), /*torn=*/true);
  }
  auto s = Durable(Durability::kSync);
  std::vector<ReadChunk> got = ReadAll(*s);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].at, (Position{1, 2, 0}));
}

TEST_F(StreamletTest, FsyncFailureUnderSyncAcknowledgesNothing) {
  auto s = Durable(Durability::kSync);
  ASSERT_TRUE(AppendChunk(*s, MakeChunk(5, 0)).ok());
  env_.SetSyncFailure(true);
  auto failed = AppendChunk(*s, MakeChunk(5, 1));
  EXPECT_EQ(failed.status().code(), StatusCode::kStorageError);
  env_.SetSyncFailure(false);
  EXPECT_EQ(ReadAll(*s).size(), 1u);
  EXPECT_EQ(s->bytes(), 1000u);
  EXPECT_EQ(DiskSize(Seg(1, 1)), 1000u);
  // The retry is a new chunk (nothing was acknowledged), in a new segment.
  auto retry = AppendChunk(*s, MakeChunk(5, 1));
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_FALSE(retry->duplicate);
  EXPECT_EQ(retry->position, (Position{1, 2, 0}));
  EXPECT_EQ(env_.SyncedSize(Seg(1, 2)), 1000u);
  EXPECT_EQ(ReadAll(*s).size(), 2u);
}

TEST_F(StreamletTest, OpenFailureLeavesStreamletUsable) {
  config_.segments_per_group = 2;
  auto s = Durable(Durability::kSync);
  std::vector<Bytes> chunks;
  uint64_t seq = 0;
  auto append_ok = [&](const Position& want) {
    Bytes c = MakeChunk(5, seq++);
    auto r = AppendChunk(*s, c);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->position, want);
    chunks.push_back(c);
  };
  auto append_fails = [&] {
    env_.SetOpenAppendableFailure(true);
    auto r = AppendChunk(*s, MakeChunk(5, seq));
    env_.SetOpenAppendableFailure(false);
    EXPECT_EQ(r.status().code(), StatusCode::kStorageError) << r.status().ToString();
  };
  append_ok({1, 1, 0});
  for (uint32_t i = 1; i < 4; ++i) append_ok({1, 1, i * 1000});
  append_fails();  // a new segment of group 1
  append_ok({1, 2, 0});
  for (uint32_t i = 1; i < 4; ++i) append_ok({1, 2, i * 1000});
  append_fails();  // a new group
  append_ok({2, 3, 0});
  std::vector<ReadChunk> got = ReadAll(*s);
  ASSERT_EQ(got.size(), chunks.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].bytes, chunks[i]) << i;
}

TEST_F(StreamletTest, FirstOpenFailureOnFreshStreamletIsRetried) {
  auto s = Durable(Durability::kSync);
  env_.SetOpenAppendableFailure(true);
  EXPECT_EQ(AppendChunk(*s, MakeChunk(0, 0)).status().code(), StatusCode::kStorageError);
  env_.SetOpenAppendableFailure(false);
  auto r = AppendChunk(*s, MakeChunk(0, 0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ReadAll(*s).size(), 1u);
  EXPECT_EQ(s->Describe().head, (Position{r->position.group, r->position.segment, 0}));
}

// With Q > 1, a failed segment open must not leave an empty active group behind (readers go
// group by group): the failed open registers no group and consumes no group id.
TEST_F(StreamletTest, OpenFailureWithSeveralActiveGroupsDoesNotBlockReaders) {
  config_.active_groups = 2;
  auto s = Durable(Durability::kSync);
  env_.SetOpenAppendableFailure(true);
  EXPECT_EQ(AppendChunk(*s, MakeChunk(0, 0), 0).status().code(), StatusCode::kStorageError);
  env_.SetOpenAppendableFailure(false);
  ASSERT_TRUE(AppendChunk(*s, MakeChunk(1, 0), 0).ok());
  ASSERT_TRUE(AppendChunk(*s, MakeChunk(1, 1), 0).ok());
  s->Maintain(10000, 1000);  // producer 0's group idles and is closed
  EXPECT_EQ(ReadAll(*s).size(), 2u) << "the reader is stuck behind an empty closed group";
  EXPECT_EQ(s->Describe().head, (Position{1, 1, 0}));
  EXPECT_EQ(s->Describe().groups.size(), 1u);
}

// With Q > 1, a failed segment open for a new group must not leave an empty group between two
// groups that hold data: a reader finishing the first goes straight on to the next one.
TEST_F(StreamletTest, EmptyClosedGroupDoesNotBlockReaders) {
  config_.active_groups = 2;
  config_.segments_per_group = 1;
  auto s = Durable(Durability::kSync);
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i), 0).ok());
  env_.SetOpenAppendableFailure(true);
  EXPECT_FALSE(AppendChunk(*s, MakeChunk(1, 0), 0).ok());  // no group is registered
  env_.SetOpenAppendableFailure(false);
  auto r = AppendChunk(*s, MakeChunk(0, 4), 0);  // group 1 is full: group 2
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->position.group, 2u);
  s->Maintain(10000, 1000);
  ASSERT_EQ(s->Describe().groups.size(), 2u);
  std::vector<ReadChunk> got = ReadAll(*s);
  EXPECT_EQ(got.size(), 5u) << "the reader stopped at the end of group 1";
}

// When the group that replaces a full one cannot open its first segment, the streamlet's tail is
// still the end of the data, not the all-zero (earliest) position: a consumer starting "from the
// tail" would otherwise re-read the whole streamlet.
TEST_F(StreamletTest, TailStaysValidWhenNewGroupCannotOpenItsSegment) {
  config_.segments_per_group = 1;
  auto s = Durable(Durability::kSync);
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
  env_.SetOpenAppendableFailure(true);
  EXPECT_FALSE(AppendChunk(*s, MakeChunk(0, 4)).ok());
  env_.SetOpenAppendableFailure(false);
  StreamletInfo info = s->Describe();
  EXPECT_EQ(info.tail, (Position{1, 1, 4000})) << info.tail.ToString();
  EXPECT_EQ(info.head, (Position{1, 1, 0})) << info.head.ToString();
  std::vector<ReadChunk> got;
  auto r = ReadOnce(*s, {1, 1, 4000}, kBig, &got);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tail, (Position{1, 1, 4000})) << r->tail.ToString();
}

// ---------------------------------------------------------------------------------------------
// Retention

TEST_F(StreamletTest, SizeRetentionKeepsAtMostTheLimit) {
  config_.retention_bytes = 8192;
  auto s = Durable(Durability::kAsync);
  for (uint64_t i = 0; i < 20; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
  // Group 1 = segments 1-4 (16 chunks), group 2 = segment 5 (4 chunks).
  EXPECT_EQ(s->bytes(), 20000u);
  std::vector<std::string> doomed = s->Maintain(0, 0);
  EXPECT_EQ(doomed, (std::vector<std::string>{Seg(1, 1), Seg(1, 2), Seg(1, 3)}));
  EXPECT_EQ(s->bytes(), 8000u);
  EXPECT_LE(s->bytes(), 8192u);
  StreamletInfo info = s->Describe();
  EXPECT_EQ(info.head, (Position{1, 4, 0}));
  std::vector<ReadChunk> got = ReadAll(*s);
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(got[0].bytes, MakeChunk(0, 12));
  EXPECT_TRUE(s->Maintain(0, 0).empty());  // stable
}

TEST_F(StreamletTest, SizeRetentionAlwaysKeepsTheNewestSegment) {
  config_.retention_bytes = 1;
  auto s = Durable(Durability::kAsync);
  for (uint64_t i = 0; i < 20; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
  std::vector<std::string> doomed = s->Maintain(0, 0);
  EXPECT_EQ(doomed.size(), 4u);
  EXPECT_EQ(s->bytes(), 4000u);
  StreamletInfo info = s->Describe();
  ASSERT_EQ(info.groups.size(), 1u);
  EXPECT_EQ(info.groups[0].id, 2u);
  EXPECT_EQ(info.head, (Position{2, 5, 0}));
  EXPECT_EQ(info.tail, (Position{2, 5, 4000}));
  // A reader at the tail stays valid.
  std::vector<ReadChunk> got;
  auto r = ReadOnce(*s, info.tail, kBig, &got);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(got.empty());
}

TEST_F(StreamletTest, AgeRetentionDropsOldSegments) {
  config_.retention_ms = 1000;
  auto s = Memory();
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i), 0).ok());
  for (uint64_t i = 4; i < 8; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i), 10000).ok());
  s->Maintain(1000, 0);  // segment 1 is exactly 1000 ms old: kept
  EXPECT_EQ(s->bytes(), 8000u);
  s->Maintain(10500, 0);  // segment 1 is 10500 ms old: dropped; segment 2 is young
  EXPECT_EQ(s->bytes(), 4000u);
  EXPECT_EQ(s->Describe().head, (Position{1, 2, 0}));
  s->Maintain(100000, 0);  // segment 2 is old but the newest: kept
  EXPECT_EQ(s->bytes(), 4000u);
  EXPECT_EQ(ReadAll(*s).size(), 4u);
}

// Age retention counts from a segment's last append. After a restart that time is not known
// and recovery uses the restart time, so every restart resets the age of all data: a broker
// restarted more often than retention_ms never expires anything.
TEST_F(StreamletTest, RecoveredSegmentsKeepTheirAge) {
  config_.retention_ms = 1000;
  const int64_t t0 = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  {
    auto s = Durable(Durability::kSync, t0);
    for (uint64_t i = 0; i < 8; ++i) {
      ChunkBuilder b;
      b.Add(std::string(948, 'r'));
      Bytes c = b.Finish(0, i, t0);
      ASSERT_TRUE(AppendChunk(*s, c, t0).ok());
    }
  }
  auto s = Durable(Durability::kSync, t0 + 100000);  // restarted 100 s later
  s->Maintain(t0 + 100500, 0);
  EXPECT_EQ(s->bytes(), 4000u) << "segment 1, last appended 100 s ago, outlived retention_ms";
}

TEST_F(StreamletTest, ReaderAtRemovedPositionIsOutOfRange) {
  config_.retention_bytes = 4096;
  auto s = Memory();
  for (uint64_t i = 0; i < 12; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(0, i)).ok());
  Position reader{1, 1, 2000};
  s->Maintain(0, 0);
  EXPECT_EQ(s->Describe().head, (Position{1, 3, 0}));
  std::vector<ReadChunk> got;
  auto r = ReadOnce(*s, reader, kBig, &got);
  EXPECT_EQ(r.status().code(), StatusCode::kPositionOutOfRange) << r.status().ToString();
  EXPECT_EQ(ReadOnce(*s, {1, 2, 0}, kBig, &got).status().code(), StatusCode::kPositionOutOfRange);
  // The earliest position now starts at the new head.
  got = ReadAll(*s);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].at, (Position{1, 3, 0}));
}

// ---------------------------------------------------------------------------------------------
// Parallel appends: producers of different active groups append at the same time

// An Env where the fsync, or the opening, of one chosen file waits in a gate until released (a
// slow disk under one group), and then goes on or fails; everything else goes straight to the
// wrapped Env, from any number of threads at once.
class GateEnv final : public ForwardingEnv {
 public:
  enum class Op { kSync, kOpen };
  explicit GateEnv(Env* base) : ForwardingEnv(base) {}

  // From now on, `op` on `path` waits in the gate until Release().
  void Hold(Op op, const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    held_op_ = op;
    held_ = path;
  }
  // Waits until a call is waiting in the gate; false after `timeout`.
  bool WaitUntilSomeoneWaits(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return waiting_ > 0; });
  }
  // Lets the held call go on, or fail with an I/O error.
  void Release(bool fail = false) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.clear();
    fail_ = fail;
    cv_.notify_all();
  }
  int gated() const {
    std::lock_guard<std::mutex> lock(mu_);
    return gated_;
  }

  Result<std::unique_ptr<WritableFile>> OpenAppendable(const std::string& path) override {
    RETURN_IF_ERROR(Gate(Op::kOpen, path));
    ASSIGN_OR_RETURN(auto file, base()->OpenAppendable(path));
    return std::unique_ptr<WritableFile>(new File(this, path, std::move(file)));
  }

 private:
  class File final : public WritableFile {
   public:
    File(GateEnv* env, std::string path, std::unique_ptr<WritableFile> base)
        : env_(env), path_(std::move(path)), base_(std::move(base)) {}
    Status Append(const uint8_t* data, size_t n) override { return base_->Append(data, n); }
    Status Truncate(uint64_t size) override { return base_->Truncate(size); }
    Status Sync() override {
      RETURN_IF_ERROR(env_->Gate(Op::kSync, path_));
      return base_->Sync();
    }
    uint64_t size() const override { return base_->size(); }

   private:
    GateEnv* const env_;
    const std::string path_;
    const std::unique_ptr<WritableFile> base_;
  };

  Status Gate(Op op, const std::string& path) {
    std::unique_lock<std::mutex> lock(mu_);
    if (held_ != path || held_op_ != op) return Status::Ok();
    ++waiting_;
    ++gated_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return held_ != path; });
    --waiting_;
    if (fail_) return Status(StatusCode::kStorageError, "gate: injected I/O error on " + path);
    return Status::Ok();
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  Op held_op_ = Op::kSync;  // GUARDED_BY(mu_)
  std::string held_;        // GUARDED_BY(mu_)
  bool fail_ = false;       // GUARDED_BY(mu_)
  int waiting_ = 0;         // GUARDED_BY(mu_)
  int gated_ = 0;           // GUARDED_BY(mu_)
};

// Under `sync`, producer 2 (active slot 0, group 1) waits in the fsync of its append. Producer 1
// (slot 1) appends nine chunks meanwhile, filling a segment, opening the next one and then a
// new group (file creation and directory fsync included), and readers, Describe, Maintain and
// the timestamp lookup answer too. With one lock over the whole append (the old streamlet) all
// of that waited for the fsync: the bounded wait below fails instead of hanging.
TEST_F(StreamletTest, AppendToAnotherActiveGroupDoesNotWaitForAnFsync) {
  config_.active_groups = 2;
  config_.segments_per_group = 2;
  config_.durability = Durability::kSync;
  GateEnv gate(Env::Default());
  Streamlet s(0, &config_, &gate, dir_);
  ASSERT_TRUE(s.Recover(0).ok());
  auto a0 = AppendChunk(s, MakeChunk(2, 0));  // slot 0: group 1, segment 1
  auto b0 = AppendChunk(s, MakeChunk(1, 0));  // slot 1: group 2, segment 2
  ASSERT_TRUE(a0.ok() && b0.ok());
  ASSERT_EQ(a0->position, (Position{1, 1, 0}));
  ASSERT_EQ(b0->position, (Position{2, 2, 0}));

  gate.Hold(GateEnv::Op::kSync, Seg(1, 1));
  Result<AppendOutcome> a1 = Status();
  std::thread stuck([&] { a1 = AppendChunk(s, MakeChunk(2, 1)); });
  const bool held = gate.WaitUntilSomeoneWaits(std::chrono::seconds(10));
  if (!held) {
    gate.Release();
    stuck.join();
    FAIL() << "producer 2's append never reached the fsync of " << Seg(1, 1);
  }

  struct Seen {
    std::vector<Result<AppendOutcome>> appends;
    std::vector<ReadChunk> group1, group2;
    StreamletInfo info, after_maintain;
    Position by_time;
  };
  auto other = std::async(std::launch::async, [&] {
    Seen seen;
    for (uint64_t i = 1; i <= 9; ++i) seen.appends.push_back(AppendChunk(s, MakeChunk(1, i)));
    seen.group1 = ReadAll(s);  // stops at the end of open group 1: a0 only
    seen.group2 = ReadAll(s, b0->position);
    seen.info = s.Describe();
    s.Maintain(1000000, 1);  // slot 0 is busy, so not idle: its group stays open
    seen.after_maintain = s.Describe();
    seen.by_time = s.LookupTimestamp(1700000000000 + 5);
    return seen;
  });
  const bool finished = other.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  gate.Release();
  stuck.join();
  ASSERT_TRUE(finished) << "appending to group 2 (and reading) waited for group 1's fsync";
  Seen seen = other.get();

  ASSERT_TRUE(a1.ok()) << a1.status().ToString();
  EXPECT_EQ(a1->position, (Position{1, 1, 1000}));
  EXPECT_EQ(gate.gated(), 1);
  ASSERT_EQ(seen.appends.size(), 9u);
  const Position want[] = {{2, 2, 1000}, {2, 2, 2000}, {2, 2, 3000}, {2, 3, 0},   {2, 3, 1000},
                           {2, 3, 2000}, {2, 3, 3000}, {3, 4, 0},    {3, 4, 1000}};
  for (size_t i = 0; i < 9; ++i) {
    ASSERT_TRUE(seen.appends[i].ok()) << i << ": " << seen.appends[i].status().ToString();
    EXPECT_EQ(seen.appends[i]->position, want[i]) << i;
  }
  // The chunk whose fsync was pending was not visible; producer 1's were.
  ASSERT_EQ(seen.group1.size(), 1u);
  EXPECT_EQ(seen.group1[0].at, a0->position);
  EXPECT_EQ(seen.group2.size(), 10u);  // group 2 is closed (full): the reader went on to group 3
  ASSERT_EQ(seen.info.groups.size(), 3u);
  EXPECT_FALSE(seen.info.groups[0].closed);
  EXPECT_TRUE(seen.info.groups[1].closed);
  ASSERT_EQ(seen.after_maintain.groups.size(), 3u);
  EXPECT_FALSE(seen.after_maintain.groups[0].closed) << "Maintain closed a group mid-append";
  EXPECT_EQ(seen.by_time, (Position{2, 3, 1000}));  // producer 1's sequence 5: first at T+5

  // Everything is there, in group order, once group 1 is closed for idleness.
  s.Maintain(1000000, 1);
  std::vector<ReadChunk> all = ReadAll(s);
  ASSERT_EQ(all.size(), 12u);
  EXPECT_EQ(all[0].bytes, MakeChunk(2, 0));
  EXPECT_EQ(all[1].bytes, MakeChunk(2, 1));
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(all[2 + i].bytes, MakeChunk(1, i)) << i;
}

// Slot 0's group 1 is full (P = 1), so its next append registers group 2 and opens its first
// segment file; that open waits in the gate. Slot 1 meanwhile opens group 3 and appends. A
// reader at the end of group 1 must wait for group 2, not skip it for group 3 (it would never
// come back for group 2's chunks); Describe does not show the empty group. Then the open
// succeeds (`fail` false) or fails: a failed open leaves group 2 closed and empty (a follower
// may have been told of it, see streamlet_mirror.cc), so the reader goes on to group 3, and the
// ids taken by then are not reused.
void CheckGroupBeingOpened(const StreamConfig& config, const std::string& dir,
                           const std::string& group2_file, bool fail) {
  GateEnv gate(Env::Default());
  Streamlet s(0, &config, &gate, dir);
  ASSERT_TRUE(s.Recover(0).ok());
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(AppendChunk(s, MakeChunk(2, i)).ok());  // 1:1

  gate.Hold(GateEnv::Op::kOpen, group2_file);
  Result<AppendOutcome> opening = Status();
  std::thread t([&] { opening = AppendChunk(s, MakeChunk(2, 4)); });
  if (!gate.WaitUntilSomeoneWaits(std::chrono::seconds(10))) {
    gate.Release();
    t.join();
    FAIL() << "the append never opened " << group2_file;
  }
  struct Seen {
    Result<AppendOutcome> other = Status();
    std::vector<ReadChunk> read;
    Position next;
    StreamletInfo info;
  };
  auto during = std::async(std::launch::async, [&] {
    Seen seen;
    seen.other = AppendChunk(s, MakeChunk(1, 0));
    seen.read = ReadAll(s, {}, kBig, &seen.next);
    seen.info = s.Describe();
    s.Maintain(1000000, 1);  // slot 0 is busy opening; group 3 is the newest: nothing closes
    return seen;
  });
  const bool finished = during.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  gate.Release(fail);
  t.join();
  ASSERT_TRUE(finished) << "slot 1 or a reader waited for slot 0's segment open";
  Seen seen = during.get();

  ASSERT_TRUE(seen.other.ok()) << seen.other.status().ToString();
  EXPECT_EQ(seen.other->position, (Position{3, 3, 0}));
  EXPECT_EQ(seen.read.size(), 4u) << "the reader moved past group 2 while it was being opened";
  EXPECT_EQ(seen.next, (Position{1, 1, 4000}));
  ASSERT_EQ(seen.info.groups.size(), 2u);
  EXPECT_EQ(seen.info.groups[0].id, 1u);
  EXPECT_TRUE(seen.info.groups[0].closed);
  EXPECT_EQ(seen.info.groups[1].id, 3u);
  EXPECT_EQ(seen.info.tail, (Position{3, 3, 1000}));

  std::vector<ReadChunk> rest = ReadAll(s, seen.next);
  if (fail) {
    EXPECT_EQ(opening.status().code(), StatusCode::kStorageError) << opening.status().ToString();
    // Group 2 is closed and empty: the reader goes straight on to group 3.
    ASSERT_EQ(rest.size(), 1u);
    EXPECT_EQ(rest[0].at, (Position{3, 3, 0}));
    const StreamletInfo after = s.Describe();
    ASSERT_EQ(after.groups.size(), 3u);
    EXPECT_EQ(after.groups[1].id, 2u);
    EXPECT_TRUE(after.groups[1].closed);
    EXPECT_EQ(after.groups[1].segment_count, 0u);
    // The retry opens a group with fresh ids (2 could not be given back: 3 was taken).
    auto retry = AppendChunk(s, MakeChunk(2, 4));
    ASSERT_TRUE(retry.ok()) << retry.status().ToString();
    EXPECT_FALSE(retry->duplicate);
    EXPECT_EQ(retry->position, (Position{4, 4, 0}));
  } else {
    ASSERT_TRUE(opening.ok()) << opening.status().ToString();
    EXPECT_EQ(opening->position, (Position{2, 2, 0}));
    // Group 2's chunk, then the reader waits at open group 2 until it idles and is closed.
    ASSERT_EQ(rest.size(), 1u);
    EXPECT_EQ(rest[0].at, (Position{2, 2, 0}));
    s.Maintain(1000000, 1);
    rest = ReadAll(s, {2, 2, 1000});
    ASSERT_EQ(rest.size(), 1u);
    EXPECT_EQ(rest[0].at, (Position{3, 3, 0}));
  }
  EXPECT_EQ(gate.gated(), 1);
}

TEST_F(StreamletTest, ReaderWaitsForAGroupWhoseFirstSegmentIsBeingOpened) {
  config_.active_groups = 2;
  config_.segments_per_group = 1;
  config_.durability = Durability::kSync;
  CheckGroupBeingOpened(config_, dir_, Seg(2, 2), /*fail=*/false);
}

TEST_F(StreamletTest, FailedOpenOfAGroupWhileAnotherOpensLeavesNoBarrier) {
  config_.active_groups = 2;
  config_.segments_per_group = 1;
  config_.durability = Durability::kSync;
  CheckGroupBeingOpened(config_, dir_, Seg(2, 2), /*fail=*/true);
}

// Runs Q active groups' worth of producers (and one more, sharing a slot, and producer 0, never
// deduplicated) on one streamlet at once, with a reader reading the whole streamlet from the
// earliest position over and over and a maintenance thread closing idle groups, syncing,
// describing and looking up timestamps. Segments are tiny so segments and groups turn over all
// the time. Every reader pass must see, per producer, a gap-free prefix of its sequence; in the
// end every acknowledged chunk is read exactly once, at the position its append returned.
void ParallelAppendStress(const StreamConfig& config, Env* env, const std::string& dir,
                          uint64_t chunks_per_producer) {
  Streamlet s(0, &config, env, dir);
  ASSERT_TRUE(s.Recover(0).ok());
  const uint64_t producers = config.active_groups + 2;  // ids 0..Q+1: slot 1 gets two
  std::atomic<int64_t> clock{0};
  std::atomic<int> appending{static_cast<int>(producers)};
  std::vector<std::vector<Position>> acked(producers);
  std::atomic<int> passes_done{0};

  std::vector<std::thread> threads;
  for (uint64_t p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      std::vector<Position>& at = acked[p];
      for (uint64_t i = 0; i < chunks_per_producer; ++i) {
        if (i % 100 == 0) {
          // Let the reader finish a pass every 100 chunks, so reading overlaps appending even
          // where appends are fast (bounded, so a stuck reader fails the test, not hangs it).
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
          while (passes_done.load() <= static_cast<int>(i / 100) &&
                 std::chrono::steady_clock::now() < deadline) {
            std::this_thread::yield();
          }
        }
        const uint32_t size = 60 + static_cast<uint32_t>((i * 131 + p * 977) % 1500);
        Bytes chunk = MakeChunk(p, i, size);
        if (p != 0 && i % 7 == 3) {
          // A gap is refused, a retry of the previous chunk is a duplicate at its position.
          auto gap = AppendChunk(s, MakeChunk(p, i + 1, size), clock.load());
          EXPECT_EQ(gap.status().code(), StatusCode::kOutOfOrderSequence) << p << "/" << i;
          const uint32_t prev = 60 + static_cast<uint32_t>(((i - 1) * 131 + p * 977) % 1500);
          auto dup = AppendChunk(s, MakeChunk(p, i - 1, prev), clock.load());
          EXPECT_TRUE(dup.ok() && dup->duplicate && dup->position == at.back()) << p << "/" << i;
        }
        auto r = AppendChunk(s, chunk, clock.load());
        if (!r.ok() || r->duplicate) {
          ADD_FAILURE() << "producer " << p << " sequence " << i << ": "
                        << (r.ok() ? "duplicate" : r.status().ToString());
          break;
        }
        at.push_back(r->position);
      }
      appending.fetch_sub(1);
    });
  }

  std::atomic<bool> stop{false};
  threads.emplace_back([&] {  // maintenance
    while (!stop.load()) {
      const int64_t now = clock.fetch_add(1) + 1;
      EXPECT_TRUE(s.Maintain(now, 3).empty());
      Status st = s.SyncDirty();
      EXPECT_TRUE(st.ok()) << st.ToString();
      StreamletInfo info = s.Describe();
      for (size_t i = 1; i < info.groups.size(); ++i) {
        EXPECT_LT(info.groups[i - 1].id, info.groups[i].id);
        EXPECT_GT(info.groups[i].segment_count, 0u);
      }
      s.LookupTimestamp(1700000000000 + static_cast<int64_t>(now % chunks_per_producer));
      EXPECT_TRUE(s.Damaged().empty());
      std::this_thread::yield();
    }
  });

  // The reader: whole passes from the earliest position.
  int passes = 0;
  for (bool last = false; !last;) {
    last = appending.load() == 0;
    std::vector<uint64_t> next(producers, 0);
    Position at;
    for (;;) {
      std::vector<ReadChunk> got;
      auto r = ReadOnce(s, at, 3000 + 997 * (passes % 5), &got);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      for (const ReadChunk& c : got) {
        auto h = DecodeChunkHeader(c.bytes.data(), c.bytes.size());
        ASSERT_TRUE(h.ok());
        ASSERT_LT(h->producer_id, producers);
        ASSERT_EQ(h->sequence, next[h->producer_id])
            << "pass " << passes << ": producer " << h->producer_id << " at " << c.at.ToString();
        ++next[h->producer_id];
      }
      at = r->next;
      if (r->bytes == 0) break;
    }
    ++passes;
    passes_done.store(passes);
    if (last) {
      // Every producer is done: close the idle groups (all but the newest) and read it all.
      stop.store(true);
      for (auto& t : threads) t.join();
      threads.clear();
      s.Maintain(clock.load() + 1000, 1);
      std::vector<ReadChunk> all = ReadAll(s);
      std::vector<uint64_t> count(producers, 0);
      for (const ReadChunk& c : all) {
        auto h = DecodeChunkHeader(c.bytes.data(), c.bytes.size());
        ASSERT_TRUE(h.ok());
        const uint64_t p = h->producer_id, i = h->sequence;
        ASSERT_EQ(i, count[p]) << "producer " << p << " out of order at " << c.at.ToString();
        ASSERT_LT(i, acked[p].size());
        EXPECT_EQ(c.at, acked[p][i]) << "producer " << p << " sequence " << i;
        ++count[p];
      }
      for (uint64_t p = 0; p < producers; ++p) {
        EXPECT_EQ(acked[p].size(), chunks_per_producer) << p;
        EXPECT_EQ(count[p], acked[p].size()) << "producer " << p;
      }
      EXPECT_EQ(all.size(), producers * chunks_per_producer);
    }
  }
  for (auto& t : threads) t.join();
  EXPECT_GT(passes, static_cast<int>(chunks_per_producer / 100));
  EXPECT_GT(s.Describe().groups.size(), config.active_groups);  // groups did turn over
}

TEST_F(StreamletTest, ParallelAppendsStressFourActiveGroupsInMemory) {
  config_.active_groups = 4;
  config_.segments_per_group = 2;
  ParallelAppendStress(config_, &env_, "", 600);
}

// With files under `async` (SyncDirty runs against the appends), then recovered: the recovered
// streamlet holds the same chunks at the same positions and knows every producer's sequence.
TEST_F(StreamletTest, ParallelAppendsStressTwoActiveGroupsAsyncFilesThenRecovery) {
  config_.active_groups = 2;
  config_.segments_per_group = 2;
  config_.durability = Durability::kAsync;
  constexpr uint64_t kChunks = 200;
  ParallelAppendStress(config_, Env::Default(), dir_, kChunks);
  if (HasFailure()) return;
  Streamlet s(0, &config_, Env::Default(), dir_);
  ASSERT_TRUE(s.Recover(0).ok());
  std::vector<ReadChunk> all = ReadAll(s);
  EXPECT_EQ(all.size(), 4 * kChunks);
  std::map<uint64_t, uint64_t> next;
  for (const ReadChunk& c : all) {
    auto h = DecodeChunkHeader(c.bytes.data(), c.bytes.size());
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->sequence, next[h->producer_id]++) << "producer " << h->producer_id;
  }
  for (uint64_t p = 1; p < 4; ++p) {
    auto dup = AppendChunk(s, MakeChunk(p, kChunks - 1, 100));
    EXPECT_TRUE(dup.ok() && dup->duplicate) << p;
    auto r = AppendChunk(s, MakeChunk(p, kChunks));
    EXPECT_TRUE(r.ok() && !r->duplicate) << p;
  }
}

// ---------------------------------------------------------------------------------------------
// The fault-injection Env itself

class FaultInjectionEnvTest : public StreamletTest {};

TEST_F(FaultInjectionEnvTest, TracksSyncedBytesAndDropsUnsyncedData) {
  const std::string path = root_ + "/f";
  Bytes ten(10, 1), five(5, 2);
  {
    auto f = env_.OpenAppendable(path);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append(ten.data(), ten.size()).ok());
    ASSERT_TRUE((*f)->Sync().ok());
    ASSERT_TRUE((*f)->Append(five.data(), five.size()).ok());
    EXPECT_EQ((*f)->size(), 15u);
  }
  EXPECT_EQ(env_.SyncedSize(path), 10u);
  EXPECT_EQ(env_.FileSize(path), 15u);
  EXPECT_EQ(env_.sync_count(), 1);
  EXPECT_EQ(env_.TrackedFiles(), std::vector<std::string>{path});
  ASSERT_TRUE(env_.DropUnsyncedData(3).ok());  // a torn tail: 3 of the 5 unsynced bytes
  EXPECT_EQ(DiskSize(path), 13u);
  ASSERT_TRUE(env_.DropUnsyncedData().ok());  // what survived a power loss counts as durable
  EXPECT_EQ(DiskSize(path), 13u);

  ASSERT_TRUE(env_.CorruptUnsyncedTail(path, Bytes{9, 9}).ok());
  EXPECT_EQ(DiskSize(path), 15u);
  ASSERT_TRUE(env_.DropUnsyncedData().ok());
  EXPECT_EQ(DiskSize(path), 13u);
  auto data = env_.ReadFile(path);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(*data, (Bytes{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2}));
}

TEST_F(FaultInjectionEnvTest, SpaceBudgetFailsAppendsWithOptionalTornWrite) {
  const std::string path = root_ + "/f";
  auto f = env_.OpenAppendable(path);
  ASSERT_TRUE(f.ok());
  Bytes five(5, 7);
  env_.SetSpaceBudget(8, /*torn=*/true);
  ASSERT_TRUE((*f)->Append(five.data(), five.size()).ok());
  Status full = (*f)->Append(five.data(), five.size());
  EXPECT_EQ(full.code(), StatusCode::kStorageError);
  EXPECT_NE(full.message().find("No space left"), std::string::npos) << full.ToString();
  EXPECT_EQ(DiskSize(path), 8u);  // the torn prefix
  EXPECT_EQ((*f)->size(), 8u);
  ASSERT_TRUE((*f)->Truncate(5).ok());
  env_.SetSpaceBudget(3, /*torn=*/false);
  EXPECT_FALSE((*f)->Append(five.data(), five.size()).ok());
  EXPECT_EQ(DiskSize(path), 5u);  // nothing written
  env_.ClearSpaceBudget();
  EXPECT_TRUE((*f)->Append(five.data(), five.size()).ok());
  EXPECT_EQ(DiskSize(path), 10u);
}

TEST_F(FaultInjectionEnvTest, FailureSwitches) {
  const std::string path = root_ + "/f";
  env_.SetOpenAppendableFailure(true);
  EXPECT_EQ(env_.OpenAppendable(path).status().code(), StatusCode::kStorageError);
  EXPECT_FALSE(std::filesystem::exists(path));
  env_.SetOpenAppendableFailure(false);
  auto f = env_.OpenAppendable(path);
  ASSERT_TRUE(f.ok());
  Bytes one(1, 1);
  ASSERT_TRUE((*f)->Append(one.data(), 1).ok());
  env_.SetSyncFailure(true);
  EXPECT_EQ((*f)->Sync().code(), StatusCode::kStorageError);
  EXPECT_EQ(env_.SyncedSize(path), 0u);
  env_.SetSyncFailure(false);
  EXPECT_TRUE((*f)->Sync().ok());
  EXPECT_EQ(env_.SyncedSize(path), 1u);
  env_.SetSyncDirFailure(true);
  EXPECT_EQ(env_.SyncDir(root_).code(), StatusCode::kStorageError);
  env_.SetSyncDirFailure(false);
  EXPECT_TRUE(env_.SyncDir(root_).ok());
}

TEST_F(FaultInjectionEnvTest, DirectoryEntriesNeedTheirParentSynced) {
  const std::string dir = root_ + "/a/b";
  ASSERT_TRUE(env_.CreateDirs(dir).ok());
  {
    auto f = env_.OpenAppendable(dir + "/f");
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Sync().ok());
  }
  ASSERT_TRUE(env_.SyncDir(dir).ok());  // f is in b for good, but b and a are not
  ASSERT_TRUE(env_.DropUnsyncedDirEntries().ok());
  EXPECT_FALSE(std::filesystem::exists(root_ + "/a"));
  EXPECT_TRUE(env_.TrackedFiles().empty());

  ASSERT_TRUE(env_.CreateDirs(dir).ok());
  { ASSERT_TRUE(env_.OpenAppendable(dir + "/f").ok()); }
  ASSERT_TRUE(env_.SyncDir(root_).ok());
  ASSERT_TRUE(env_.SyncDir(root_ + "/a").ok());
  ASSERT_TRUE(env_.SyncDir(dir).ok());
  ASSERT_TRUE(env_.Rename(dir + "/f", dir + "/g").ok());
  ASSERT_TRUE(env_.DropUnsyncedDirEntries().ok());  // the rename was not synced
  EXPECT_TRUE(std::filesystem::exists(dir));
  EXPECT_FALSE(std::filesystem::exists(dir + "/g"));
}

// ---------------------------------------------------------------------------------------------
// Moving to another broker (docs/protocol.md, "Moving a streamlet")

TEST_F(StreamletTest, SealRefusesAppendsAndReturnsTheTailUntilUnsealed) {
  auto s = Memory();
  for (uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(AppendChunk(*s, MakeChunk(7, i)).ok());
  s->Seal();
  const Position tail = s->tail();
  EXPECT_EQ(tail, s->Describe().tail);
  EXPECT_TRUE(s->sealed());
  auto refused = AppendChunk(*s, MakeChunk(7, 5));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().IsStreamletMoving()) << refused.status().ToString();
  EXPECT_EQ(s->Describe().tail, tail) << "nothing after the sealed tail";
  s->Unseal();
  auto after = AppendChunk(*s, MakeChunk(7, 5));
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_FALSE(after->duplicate);
}

// The target's side: the source's segment files, copied byte for byte, load at the same
// positions with the producers' sequences; the source forgets everything with DropAll.
TEST_F(StreamletTest, CopiedSegmentFilesLoadAtTheSamePositionsAndDropAllForgets) {
  auto source = Durable(Durability::kAsync);
  for (uint64_t i = 0; i < 40; ++i) ASSERT_TRUE(AppendChunk(*source, MakeChunk(7, i)).ok());
  ASSERT_TRUE(source->SyncDirty().ok());
  const StreamletInfo before = source->Describe();
  ASSERT_GT(before.groups.size(), 1u) << "the copy should span groups";
  const std::vector<ReadChunk> chunks = ReadAll(*source);

  const std::string target_dir = root_ + "/target";
  std::filesystem::create_directories(target_dir);
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    std::filesystem::copy_file(entry.path(), target_dir + "/" + entry.path().filename().string());
  }
  Streamlet target(0, &config_, &env_, target_dir);
  ASSERT_TRUE(target.Recover(0).ok());
  EXPECT_EQ(target.Describe().head, before.head);
  EXPECT_EQ(target.Describe().tail, before.tail);
  EXPECT_EQ(ReadAll(target), chunks);
  auto retry = AppendChunk(target, MakeChunk(7, 39));
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_TRUE(retry->duplicate) << "a producer's retry after the move is still a duplicate";

  source->Seal();
  const std::vector<std::string> doomed = source->DropAll();
  size_t segments = 0;
  for (const GroupInfo& g : before.groups) segments += g.segment_count;
  EXPECT_EQ(doomed.size(), segments);
  EXPECT_FALSE(source->sealed());
  EXPECT_TRUE(source->Describe().groups.empty());
  EXPECT_TRUE(ReadAll(*source).empty());
}

}  // namespace
}  // namespace nearstream::storage
