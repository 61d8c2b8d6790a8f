#include "nearstream/push/arrow_slot_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "nearstream/testing/test_broker_process.h"

namespace nearstream::push {
namespace {

using storage::ChunkBuilder;

// A chunk as it sits in a segment, plus where it sits.
struct StoredChunk {
  Bytes bytes;
  std::vector<std::string> records;
  SlotChunk ref;
};

StoredChunk MakeChunk(const std::vector<std::string>& records, uint32_t streamlet, uint64_t group,
                      uint64_t segment, uint32_t offset) {
  StoredChunk c;
  ChunkBuilder b;
  for (const auto& r : records) b.Add(r);
  c.bytes = b.Finish(1, 1, 0);
  c.records = records;
  auto h = storage::DecodeChunkHeader(c.bytes.data(), c.bytes.size());
  EXPECT_TRUE(h.ok());
  c.ref.header = *h;
  c.ref.payload = c.bytes.data() + storage::kChunkHeaderSize;
  c.ref.streamlet = streamlet;
  c.ref.position = storage::Position{group, segment, offset};
  return c;
}

std::vector<SlotChunk> Refs(const std::vector<StoredChunk>& chunks) {
  std::vector<SlotChunk> refs;
  for (const auto& c : chunks) refs.push_back(c.ref);
  return refs;
}

std::string Record(size_t size, char seed) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>(seed + i % 23);
  return s;
}

// A 64-byte aligned scratch slot, pre-filled with garbage so stale bytes would show.
struct Slot {
  explicit Slot(uint32_t bytes) : storage(bytes + 64, 0xEE), size(bytes) {
    auto p = reinterpret_cast<uintptr_t>(storage.data());
    data = storage.data() + (64 - p % 64) % 64;
  }
  std::vector<uint8_t> storage;
  uint8_t* data;
  uint32_t size;
};

int32_t Offset(const uint8_t* payload, const SlotLayout& l, uint32_t i) {
  int32_t v;
  std::memcpy(&v, payload + l.offsets_offset + 4 * i, 4);
  return v;
}

// Reads the slot back the way the Java side will, and checks it against the chunks.
void ExpectSlotHolds(const uint8_t* payload, const SlotLayout& l,
                     const std::vector<StoredChunk>& chunks, size_t n) {
  for (uint32_t off : {l.validity_offset, l.offsets_offset, l.data_offset, l.chunk_map_offset}) {
    EXPECT_EQ(off % 64, 0u);
  }
  EXPECT_EQ(l.chunk_count, n);
  uint32_t rows = 0;
  for (size_t i = 0; i < n; ++i) rows += static_cast<uint32_t>(chunks[i].records.size());
  ASSERT_EQ(l.row_count, rows);
  EXPECT_EQ(l.validity_length, (rows + 7) / 8);
  EXPECT_EQ(l.offsets_length, 4 * (rows + 1));
  EXPECT_EQ(l.chunk_map_length, NS_SHM_CHUNK_MAP_ENTRY_BYTES * n);
  EXPECT_EQ(l.payload_length, l.chunk_map_offset + l.chunk_map_length);
  EXPECT_LE(l.validity_offset + l.validity_length, l.offsets_offset);
  EXPECT_LE(l.offsets_offset + l.offsets_length, l.data_offset);
  EXPECT_LE(l.data_offset + l.data_length, l.chunk_map_offset);
  for (uint32_t r = 0; r < rows; ++r) {
    EXPECT_TRUE(payload[l.validity_offset + r / 8] & (1u << (r % 8))) << "row " << r;
  }
  for (uint32_t bit = rows; bit < l.validity_length * 8; ++bit) {
    EXPECT_FALSE(payload[l.validity_offset + bit / 8] & (1u << (bit % 8)));
  }
  EXPECT_EQ(Offset(payload, l, 0), 0);
  EXPECT_EQ(Offset(payload, l, rows), static_cast<int32_t>(l.data_length));

  // Row -> (chunk, index in chunk) through the chunk map, and each row's bytes.
  uint32_t row = 0;
  for (size_t c = 0; c < n; ++c) {
    ns_shm_chunk_map_entry e;
    std::memcpy(&e, payload + l.chunk_map_offset + sizeof e * c, sizeof e);
    const SlotChunk& ref = chunks[c].ref;
    EXPECT_EQ(e.streamlet, ref.streamlet);
    EXPECT_EQ(e.record_count, chunks[c].records.size());
    EXPECT_EQ(e.group, ref.position.group);
    EXPECT_EQ(e.segment, ref.position.segment);
    EXPECT_EQ(e.byte_position, ref.position.offset);
    EXPECT_EQ(e.chunk_bytes, chunks[c].bytes.size());
    EXPECT_EQ(e.first_timestamp_ms, ref.header.first_timestamp_ms);
    for (uint32_t k = 0; k < e.record_count; ++k, ++row) {
      const int32_t begin = Offset(payload, l, row);
      const int32_t end = Offset(payload, l, row + 1);
      ASSERT_LE(begin, end);
      std::string got(reinterpret_cast<const char*>(payload + l.data_offset + begin), end - begin);
      EXPECT_EQ(got, chunks[c].records[k]) << "chunk " << c << " record " << k;
    }
  }
  EXPECT_EQ(row, rows);
}

// With a filter, `records` of each expected chunk keeps only those that pass.
std::vector<StoredChunk> Passing(std::vector<StoredChunk> chunks, const RecordFilter& filter) {
  for (StoredChunk& c : chunks) {
    std::erase_if(c.records, [&](const std::string& r) { return !filter.Matches(r); });
  }
  return chunks;
}

TEST(ArrowSlotWriterTest, WritesOnlyTheRecordsThatPassTheFilter) {
  const RecordFilter filter = RecordFilter::JsonFieldIn("event_type", {"view"}).value();
  const std::string view = R"({"ad_id":"a1","event_type":"view"})";
  const std::string click = R"({"ad_id":"a2","event_type":"click"})";
  std::vector<StoredChunk> chunks;
  chunks.push_back(MakeChunk({view, click, view, "not json"}, 0, 1, 1, 0));
  chunks.push_back(MakeChunk({click, click}, 0, 1, 1, 200));  // nothing passes: 0 rows
  chunks.push_back(MakeChunk({click, view}, 2, 3, 4, 4096));
  std::vector<uint8_t> passes;

  Slot slot(64 * 1024);
  auto fill = WriteArrowSlot(Refs(chunks), slot.data, slot.size, filter, &passes);
  ASSERT_TRUE(fill.ok()) << fill.status().ToString();
  EXPECT_EQ(fill->chunks, 3u);
  EXPECT_EQ(fill->layout.row_count, 3u);
  EXPECT_EQ(fill->layout.data_length, 3 * view.size());
  ExpectSlotHolds(slot.data, fill->layout, Passing(chunks, filter), 3);
}

TEST(ArrowSlotWriterTest, AChunkFitsBySizeOfTheRecordsThatPass) {
  // 64 records of 2 KiB need two 64 KiB slots; the 8 that pass fit one.
  const RecordFilter filter = RecordFilter::BytesContain("KEEP").value();
  std::vector<std::string> records;
  for (int i = 0; i < 64; ++i)
    records.push_back((i % 8 == 0 ? "KEEP" : "drop") + Record(2044, 'a'));
  std::vector<StoredChunk> chunks;
  chunks.push_back(MakeChunk(records, 1, 1, 1, 0));
  Slot slot(64 * 1024);
  EXPECT_EQ(WriteArrowSlot(Refs(chunks), slot.data, slot.size).status().code(),
            StatusCode::kChunkTooLarge);
  std::vector<uint8_t> passes;
  auto fill = WriteArrowSlot(Refs(chunks), slot.data, slot.size, filter, &passes);
  ASSERT_TRUE(fill.ok()) << fill.status().ToString();
  ExpectSlotHolds(slot.data, fill->layout, Passing(chunks, filter), 1);
  EXPECT_EQ(fill->layout.row_count, 8u);
}

TEST(ArrowSlotWriterTest, WritesChunksOfVariousSizes) {
  std::vector<StoredChunk> chunks;
  chunks.push_back(MakeChunk({"a"}, 0, 1, 1, 0));
  chunks.push_back(MakeChunk({"", "bb", ""}, 0, 1, 1, 53));
  std::vector<std::string> hundred;
  for (int i = 0; i < 100; ++i) hundred.push_back(Record(100, 'A' + i % 26));
  chunks.push_back(MakeChunk(hundred, 3, 7, 12, 4096));
  chunks.push_back(MakeChunk({Record(5000, 'x')}, 3, 7, 13, 0));
  std::vector<std::string> nine;
  for (int i = 0; i < 9; ++i) nine.push_back(Record(i * 7, 'k'));
  chunks.push_back(MakeChunk(nine, 1, 2, 3, 999'999));

  Slot slot(64 * 1024);
  auto fill = WriteArrowSlot(Refs(chunks), slot.data, slot.size);
  ASSERT_TRUE(fill.ok()) << fill.status().ToString();
  EXPECT_EQ(fill->chunks, chunks.size());
  EXPECT_EQ(fill->layout.row_count, 1u + 3 + 100 + 1 + 9);
  ExpectSlotHolds(slot.data, fill->layout, chunks, chunks.size());
}

TEST(ArrowSlotWriterTest, LayoutArithmetic) {
  // 9 rows: 2 validity bytes, 40 offset bytes, then data at 64 and the map after it.
  SlotLayout l = ComputeArrowSlotLayout(9, 100, 2);
  EXPECT_EQ(l.validity_offset, 0u);
  EXPECT_EQ(l.validity_length, 2u);
  EXPECT_EQ(l.offsets_offset, 64u);
  EXPECT_EQ(l.offsets_length, 40u);
  EXPECT_EQ(l.data_offset, 128u);
  EXPECT_EQ(l.data_length, 100u);
  EXPECT_EQ(l.chunk_map_offset, 256u);
  EXPECT_EQ(l.chunk_map_length, 80u);  // 2 entries of 40 bytes
  EXPECT_EQ(l.payload_length, 336u);
  // An empty chunk still has one offset.
  SlotLayout e = ComputeArrowSlotLayout(0, 0, 1);
  EXPECT_EQ(e.validity_length, 0u);
  EXPECT_EQ(e.offsets_offset, 0u);
  EXPECT_EQ(e.offsets_length, 4u);
  EXPECT_EQ(e.data_offset, 64u);
  EXPECT_EQ(e.chunk_map_offset, 64u);
  EXPECT_EQ(e.payload_length, 104u);
}

TEST(ArrowSlotWriterTest, StopsExactlyAtTheOverflowBoundary) {
  std::vector<StoredChunk> chunks;
  for (int i = 0; i < 6; ++i) {
    std::vector<std::string> recs;
    for (int k = 0; k <= i; ++k) recs.push_back(Record(37 * (i + 1) + k, 'a' + i));
    chunks.push_back(MakeChunk(recs, 0, 1, 1, 1000 * i));
  }
  uint32_t rows = 0;
  uint64_t data = 0;
  for (size_t n = 1; n <= chunks.size(); ++n) {
    rows += chunks[n - 1].ref.header.record_count;
    for (const auto& r : chunks[n - 1].records) data += r.size();
    const uint32_t need =
        ComputeArrowSlotLayout(rows, data, static_cast<uint32_t>(n)).payload_length;
    // Exactly enough room for n chunks: all n fit.
    Slot exact(static_cast<uint32_t>(ns_shm_round_up(need, 64)));
    auto fill = WriteArrowSlot(Refs(chunks), exact.data, need);
    ASSERT_TRUE(fill.ok()) << fill.status().ToString();
    EXPECT_EQ(fill->chunks, n);
    EXPECT_EQ(fill->layout.payload_length, need);
    ExpectSlotHolds(exact.data, fill->layout, chunks, n);
    // One byte less: only n - 1 (or an error for the first chunk).
    auto short_fill = WriteArrowSlot(Refs(chunks), exact.data, need - 1);
    if (n == 1) {
      ASSERT_FALSE(short_fill.ok());
      EXPECT_EQ(short_fill.status().code(), StatusCode::kChunkTooLarge);
    } else {
      ASSERT_TRUE(short_fill.ok());
      EXPECT_EQ(short_fill->chunks, n - 1);
      ExpectSlotHolds(exact.data, short_fill->layout, chunks, n - 1);
    }
  }
}

TEST(ArrowSlotWriterTest, RowCountsAroundValidityByteBoundaries) {
  for (int rows : {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 511, 512, 513}) {
    std::vector<std::string> recs;
    for (int i = 0; i < rows; ++i) recs.push_back(Record(i % 5, 'r'));
    std::vector<StoredChunk> chunks;
    chunks.push_back(MakeChunk(recs, 2, 4, 6, 8));
    Slot slot(16 * 1024);
    auto fill = WriteArrowSlot(Refs(chunks), slot.data, slot.size);
    ASSERT_TRUE(fill.ok()) << rows;
    ExpectSlotHolds(slot.data, fill->layout, chunks, 1);
  }
}

TEST(ArrowSlotWriterTest, AChunkLargerThanASlotIsAnError) {
  std::vector<StoredChunk> chunks;
  chunks.push_back(MakeChunk({Record(5000, 'z')}, 0, 1, 1, 0));
  Slot slot(4096);
  auto fill = WriteArrowSlot(Refs(chunks), slot.data, slot.size);
  ASSERT_FALSE(fill.ok());
  EXPECT_EQ(fill.status().code(), StatusCode::kChunkTooLarge);
  EXPECT_EQ(WriteArrowSlot({}, slot.data, slot.size).status().code(), StatusCode::kInvalidArgument);
}

TEST(ArrowSlotWriterTest, FramingThatDisagreesWithTheHeaderIsCorrupt) {
  std::vector<StoredChunk> chunks;
  chunks.push_back(MakeChunk({"abc", "defg"}, 0, 1, 1, 0));
  Slot slot(4096);
  std::vector<SlotChunk> refs = Refs(chunks);
  refs[0].header.record_count = 3;  // more records announced than framed
  EXPECT_EQ(WriteArrowSlot(refs, slot.data, slot.size).status().code(), StatusCode::kCorruptChunk);
  refs[0].header.record_count = 1;  // fewer
  EXPECT_EQ(WriteArrowSlot(refs, slot.data, slot.size).status().code(), StatusCode::kCorruptChunk);
  refs[0].header.record_count = 100;  // more length prefixes than payload bytes
  EXPECT_EQ(WriteArrowSlot(refs, slot.data, slot.size).status().code(), StatusCode::kCorruptChunk);
}

// The writer and the ring together: what the broker publishes is what a consumer reads.
TEST(ArrowSlotWriterTest, PublishedThroughARing) {
  nearstream::testing::TempDir dir;
  ASSERT_TRUE(dir.ok());
  {
    ShmRegion::CreateOptions o;
    o.dir = dir.path();
    o.name = "arrow";
    o.geometry = RegionGeometry{1, 2, 4096};
    auto region = ShmRegion::Create(o);
    ASSERT_TRUE(region.ok());
    RingProducer producer(region->get(), 0);
    producer.Activate(0, MonotonicNowNs());
    auto consumer = RingConsumer::Attach(region->get(), 0, MonotonicNowNs());
    ASSERT_TRUE(consumer.ok());
    std::vector<StoredChunk> chunks;
    for (int i = 0; i < 20; ++i) {
      chunks.push_back(MakeChunk({Record(300, 'a' + i), Record(10, 'b')}, 0, 1, 1, 400 * i));
    }
    std::vector<SlotChunk> refs = Refs(chunks);
    size_t next = 0;
    while (next < refs.size()) {
      uint8_t* payload = producer.TryClaim();
      ASSERT_NE(payload, nullptr);
      auto fill = WriteArrowSlot(std::span(refs).subspan(next), payload, producer.slot_bytes());
      ASSERT_TRUE(fill.ok()) << fill.status().ToString();
      ASSERT_TRUE(producer.Publish(fill->layout).ok());
      auto s = consumer->TryNext();
      ASSERT_TRUE(s.has_value());
      EXPECT_EQ(s->layout, fill->layout);
      std::vector<StoredChunk> window(chunks.begin() + next, chunks.begin() + next + fill->chunks);
      ExpectSlotHolds(s->payload, s->layout, window, fill->chunks);
      ASSERT_TRUE(consumer->Release(s->position).ok());
      next += fill->chunks;
    }
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace nearstream::push
