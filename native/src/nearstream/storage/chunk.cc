#include "nearstream/storage/chunk.h"

#include "nearstream/common/crc32c.h"

namespace nearstream::storage {

void EncodeChunkHeader(const ChunkHeader& h, uint8_t* out) {
  StoreLe32(out + 0, kChunkMagic);
  out[4] = kChunkVersion;
  out[5] = 0;
  StoreLe16(out + 6, kChunkHeaderSize);
  StoreLe32(out + 8, h.payload_length);
  StoreLe32(out + 12, h.payload_crc);
  StoreLe64(out + 16, h.producer_id);
  StoreLe64(out + 24, h.sequence);
  StoreLe64(out + 32, static_cast<uint64_t>(h.first_timestamp_ms));
  StoreLe32(out + 40, h.record_count);
  StoreLe32(out + 44, Crc32c(out, 44));
}

Result<ChunkHeader> DecodeChunkHeader(const uint8_t* data, size_t available) {
  if (available < kChunkHeaderSize) {
    return Status::CorruptChunk("chunk shorter than its 48-byte header");
  }
  if (LoadLe32(data) != kChunkMagic) return Status::CorruptChunk("bad chunk magic");
  if (data[4] != kChunkVersion) {
    return Status::CorruptChunk("unsupported chunk version " + std::to_string(data[4]));
  }
  if (data[5] != 0) {
    // Reserved for compression: a v1 broker must not serve such a chunk as plain records.
    return Status::CorruptChunk("unsupported chunk flags " + std::to_string(data[5]));
  }
  if (LoadLe16(data + 6) != kChunkHeaderSize) {
    return Status::CorruptChunk("unexpected chunk header length");
  }
  if (Crc32c(data, 44) != LoadLe32(data + 44)) {
    return Status::CorruptChunk("chunk header CRC mismatch");
  }
  ChunkHeader h;
  h.payload_length = LoadLe32(data + 8);
  h.payload_crc = LoadLe32(data + 12);
  h.producer_id = LoadLe64(data + 16);
  h.sequence = LoadLe64(data + 24);
  h.first_timestamp_ms = static_cast<int64_t>(LoadLe64(data + 32));
  h.record_count = LoadLe32(data + 40);
  if (h.payload_length > available - kChunkHeaderSize) {
    return Status::CorruptChunk("chunk payload length " + std::to_string(h.payload_length) +
                                " runs past the end of the data");
  }
  return h;
}

size_t ScanWholeChunks(const uint8_t* data, size_t size,
                       const std::function<void(const ChunkHeader&, size_t offset)>& each) {
  size_t off = 0;
  while (off < size) {
    auto h = DecodeChunkHeader(data + off, size - off);
    if (!h.ok() || h->total_size() > size - off ||
        !ValidateChunk(data + off, h->total_size()).ok()) {
      break;
    }
    each(*h, off);
    off += h->total_size();
  }
  return off;
}

Result<ChunkHeader> ValidateChunk(const uint8_t* data, size_t size) {
  ASSIGN_OR_RETURN(ChunkHeader h, DecodeChunkHeader(data, size));
  if (h.total_size() != size) {
    return Status::CorruptChunk("chunk length " + std::to_string(h.total_size()) +
                                " does not match its frame (" + std::to_string(size) + " bytes)");
  }
  const uint8_t* payload = data + kChunkHeaderSize;
  if (Crc32c(payload, h.payload_length) != h.payload_crc) {
    return Status::CorruptChunk("chunk payload CRC mismatch");
  }
  // Walk the record framing so a consumer can never be handed a chunk it cannot iterate.
  const uint8_t* p = payload;
  const uint8_t* end = payload + h.payload_length;
  uint32_t count = 0;
  while (p < end) {
    if (end - p < 4) return Status::CorruptChunk("truncated record length");
    uint32_t n = LoadLe32(p);
    if (static_cast<size_t>(end - p - 4) < n) {
      return Status::CorruptChunk("record runs past the chunk payload");
    }
    p += 4 + n;
    ++count;
  }
  if (count != h.record_count) {
    return Status::CorruptChunk("chunk says " + std::to_string(h.record_count) +
                                " records but holds " + std::to_string(count));
  }
  return h;
}

void ChunkBuilder::Reset() {
  buf_.assign(kChunkHeaderSize, 0);
  count_ = 0;
}

void ChunkBuilder::Add(std::string_view record) {
  uint8_t len[4];
  StoreLe32(len, static_cast<uint32_t>(record.size()));
  buf_.insert(buf_.end(), len, len + 4);
  buf_.insert(buf_.end(), record.begin(), record.end());
  ++count_;
}

Bytes ChunkBuilder::Finish(uint64_t producer_id, uint64_t sequence, int64_t first_timestamp_ms) {
  ChunkHeader h;
  h.payload_length = static_cast<uint32_t>(buf_.size() - kChunkHeaderSize);
  h.payload_crc = Crc32c(buf_.data() + kChunkHeaderSize, h.payload_length);
  h.producer_id = producer_id;
  h.sequence = sequence;
  h.first_timestamp_ms = first_timestamp_ms;
  h.record_count = count_;
  EncodeChunkHeader(h, buf_.data());
  Bytes out = std::move(buf_);
  Reset();
  return out;
}

}  // namespace nearstream::storage
