#include "nearstream/push/arrow_slot_writer.h"

#include <cstring>

#include "nearstream/push/slot_writer_parts.h"
#include "nearstream/shm_layout.h"

namespace nearstream::push {

namespace {

uint64_t Align(uint64_t v) { return ns_shm_round_up(v, NS_SHM_BUFFER_ALIGNMENT); }

// Computed in 64 bits so an oversized candidate is measured, not wrapped.
struct Extent {
  uint64_t validity_length, offsets_offset, offsets_length, data_offset, chunk_map_offset,
      chunk_map_length, total;
};

Extent Measure(uint64_t rows, uint64_t data_bytes, uint64_t chunks) {
  Extent e;
  e.validity_length = (rows + 7) / 8;
  e.offsets_offset = Align(e.validity_length);
  e.offsets_length = 4 * (rows + 1);
  e.data_offset = Align(e.offsets_offset + e.offsets_length);
  e.chunk_map_offset = Align(e.data_offset + data_bytes);
  e.chunk_map_length = chunks * NS_SHM_CHUNK_MAP_ENTRY_BYTES;
  e.total = e.chunk_map_offset + e.chunk_map_length;
  return e;
}

// What one chunk puts into a slot: its rows and their bytes.
struct ChunkRows {
  uint64_t rows = 0;
  uint64_t data_bytes = 0;
};

// Without a filter every record is a row, and the header says how many bytes they hold.
Result<ChunkRows> AllRows(const SlotChunk& c) {
  const uint64_t prefixes = uint64_t{storage::kRecordLengthPrefix} * c.header.record_count;
  if (c.header.payload_length < prefixes)
    return CorruptSlotChunk(c, "record count exceeds payload");
  return ChunkRows{c.header.record_count, c.header.payload_length - prefixes};
}

// With a filter, the records that pass it; one verdict per record is appended to `passes`.
Result<ChunkRows> PassingRows(const SlotChunk& c, const RecordFilter& filter,
                              std::vector<uint8_t>* passes) {
  ChunkRows r;
  storage::RecordIterator it(c.payload, c.header.payload_length);
  std::string_view record;
  uint32_t count = 0;
  while (it.Next(&record)) {
    if (count++ == c.header.record_count) {
      return MoreRecordsThanAnnounced(c);
    }
    const bool pass = filter.Matches(record);
    passes->push_back(pass ? 1 : 0);
    if (pass) {
      ++r.rows;
      r.data_bytes += record.size();
    }
  }
  if (count != c.header.record_count) {
    return RecordCountMismatch(c, count);
  }
  return r;
}

}  // namespace

SlotLayout ComputeArrowSlotLayout(uint32_t rows, uint64_t data_bytes, uint32_t chunks) {
  const Extent e = Measure(rows, data_bytes, chunks);
  SlotLayout l;
  l.row_count = rows;
  l.chunk_count = chunks;
  l.validity_offset = 0;
  l.validity_length = static_cast<uint32_t>(e.validity_length);
  l.offsets_offset = static_cast<uint32_t>(e.offsets_offset);
  l.offsets_length = static_cast<uint32_t>(e.offsets_length);
  l.data_offset = static_cast<uint32_t>(e.data_offset);
  l.data_length = static_cast<uint32_t>(data_bytes);
  l.chunk_map_offset = static_cast<uint32_t>(e.chunk_map_offset);
  l.chunk_map_length = static_cast<uint32_t>(e.chunk_map_length);
  l.payload_length = static_cast<uint32_t>(e.total);
  return l;
}

Result<SlotFill> WriteArrowSlot(std::span<const SlotChunk> chunks, uint8_t* payload,
                                uint32_t slot_bytes, const RecordFilter& filter,
                                std::vector<uint8_t>* passes) {
  if (chunks.empty()) return Status::InvalidArgument("no chunks to write");
  const bool filtered = !filter.passes_all();
  if (filtered) passes->clear();

  // 1. The longest prefix that fits.
  uint64_t rows = 0;
  uint64_t data_bytes = 0;
  size_t n = 0;
  // With a filter, the rows of each chunk written (its map entry's record_count); without one,
  // the header's count (no allocation on the path every unfiltered slot takes).
  std::vector<uint32_t> chunk_rows;
  if (filtered) chunk_rows.reserve(chunks.size());
  for (const SlotChunk& c : chunks) {
    Result<ChunkRows> cr = filtered ? PassingRows(c, filter, passes) : AllRows(c);
    if (!cr.ok()) return cr.status();
    const uint64_t r = rows + cr->rows;
    const uint64_t d = data_bytes + cr->data_bytes;
    if (Measure(r, d, n + 1).total > slot_bytes) {
      if (n == 0) {
        return Status::ChunkTooLarge("chunk of " + std::to_string(c.header.total_size()) +
                                     " bytes (" + std::to_string(Measure(r, d, 1).total) +
                                     " as a slot) does not fit a slot of " +
                                     std::to_string(slot_bytes) + " bytes");
      }
      break;
    }
    rows = r;
    data_bytes = d;
    if (filtered) chunk_rows.push_back(static_cast<uint32_t>(cr->rows));
    ++n;
  }
  const SlotLayout l =
      ComputeArrowSlotLayout(static_cast<uint32_t>(rows), data_bytes, static_cast<uint32_t>(n));

  // 2. Validity: every row valid; the bits past the last row and the padding are zero.
  uint8_t* validity = payload + l.validity_offset;
  WriteValidity(validity, rows, l.offsets_offset);

  // 3. Offsets and data, record by record (those that passed the filter); the framing is
  // re-checked against the header.
  uint8_t* offsets = payload + l.offsets_offset;
  uint8_t* data = payload + l.data_offset;
  const uint8_t* data_end = data + l.data_length;
  uint8_t* out = data;
  uint32_t row = 0;
  size_t verdict = 0;  // index into *passes
  StoreLe32(offsets, 0);
  for (size_t i = 0; i < n; ++i) {
    const SlotChunk& c = chunks[i];
    storage::RecordIterator it(c.payload, c.header.payload_length);
    std::string_view record;
    uint32_t count = 0;
    while (it.Next(&record)) {
      if (count == c.header.record_count) {
        return MoreRecordsThanAnnounced(c);
      }
      if (filtered && (*passes)[verdict++] == 0) {
        ++count;
        continue;
      }
      if (record.size() > size_t(data_end - out)) {
        return MoreRecordsThanAnnounced(c);
      }
      std::memcpy(out, record.data(), record.size());
      out += record.size();
      ++count;
      ++row;
      StoreLe32(offsets + 4 * size_t{row}, static_cast<uint32_t>(out - data));
    }
    if (count != c.header.record_count) {
      return RecordCountMismatch(c, count);
    }
  }
  if (out != data_end) return Status::CorruptChunk("record bytes do not add up");
  std::memset(payload + l.offsets_offset + l.offsets_length, 0,
              l.data_offset - (l.offsets_offset + l.offsets_length));
  std::memset(out, 0, l.chunk_map_offset - (l.data_offset + l.data_length));

  // 4. The chunk map.
  WriteChunkMap(chunks.first(n), filtered ? chunk_rows.data() : nullptr,
                payload + l.chunk_map_offset);
  return SlotFill{n, l};
}

SlotLayout WriteMarkerSlot(uint32_t flags, const ns_shm_chunk_map_entry& entry, uint8_t* payload) {
  SlotLayout l = ComputeArrowSlotLayout(0, 0, 1);
  l.flags = flags;
  // An empty batch (offsets[0] = 0), so a reader that loads it as Arrow finds zero rows.
  std::memset(payload, 0, l.chunk_map_offset);
  std::memcpy(payload + l.chunk_map_offset, &entry, sizeof entry);
  return l;
}

}  // namespace nearstream::push
