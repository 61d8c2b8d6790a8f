#include "nearstream/storage/chunk.h"

#include <gtest/gtest.h>

namespace nearstream::storage {
namespace {

TEST(ChunkTest, RoundTripsRecords) {
  ChunkBuilder b;
  b.Add("hello");
  b.Add("");
  b.Add("world!");
  Bytes chunk = b.Finish(7, 42, 1700000000000);
  auto h = ValidateChunk(chunk.data(), chunk.size());
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->record_count, 3u);
  EXPECT_EQ(h->producer_id, 7u);
  EXPECT_EQ(h->sequence, 42u);
  EXPECT_EQ(h->first_timestamp_ms, 1700000000000);
  RecordIterator it(chunk.data() + kChunkHeaderSize, h->payload_length);
  std::string_view r;
  std::vector<std::string> got;
  while (it.Next(&r)) got.emplace_back(r);
  EXPECT_EQ(got, (std::vector<std::string>{"hello", "", "world!"}));
}

TEST(ChunkTest, RejectsEveryFlippedByte) {
  ChunkBuilder b;
  for (int i = 0; i < 5; ++i) b.Add("record-" + std::to_string(i));
  Bytes chunk = b.Finish(1, 1, 5);
  for (size_t i = 0; i < chunk.size(); ++i) {
    Bytes bad = chunk;
    bad[i] ^= 0x40;
    auto h = ValidateChunk(bad.data(), bad.size());
    EXPECT_FALSE(h.ok()) << "flipping byte " << i << " went unnoticed";
    EXPECT_EQ(h.status().code(), StatusCode::kCorruptChunk);
  }
}

TEST(ChunkTest, RejectsEveryTruncation) {
  ChunkBuilder b;
  b.Add("abc");
  b.Add("defgh");
  Bytes chunk = b.Finish(1, 1, 5);
  for (size_t n = 0; n < chunk.size(); ++n) {
    EXPECT_FALSE(ValidateChunk(chunk.data(), n).ok()) << "accepted a chunk cut at " << n;
  }
}

}  // namespace
}  // namespace nearstream::storage
