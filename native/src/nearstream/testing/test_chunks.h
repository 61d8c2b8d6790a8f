// Test support for the storage tests: chunks of a chosen size to append, and every chunk a
// streamlet's readers get back with its position (testing/: linked by the tests only). In
// namespace storage, as FaultInjectionEnv, since it deals in storage's types.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "nearstream/storage/chunk.h"
#include "nearstream/storage/streamlet.h"

namespace nearstream::storage {

// A chunk of exactly `size` bytes (one record), its content derived from the other arguments,
// its timestamp from the sequence.
inline Bytes MakeChunk(uint64_t producer, uint64_t sequence, uint32_t size, uint32_t tag = 0) {
  const uint32_t record_size = size - kChunkHeaderSize - kRecordLengthPrefix;
  std::string record(record_size, 'a');
  const uint64_t seed = producer * 131 + sequence * 7 + tag;
  for (uint32_t i = 0; i < record_size; ++i) record[i] = static_cast<char>('a' + (seed + i) % 26);
  ChunkBuilder b;
  b.Add(record);
  Bytes chunk = b.Finish(producer, sequence, 1700000000000 + static_cast<int64_t>(sequence));
  EXPECT_EQ(chunk.size(), size);
  return chunk;
}

inline Result<AppendOutcome> AppendChunk(Streamlet& s, const Bytes& chunk, int64_t now_ms = 0) {
  auto h = ValidateChunk(chunk.data(), chunk.size());
  if (!h.ok()) return h.status();
  return s.Append(chunk.data(), *h, now_ms);
}

// A chunk as a reader got it, and where.
struct ReadChunk {
  Position at;
  Bytes bytes;
  bool operator==(const ReadChunk& o) const { return at == o.at && bytes == o.bytes; }
};

inline void PrintTo(const ReadChunk& c, std::ostream* os) {
  *os << "{" << c.at.ToString() << ", " << c.bytes.size() << " bytes}";
}

// Splits a block handed to a BlockSink into its chunks, checking that each one is whole and valid.
inline void SplitBlock(const Position& at, const uint8_t* data, uint32_t size,
                       std::vector<ReadChunk>* out) {
  uint32_t off = 0;
  while (off < size) {
    auto h = DecodeChunkHeader(data + off, size - off);
    ASSERT_TRUE(h.ok()) << "block at " << at.ToString() << " +" << off << ": "
                        << h.status().ToString();
    auto v = ValidateChunk(data + off, h->total_size());
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    out->push_back({Position{at.group, at.segment, at.offset + off},
                    Bytes(data + off, data + off + h->total_size())});
    off += h->total_size();
  }
}

// One Read call; the chunks it returned are appended to `out`.
inline Result<ReadOutcome> ReadOnce(const Streamlet& s, const Position& from, uint32_t max_bytes,
                                    std::vector<ReadChunk>* out) {
  return s.Read(from, max_bytes, [&](const Position& at, const uint8_t* data, uint32_t size) {
    SplitBlock(at, data, size, out);
  });
}

// Reads from `from` in reads of `max_bytes` until a read returns nothing; where it stopped goes
// to `end` when given.
inline std::vector<ReadChunk> ReadAll(const Streamlet& s, Position from = {},
                                      uint32_t max_bytes = 1u << 30, Position* end = nullptr) {
  std::vector<ReadChunk> out;
  for (int i = 0; i < 100000; ++i) {
    auto r = ReadOnce(s, from, max_bytes, &out);
    if (!r.ok()) {
      ADD_FAILURE() << "read at " << from.ToString() << ": " << r.status().ToString();
      break;
    }
    from = r->next;
    if (r->bytes == 0) break;
  }
  if (end != nullptr) *end = from;
  return out;
}

}  // namespace nearstream::storage
