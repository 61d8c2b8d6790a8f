// A test consumer of push slots (docs/shm-layout.md): attaches to one ring of a subscription's
// region, decodes each published binary slot into its chunks with the chunk map, and releases
// it. Shared by the push tests against the in-process server and against broker processes.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nearstream/common/byte_io.h"
#include "nearstream/push/shm_region.h"
#include "nearstream/push/slot_ring.h"
#include "nearstream/storage/position.h"

namespace nearstream::testing {

struct PushedChunk {
  uint32_t streamlet = 0;
  storage::Position at;
  std::vector<std::string> records;
};

// Decodes one published slot: the chunk map splits the Arrow rows into chunks.
inline std::vector<PushedChunk> DecodeSlot(const push::RingConsumer::Slot& slot) {
  std::vector<PushedChunk> out;
  const push::SlotLayout& l = slot.layout;
  const uint8_t* offsets = slot.payload + l.offsets_offset;
  const uint8_t* data = slot.payload + l.data_offset;
  uint32_t row = 0;
  for (uint32_t c = 0; c < l.chunk_count; ++c) {
    ns_shm_chunk_map_entry e;
    std::memcpy(&e, slot.payload + l.chunk_map_offset + c * sizeof e, sizeof e);
    PushedChunk pc;
    pc.streamlet = e.streamlet;
    pc.at = storage::Position{e.group, e.segment, e.byte_position};
    for (uint32_t r = 0; r < e.record_count; ++r, ++row) {
      uint32_t begin = LoadLe32(offsets + 4 * row);
      uint32_t end = LoadLe32(offsets + 4 * (row + 1));
      pc.records.emplace_back(reinterpret_cast<const char*>(data + begin), end - begin);
    }
    out.push_back(std::move(pc));
  }
  EXPECT_EQ(row, l.row_count);
  return out;
}

// A test consumer of one ring: reads and releases slots, keeps what it read per streamlet.
class TestConsumer {
 public:
  TestConsumer(push::ShmRegion* region, uint32_t ring) {
    auto c = push::RingConsumer::Attach(region, ring, push::MonotonicNowNs());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (c.ok()) consumer_.emplace(std::move(*c));
  }

  // Reads until `records` records in all were read or `timeout` passed.
  void ReadUntil(size_t records, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (total_ < records && std::chrono::steady_clock::now() < deadline) {
      consumer_->Heartbeat(push::MonotonicNowNs());
      auto slot = consumer_->TryNext();
      if (!slot) {
        (void)consumer_->Wait(std::chrono::milliseconds(20));
        continue;
      }
      ++slots_;
      for (auto& c : DecodeSlot(*slot)) {
        total_ += c.records.size();
        chunks_[c.streamlet].push_back(std::move(c));
      }
      ASSERT_TRUE(consumer_->Release(slot->position).ok());
    }
  }

  std::vector<std::string> Records(uint32_t streamlet) const {
    std::vector<std::string> out;
    auto it = chunks_.find(streamlet);
    if (it == chunks_.end()) return out;
    for (const auto& c : it->second) out.insert(out.end(), c.records.begin(), c.records.end());
    return out;
  }
  std::vector<storage::Position> ChunkPositions(uint32_t streamlet) const {
    std::vector<storage::Position> out;
    auto it = chunks_.find(streamlet);
    if (it == chunks_.end()) return out;
    for (const auto& c : it->second) out.push_back(c.at);
    return out;
  }
  size_t total() const { return total_; }
  size_t slots() const { return slots_; }
  push::RingConsumer& consumer() { return *consumer_; }

 private:
  std::optional<push::RingConsumer> consumer_;
  std::map<uint32_t, std::vector<PushedChunk>> chunks_;
  size_t total_ = 0;
  size_t slots_ = 0;
};

}  // namespace nearstream::testing
