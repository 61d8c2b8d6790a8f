#include "nearstream/push/view_slot_writer.h"

#include <cstring>
#include <string>

#include "nearstream/common/byte_io.h"
#include "nearstream/push/slot_writer_parts.h"
#include "nearstream/shm_layout.h"

namespace nearstream::push {

namespace {

uint64_t Align(uint64_t v) { return ns_shm_round_up(v, NS_SHM_BUFFER_ALIGNMENT); }

// Computed in 64 bits so an oversized candidate is measured, not wrapped.
struct Extent {
  uint64_t validity_length, views_offset, views_length, data_offset, buffers_offset, buffers_length,
      chunk_map_offset, chunk_map_length, total;
};

Extent Measure(uint64_t rows, uint64_t copied, uint64_t buffers, uint64_t chunks) {
  Extent e;
  e.validity_length = (rows + 7) / 8;
  e.views_offset = Align(e.validity_length);
  e.views_length = NS_SHM_VIEW_BYTES * rows;
  e.data_offset = Align(e.views_offset + e.views_length);
  e.buffers_offset = Align(e.data_offset + copied);
  e.buffers_length = NS_SHM_BUFFER_TABLE_ENTRY_BYTES * buffers;
  e.chunk_map_offset = Align(e.buffers_offset + e.buffers_length);
  e.chunk_map_length = NS_SHM_CHUNK_MAP_ENTRY_BYTES * chunks;
  e.total = e.chunk_map_offset + e.chunk_map_length;
  return e;
}

bool Inline(size_t length) { return length <= NS_SHM_VIEW_INLINE_BYTES; }

constexpr size_t kPrefetchRecords = 8;

// What one chunk puts into a slot.
struct ChunkViews {
  uint64_t rows = 0;
  uint64_t copied = 0;  // bytes it adds to buffer 0
};

// Without a filter, a chunk in a segment file needs no look at its records: each is a view. A
// filter, or records that must be copied, take one pass over them (verdicts go to `passes`).
Result<ChunkViews> Scan(const SlotChunk& c, const RecordFilter& filter, bool filtered,
                        std::vector<uint8_t>* passes) {
  if (!filtered && c.segment_file != 0) return ChunkViews{c.header.record_count, 0};
  ChunkViews v;
  storage::RecordIterator it(c.payload, c.header.payload_length);
  std::string_view record;
  uint32_t count = 0;
  while (it.Next(&record)) {
    if (count++ == c.header.record_count) {
      return MoreRecordsThanAnnounced(c);
    }
    const bool pass = !filtered || filter.Matches(record);
    if (filtered) passes->push_back(pass ? 1 : 0);
    if (!pass) continue;
    ++v.rows;
    if (c.segment_file == 0 && !Inline(record.size())) v.copied += record.size();
  }
  if (count != c.header.record_count) {
    return RecordCountMismatch(c, count);
  }
  return v;
}

// The buffer table under construction: the segment files the slot's views point into.
class BufferTable {
 public:
  // The table index of `file`, or -1.
  int Find(uint64_t file) const {
    if (last_ < files_.size() && files_[last_].segment_file == file) return int(last_);
    for (size_t i = 0; i < files_.size(); ++i) {
      if (files_[i].segment_file == file) {
        last_ = i;
        return int(i);
      }
    }
    return -1;
  }
  void Add(uint64_t file, uint32_t bytes) {
    ns_shm_buffer_table_entry e;
    std::memset(&e, 0, sizeof e);
    e.segment_file = file;
    e.file_bytes = bytes;
    files_.push_back(e);
  }
  size_t size() const { return files_.size(); }
  const ns_shm_buffer_table_entry* data() const { return files_.data(); }

