// The chunk: a batch of records for one streamlet, appended whole. The same bytes travel on the
// wire, sit in segments, on disk and in push slots, so this header is the one definition.
//
//   offset size  field
//   0      4     magic 0x4B43534E ("NSCK" little-endian)
//   4      1     version (1)
//   5      1     flags (0; reserved for compression)
//   6      2     header length (48)
//   8      4     payload length (bytes after the header)
//   12     4     payload CRC32C
//   16     8     producer id (0 = not idempotent)
//   24     8     producer sequence (per producer and streamlet, +1 per chunk)
//   32     8     first-record timestamp, ms since the Unix epoch (signed)
//   40     4     record count
//   44     4     header CRC32C over bytes [0, 44)
//   48     ...   payload: record count × (u32 length, bytes)
//
// The header CRC lets recovery trust the lengths before it trusts the payload.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "nearstream/common/byte_io.h"
#include "nearstream/common/status.h"

namespace nearstream::storage {

inline constexpr uint32_t kChunkMagic = 0x4B43534Eu;
inline constexpr uint8_t kChunkVersion = 1;
inline constexpr uint32_t kChunkHeaderSize = 48;
inline constexpr uint32_t kRecordLengthPrefix = 4;

struct ChunkHeader {
  uint32_t payload_length = 0;
  uint32_t payload_crc = 0;
  uint64_t producer_id = 0;
  uint64_t sequence = 0;
  int64_t first_timestamp_ms = 0;
  uint32_t record_count = 0;

  uint32_t total_size() const { return kChunkHeaderSize + payload_length; }
};

// Writes a 48-byte header (with both CRCs) for `payload` into `out`.
void EncodeChunkHeader(const ChunkHeader& h, uint8_t* out);

// Parses and verifies the header at `data` (magic, version, header CRC, length bounds). Does not
// look at the payload. `available` is how many bytes follow `data`.
Result<ChunkHeader> DecodeChunkHeader(const uint8_t* data, size_t available);

// Full validation of one chunk occupying exactly `size` bytes: header, payload CRC and record
// framing (record lengths sum to the payload length, count matches). Used on append and recovery.
Result<ChunkHeader> ValidateChunk(const uint8_t* data, size_t size);

// The whole, valid chunks at the start of `data` (a transaction's file read back): calls `each`
// with each one's header and offset and returns where the last one ends. Stops at the first
// bytes that are not a whole valid chunk (a torn append).
size_t ScanWholeChunks(const uint8_t* data, size_t size,
                       const std::function<void(const ChunkHeader&, size_t offset)>& each);

// Builds chunks record by record; used by clients, tools and tests.
class ChunkBuilder {
 public:
  ChunkBuilder() { Reset(); }
  void Reset();
  void Add(std::string_view record);
  uint32_t record_count() const { return count_; }
  size_t size() const { return buf_.size(); }
  // Finishes the chunk: fills in the header, returns the encoded bytes (builder is then reset).
  Bytes Finish(uint64_t producer_id, uint64_t sequence, int64_t first_timestamp_ms);

 private:
  Bytes buf_;
  uint32_t count_ = 0;
};

// Iterates over the records of a validated chunk payload.
class RecordIterator {
 public:
  RecordIterator(const uint8_t* payload, uint32_t length) : p_(payload), end_(payload + length) {}
  bool Next(std::string_view* record) {
    if (end_ - p_ < 4) return false;
    uint32_t n = LoadLe32(p_);
    if (static_cast<size_t>(end_ - p_ - 4) < n) return false;
    *record = std::string_view(reinterpret_cast<const char*>(p_ + 4), n);
    p_ += 4 + n;
    return true;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace nearstream::storage
