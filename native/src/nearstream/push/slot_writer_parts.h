// What both slot writers (arrow_slot_writer.h, copied records; view_slot_writer.h, views) write
// the same way: the validity bitmap, the chunk map, and the errors for a chunk whose record
// framing disagrees with its header.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "nearstream/common/status.h"
#include "nearstream/push/arrow_slot_writer.h"

namespace nearstream::push {

// kCorruptChunk naming the chunk's streamlet and position.
Status CorruptSlotChunk(const SlotChunk& c, const std::string& why);
// kCorruptChunk: the chunk holds more record bytes, or other records, than its header says.
Status MoreRecordsThanAnnounced(const SlotChunk& c);
Status RecordCountMismatch(const SlotChunk& c, uint32_t counted);

// Every one of `rows` rows valid; the bits past the last row and the padding up to `padded_bytes`
// (the next buffer's offset) are zero.
void WriteValidity(uint8_t* validity, uint64_t rows, uint32_t padded_bytes);

// The chunk map entries of `chunks`, entry i counting rows[i] rows (rows null: each chunk's
// header count, every record a row).
void WriteChunkMap(std::span<const SlotChunk> chunks, const uint32_t* rows, uint8_t* map);

}  // namespace nearstream::push