 private:
  std::vector<ns_shm_buffer_table_entry> files_;
  mutable size_t last_ = 0;
};

}  // namespace

SlotLayout ComputeViewSlotLayout(uint32_t rows, uint64_t copied_bytes, uint32_t buffers,
                                 uint32_t chunks) {
  const Extent e = Measure(rows, copied_bytes, buffers, chunks);
  SlotLayout l;
  l.row_count = rows;
  l.chunk_count = chunks;
  l.validity_offset = 0;
  l.validity_length = static_cast<uint32_t>(e.validity_length);
  l.offsets_offset = static_cast<uint32_t>(e.views_offset);
  l.offsets_length = static_cast<uint32_t>(e.views_length);
  l.data_offset = static_cast<uint32_t>(e.data_offset);
  l.data_length = static_cast<uint32_t>(copied_bytes);
  l.buffers_offset = static_cast<uint32_t>(e.buffers_offset);
  l.buffers_length = static_cast<uint32_t>(e.buffers_length);
  l.chunk_map_offset = static_cast<uint32_t>(e.chunk_map_offset);
  l.chunk_map_length = static_cast<uint32_t>(e.chunk_map_length);
  l.payload_length = static_cast<uint32_t>(e.total);
  return l;
}

Result<SlotFill> WriteViewSlot(std::span<const SlotChunk> chunks, uint8_t* payload,
                               uint32_t slot_bytes, const RecordFilter& filter,
                               std::vector<uint8_t>* passes) {
  if (chunks.empty()) return Status::InvalidArgument("no chunks to write");
  const bool filtered = !filter.passes_all();
  passes->clear();

  // 1. The longest prefix that fits.
  uint64_t rows = 0;
  uint64_t copied = 0;
  size_t n = 0;
  BufferTable table;
  std::vector<uint32_t> chunk_rows;
  chunk_rows.reserve(chunks.size());
  for (const SlotChunk& c : chunks) {
    const size_t verdicts_before = passes->size();
    Result<ChunkViews> cv = Scan(c, filter, filtered, passes);
    if (!cv.ok()) return cv.status();
    const bool new_file = c.segment_file != 0 && cv->rows > 0 && table.Find(c.segment_file) < 0;
    const uint64_t r = rows + cv->rows;
    const uint64_t d = copied + cv->copied;
    const uint64_t b = table.size() + (new_file ? 1 : 0);
    if (Measure(r, d, b, n + 1).total > slot_bytes) {
      if (n == 0) {
        return Status::ChunkTooLarge("chunk of " + std::to_string(c.header.record_count) +
                                     " records (" + std::to_string(Measure(r, d, b, 1).total) +
                                     " bytes as a view slot) does not fit a slot of " +
                                     std::to_string(slot_bytes) + " bytes");
      }
      passes->resize(verdicts_before);
      break;
    }
    if (new_file) table.Add(c.segment_file, c.segment_file_bytes);
    rows = r;
    copied = d;
    chunk_rows.push_back(static_cast<uint32_t>(cv->rows));
    ++n;
  }
  const SlotLayout l =
      ComputeViewSlotLayout(static_cast<uint32_t>(rows), copied,
                            static_cast<uint32_t>(table.size()), static_cast<uint32_t>(n));

  // 2. Validity: every row valid; the bits past the last row and the padding are zero.
  uint8_t* validity = payload + l.validity_offset;
  WriteValidity(validity, rows, l.offsets_offset);

  // 3. Views (and the copies of records whose segment has no file), record by record; the
  // framing is re-checked against the header.
  uint8_t* view = payload + l.offsets_offset;
  uint8_t* const data = payload + l.data_offset;
  const uint8_t* const data_end = data + l.data_length;
  uint8_t* out = data;
  size_t verdict = 0;
  for (size_t i = 0; i < n; ++i) {
    const SlotChunk& c = chunks[i];
    const int file_index = c.segment_file != 0 ? table.Find(c.segment_file) : -1;
    storage::RecordIterator it(c.payload, c.header.payload_length);
    std::string_view record;
    uint32_t count = 0;
    while (it.Next(&record)) {
      if (count++ == c.header.record_count) {
        return MoreRecordsThanAnnounced(c);
      }
      if (filtered && (*passes)[verdict++] == 0) continue;
      // Reading a record's length is the next record's address: a chain of cache misses through
      // cold segment memory. Records of a chunk tend to be alike in size, so fetch the line where
      // the record a few ahead would start if they were.
      __builtin_prefetch(record.data() + kPrefetchRecords * (record.size() + 4));
      uint8_t v[NS_SHM_VIEW_BYTES] = {};
      StoreLe32(v, static_cast<uint32_t>(record.size()));
      if (Inline(record.size())) {
        std::memcpy(v + 4, record.data(), record.size());
      } else if (file_index >= 0) {
        const auto* at = reinterpret_cast<const uint8_t*>(record.data());
        std::memcpy(v + 4, at, 4);
        StoreLe32(v + 8, static_cast<uint32_t>(file_index + 1));
        StoreLe32(v + 12, static_cast<uint32_t>(at - c.segment_base));
      } else {
        if (record.size() > size_t(data_end - out)) {
          return MoreRecordsThanAnnounced(c);
        }
        std::memcpy(out, record.data(), record.size());
        std::memcpy(v + 4, record.data(), 4);
        StoreLe32(v + 8, 0);
        StoreLe32(v + 12, static_cast<uint32_t>(out - data));
        out += record.size();
      }
      std::memcpy(view, v, sizeof v);
      view += sizeof v;
    }
    if (count != c.header.record_count) {
      return RecordCountMismatch(c, count);
    }
  }
  if (out != data_end || view != payload + l.offsets_offset + l.offsets_length) {
    return Status::CorruptChunk("record bytes do not add up");
  }
  std::memset(view, 0, l.data_offset - (l.offsets_offset + l.offsets_length));
  std::memset(out, 0, l.buffers_offset - (l.data_offset + l.data_length));

  // 4. The buffer table and the chunk map.
  uint8_t* buffers = payload + l.buffers_offset;
  if (l.buffers_length > 0) std::memcpy(buffers, table.data(), l.buffers_length);
  std::memset(buffers + l.buffers_length, 0,
              l.chunk_map_offset - (l.buffers_offset + l.buffers_length));
  WriteChunkMap(chunks.first(n), chunk_rows.data(), payload + l.chunk_map_offset);
  return SlotFill{n, l};
}

}  // namespace nearstream::push
