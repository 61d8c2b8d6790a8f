#include "nearstream/push/view_slot_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "nearstream/storage/chunk.h"
#include "nearstream/testing/view_slot_reader.h"

namespace nearstream::push {
namespace {

// A pretend segment: chunks appended back to back in one buffer, which a view slot may point
// into when the segment "has a file" (number != 0).
class FakeSegment {
 public:
  FakeSegment(uint64_t file, uint64_t id) : file_(file), id_(id), bytes_(1 << 20, 0xAB) {}

  // Appends a chunk of `records` and returns its SlotChunk.
  SlotChunk Add(const std::vector<std::string>& records, uint32_t streamlet = 0) {
    storage::ChunkBuilder b;
    for (const auto& r : records) b.Add(r);
    Bytes chunk = b.Finish(1, 1, 1000 + end_);
    std::memcpy(bytes_.data() + end_, chunk.data(), chunk.size());
    SlotChunk c;
    Result<storage::ChunkHeader> h = storage::DecodeChunkHeader(chunk.data(), chunk.size());
    EXPECT_TRUE(h.ok());
    c.header = *h;
    c.payload = bytes_.data() + end_ + storage::kChunkHeaderSize;
    c.streamlet = streamlet;
    c.position = storage::Position{1, id_, end_};
    c.segment_file = file_;
    c.segment_file_bytes = file_ == 0 ? 0 : static_cast<uint32_t>(bytes_.size());
    c.segment_base = file_ == 0 ? nullptr : bytes_.data();
    end_ += static_cast<uint32_t>(chunk.size());
    return c;
  }
  testing::MappedFile mapped() const { return {bytes_.data(), bytes_.size()}; }

