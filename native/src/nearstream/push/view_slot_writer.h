// Fills a slot payload with whole chunks as one Arrow record batch of a single BinaryView column
// (docs/shm-layout.md, "View slots"): 16 bytes per record instead of the record, so the push
// thread's work no longer grows with record size.
//
//   payload  0                 validity bitmap, ceil(rows / 8) bytes, all rows valid
//            round64(..)       views, 16 B per row
//            round64(..)       data = variadic buffer 0: records copied into the slot
//            round64(..)       buffer table: one ns_shm_buffer_table_entry per segment file
//            round64(..)       chunk map: chunk_count x ns_shm_chunk_map_entry (40 B)
//
// A record of at most 12 bytes is inline in its view; a longer one points into its segment's
// file (buffer k >= 1 = table entry k - 1) or, when its segment has no file, into buffer 0,
// where it is copied. Rows and the chunk map are as in a binary slot (arrow_slot_writer.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "nearstream/common/status.h"
#include "nearstream/push/arrow_slot_writer.h"
#include "nearstream/push/record_filter.h"
#include "nearstream/push/slot_ring.h"

namespace nearstream::push {

// Where the buffers go for `rows` views, `copied_bytes` in buffer 0, `buffers` segment files
// and `chunks` chunks.
SlotLayout ComputeViewSlotLayout(uint32_t rows, uint64_t copied_bytes, uint32_t buffers,
                                 uint32_t chunks);

// Writes the longest prefix of `chunks` that fits `slot_bytes` into `payload` (64-byte aligned),
// with only the records that pass `filter` as rows. `passes` is the caller's scratch space.
// Errors as WriteArrowSlot's: kInvalidArgument for no chunks, kChunkTooLarge when the first
// chunk alone does not fit, kCorruptChunk when a chunk's framing disagrees with its header.
Result<SlotFill> WriteViewSlot(std::span<const SlotChunk> chunks, uint8_t* payload,
                               uint32_t slot_bytes, const RecordFilter& filter,
                               std::vector<uint8_t>* passes);

}  // namespace nearstream::push
