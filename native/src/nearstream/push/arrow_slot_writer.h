// Fills a slot payload with whole chunks as one Arrow record batch of a single VarBinary column,
// in Arrow's raw buffer layout, followed by the chunk map (docs/shm-layout.md, "Slot payload"):
//
//   payload  0                 validity bitmap, ceil(rows / 8) bytes, all rows valid
//            round64(..)       int32 offsets, rows + 1 entries, offsets[0] = 0
//            round64(..)       data: the record bytes, back to back
//            round64(..)       chunk map: chunk_count x ns_shm_chunk_map_entry (40 B)
//
// Rows are the records of the chunks in chunk-map order (those that pass the subscription's
// filter, when it has one), so row r belongs to the chunk whose cumulative record_count first
// exceeds r: that is how a reader turns rows into positions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "nearstream/common/status.h"
#include "nearstream/push/record_filter.h"
#include "nearstream/push/slot_ring.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/storage/position.h"

namespace nearstream::push {

// One stored chunk to push: its decoded header, its payload (header.payload_length bytes of
// length-prefixed records, e.g. straight from a segment), and where it lives.
struct SlotChunk {
  storage::ChunkHeader header;
  const uint8_t* payload = nullptr;
  uint32_t streamlet = 0;
  storage::Position position;  // group, segment, byte offset of the chunk in the segment
  // The segment file holding the chunk (0: private memory), its size, and where its byte 0 is
  // mapped here: a view slot (view_slot_writer.h) points into it instead of copying.
  uint64_t segment_file = 0;
  uint32_t segment_file_bytes = 0;
  const uint8_t* segment_base = nullptr;
};

// Where the buffers go for `rows` records of `data_bytes` bytes in `chunks` chunks.
SlotLayout ComputeArrowSlotLayout(uint32_t rows, uint64_t data_bytes, uint32_t chunks);

struct SlotFill {
  size_t chunks = 0;  // how many of the given chunks were written (a prefix, at least 1)
  SlotLayout layout;  // what Publish() puts in the descriptor
};

// Writes the longest prefix of `chunks` that fits `slot_bytes` into `payload` (64-byte aligned),
// with only the records that pass `filter` as rows; a chunk's map entry counts its rows (0 when
// none passed: the entry still moves its split on). `passes` is scratch space the caller keeps
// between calls (one verdict per record tested). kInvalidArgument for no chunks, kChunkTooLarge
// when the first chunk's rows alone do not fit an empty slot, kCorruptChunk when a chunk's record
// framing disagrees with its header.
Result<SlotFill> WriteArrowSlot(std::span<const SlotChunk> chunks, uint8_t* payload,
                                uint32_t slot_bytes, const RecordFilter& filter = RecordFilter(),
                                std::vector<uint8_t>* passes = nullptr);

// Writes a marker slot (docs/shm-layout.md, "Slot descriptor"): no rows, the one chunk map entry
// `entry`, `flags` one of NS_SHM_SLOT_FETCH_CHUNK or NS_SHM_SLOT_DAMAGED. Fits any slot.
SlotLayout WriteMarkerSlot(uint32_t flags, const ns_shm_chunk_map_entry& entry, uint8_t* payload);

}  // namespace nearstream::push
