#include "nearstream/push/slot_writer_parts.h"

#include <cstring>

#include "nearstream/shm_layout.h"

namespace nearstream::push {

Status CorruptSlotChunk(const SlotChunk& c, const std::string& why) {
  return Status::CorruptChunk("chunk at streamlet " + std::to_string(c.streamlet) + " position " +
                              c.position.ToString() + ": " + why);
}

Status MoreRecordsThanAnnounced(const SlotChunk& c) {
  return CorruptSlotChunk(c, "more record bytes than the header announces");
}

Status RecordCountMismatch(const SlotChunk& c, uint32_t counted) {
  return CorruptSlotChunk(c, "holds " + std::to_string(counted) + " records, header says " +
                                 std::to_string(c.header.record_count));
}

void WriteValidity(uint8_t* validity, uint64_t rows, uint32_t padded_bytes) {
  std::memset(validity, 0, padded_bytes);
  std::memset(validity, 0xFF, rows / 8);
  if (rows % 8 != 0) validity[rows / 8] = static_cast<uint8_t>((1u << (rows % 8)) - 1);
}

void WriteChunkMap(std::span<const SlotChunk> chunks, const uint32_t* rows, uint8_t* map) {
  for (size_t i = 0; i < chunks.size(); ++i) {
    const SlotChunk& c = chunks[i];
    ns_shm_chunk_map_entry e;
    std::memset(&e, 0, sizeof e);
    e.streamlet = c.streamlet;
    e.record_count = rows != nullptr ? rows[i] : c.header.record_count;
    e.group = c.position.group;
    e.segment = c.position.segment;
    e.byte_position = c.position.offset;
    e.chunk_bytes = c.header.total_size();
    e.first_timestamp_ms = c.header.first_timestamp_ms;
    std::memcpy(map + i * sizeof e, &e, sizeof e);
  }
}

}  // namespace nearstream::push