 private:
  uint64_t file_;
  uint64_t id_;
  std::vector<uint8_t> bytes_;
  uint32_t end_ = 0;
};

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

std::string Record(size_t size, char seed) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>(seed + i % 23);
  return s;
}

TEST(ViewSlotWriterTest, ViewLayoutArithmetic) {
  // The example of docs/shm-layout.md, "Golden offsets".
  SlotLayout l = ComputeViewSlotLayout(9, 30, 2, 2);
  EXPECT_EQ(l.validity_offset, 0u);
  EXPECT_EQ(l.validity_length, 2u);
  EXPECT_EQ(l.offsets_offset, 64u);
  EXPECT_EQ(l.offsets_length, 144u);
  EXPECT_EQ(l.data_offset, 256u);
  EXPECT_EQ(l.data_length, 30u);
  EXPECT_EQ(l.buffers_offset, 320u);
  EXPECT_EQ(l.buffers_length, 32u);
  EXPECT_EQ(l.chunk_map_offset, 384u);
  EXPECT_EQ(l.chunk_map_length, 80u);
  EXPECT_EQ(l.payload_length, 464u);
}

TEST(ViewSlotWriterTest, InlineRowsFileRowsAndCopiedRowsReadBack) {
  FakeSegment in_file(/*file=*/7, /*id=*/3);
  FakeSegment private_memory(/*file=*/0, /*id=*/2);
  const std::vector<std::string> a = {"", "tiny", Record(12, 'a'), Record(13, 'b'),
                                      Record(900, 'c')};
  const std::vector<std::string> b = {Record(40, 'd'), "x", Record(12, 'e')};
  const std::vector<std::string> c = {Record(100, 'f')};
  // b comes from a segment without a file: its long records are copied into buffer 0.
  std::vector<SlotChunk> chunks = {in_file.Add(a), private_memory.Add(b, 1), in_file.Add(c)};
  Slot slot(64 * 1024);
  std::vector<uint8_t> passes;
  Result<SlotFill> fill = WriteViewSlot(chunks, slot.data, slot.size, RecordFilter(), &passes);
  ASSERT_TRUE(fill.ok()) << fill.status().ToString();
  EXPECT_EQ(fill->chunks, 3u);
  const SlotLayout& l = fill->layout;
  EXPECT_EQ(l.row_count, 9u);
  EXPECT_EQ(l.data_length, 40u);  // only b's 40-byte record is copied
  for (uint32_t off : {l.offsets_offset, l.data_offset, l.buffers_offset, l.chunk_map_offset}) {
    EXPECT_EQ(off % 64, 0u);
  }
  std::vector<ns_shm_buffer_table_entry> table = testing::BufferTable(slot.data, l);
  ASSERT_EQ(table.size(), 1u);  // file 7 once, though two chunks point into it
  EXPECT_EQ(table[0].segment_file, 7u);
  EXPECT_EQ(table[0].file_bytes, 1u << 20);
  std::vector<std::string> rows = testing::ReadViewRows(slot.data, l, [&](uint64_t file) {
    return file == 7 ? in_file.mapped() : testing::MappedFile{};
  });
  std::vector<std::string> expected = a;
  expected.insert(expected.end(), b.begin(), b.end());
  expected.insert(expected.end(), c.begin(), c.end());
  EXPECT_EQ(rows, expected);
  // The chunk map counts each chunk's rows in order.
  ns_shm_chunk_map_entry e[3];
  std::memcpy(e, slot.data + l.chunk_map_offset, sizeof e);
  EXPECT_EQ(e[0].record_count, 5u);
  EXPECT_EQ(e[1].record_count, 3u);
  EXPECT_EQ(e[1].streamlet, 1u);
  EXPECT_EQ(e[2].record_count, 1u);
  EXPECT_EQ(e[2].byte_position, chunks[2].position.offset);
  EXPECT_EQ(e[2].chunk_bytes, chunks[2].header.total_size());
  // Padding after the views and after buffer 0 is zero, not the slot's old bytes.
  for (uint32_t i = l.offsets_offset + l.offsets_length; i < l.data_offset; ++i) {
    EXPECT_EQ(slot.data[i], 0) << i;
  }
  for (uint32_t i = l.data_offset + l.data_length; i < l.buffers_offset; ++i) {
    EXPECT_EQ(slot.data[i], 0) << i;
  }
}

TEST(ViewSlotWriterTest, AFilterKeepsOnlyPassingRowsAndCountsThemPerChunk) {
  FakeSegment seg(/*file=*/4, /*id=*/1);
  const std::string view = R"({"event_type":"view","ad":"0123456789"})";
  const std::string click = R"({"event_type":"click","ad":"0123456789"})";
  std::vector<SlotChunk> chunks = {seg.Add({view, click, view}), seg.Add({click}),
                                   seg.Add({"not json", view})};
  Result<RecordFilter> f = RecordFilter::JsonFieldIn("event_type", {"view"});
  ASSERT_TRUE(f.ok());
  Slot slot(64 * 1024);
  std::vector<uint8_t> passes;
  Result<SlotFill> fill = WriteViewSlot(chunks, slot.data, slot.size, *f, &passes);
  ASSERT_TRUE(fill.ok()) << fill.status().ToString();
  EXPECT_EQ(fill->layout.row_count, 3u);
  std::vector<std::string> rows =
      testing::ReadViewRows(slot.data, fill->layout, [&](uint64_t) { return seg.mapped(); });
  EXPECT_EQ(rows, (std::vector<std::string>{view, view, view}));
  ns_shm_chunk_map_entry e[3];
  std::memcpy(e, slot.data + fill->layout.chunk_map_offset, sizeof e);
  EXPECT_EQ(e[0].record_count, 2u);
  EXPECT_EQ(e[1].record_count, 0u);  // kept, so the split's position moves past it
  EXPECT_EQ(e[2].record_count, 1u);
}

TEST(ViewSlotWriterTest, ASlotTakesTheChunksWhoseViewsFitAndRefusesAChunkThatNeverFits) {
  FakeSegment seg(/*file=*/1, /*id=*/1);
  // 1000 records of 200 bytes each are 16 000 bytes of views: two such chunks do not fit 20 KiB
  // (copied, even one would not), so the slot takes the first.
  std::vector<std::string> records(1000, Record(200, 'q'));
  std::vector<SlotChunk> chunks = {seg.Add(records), seg.Add(records)};
  Slot slot(20 * 1024);
  std::vector<uint8_t> passes;
  Result<SlotFill> fill = WriteViewSlot(chunks, slot.data, slot.size, RecordFilter(), &passes);
  ASSERT_TRUE(fill.ok()) << fill.status().ToString();
  EXPECT_EQ(fill->chunks, 1u);
  EXPECT_EQ(fill->layout.row_count, 1000u);
  EXPECT_LE(fill->layout.payload_length, slot.size);

  std::vector<std::string> many(1400, "r");
  std::vector<SlotChunk> big = {seg.Add(many)};
  Result<SlotFill> refused = WriteViewSlot(big, slot.data, slot.size, RecordFilter(), &passes);
  EXPECT_TRUE(refused.status().IsChunkTooLarge()) << refused.status().ToString();
}

TEST(ViewSlotWriterTest, AChunkWhoseFramingDisagreesWithItsHeaderIsCorrupt) {
  FakeSegment seg(/*file=*/1, /*id=*/1);
  SlotChunk c = seg.Add({Record(30, 'z'), Record(30, 'y')});
  c.header.record_count = 3;  // says more records than its payload holds
  Slot slot(64 * 1024);
  std::vector<uint8_t> passes;
  std::vector<SlotChunk> chunks = {c};
  Result<SlotFill> fill = WriteViewSlot(chunks, slot.data, slot.size, RecordFilter(), &passes);
  EXPECT_EQ(fill.status().code(), StatusCode::kCorruptChunk) << fill.status().ToString();
}

}  // namespace
}  // namespace nearstream::push
