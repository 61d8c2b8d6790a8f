// Reads a binary_view slot back the way a consumer does (docs/shm-layout.md, "View slots"), for
// tests: every view checked against its buffer, each row's bytes returned.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "nearstream/common/byte_io.h"
#include "nearstream/push/slot_ring.h"
#include "nearstream/shm_layout.h"

namespace nearstream::testing {

// Where a segment file is mapped here, and its size; data null when it cannot be mapped.
struct MappedFile {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
};

// The buffer table's entries.
inline std::vector<ns_shm_buffer_table_entry> BufferTable(const uint8_t* payload,
                                                          const push::SlotLayout& l) {
  std::vector<ns_shm_buffer_table_entry> out(l.buffers_length / NS_SHM_BUFFER_TABLE_ENTRY_BYTES);
  if (!out.empty()) std::memcpy(out.data(), payload + l.buffers_offset, l.buffers_length);
  return out;
}

// The rows of the slot; `map` gives a segment file's mapping by its number. A view that does not
// fit its buffer fails the calling test and yields an empty row.
inline std::vector<std::string> ReadViewRows(
    const uint8_t* payload, const push::SlotLayout& l,
    const std::function<MappedFile(uint64_t segment_file)>& map) {
  std::vector<MappedFile> buffers;
  buffers.push_back(MappedFile{payload + l.data_offset, l.data_length});
  for (const ns_shm_buffer_table_entry& e : BufferTable(payload, l)) {
    MappedFile f = map(e.segment_file);
    EXPECT_NE(f.data, nullptr) << "segment file " << e.segment_file;
    EXPECT_EQ(f.size, e.file_bytes) << "segment file " << e.segment_file;
    buffers.push_back(f);
  }
  EXPECT_EQ(l.offsets_length, NS_SHM_VIEW_BYTES * l.row_count);
  std::vector<std::string> rows;
  for (uint32_t r = 0; r < l.row_count; ++r) {
    const uint8_t* v = payload + l.offsets_offset + NS_SHM_VIEW_BYTES * r;
    const uint32_t length = LoadLe32(v);
    if (length <= NS_SHM_VIEW_INLINE_BYTES) {
      rows.emplace_back(reinterpret_cast<const char*>(v + 4), length);
      for (uint32_t i = 4 + length; i < NS_SHM_VIEW_BYTES; ++i) EXPECT_EQ(v[i], 0) << "row " << r;
      continue;
    }
    const uint32_t index = LoadLe32(v + 8);
    const uint32_t offset = LoadLe32(v + 12);
    if (index >= buffers.size() || buffers[index].data == nullptr ||
        uint64_t{offset} + length > buffers[index].size) {
      ADD_FAILURE() << "row " << r << ": view (" << index << ", " << offset << ", " << length
                    << ") outside its buffer";
      rows.emplace_back();
      continue;
    }
    const uint8_t* at = buffers[index].data + offset;
    EXPECT_EQ(std::memcmp(at, v + 4, 4), 0) << "row " << r << ": prefix";
    rows.emplace_back(reinterpret_cast<const char*>(at), length);
  }
  return rows;
}

}  // namespace nearstream::testing
