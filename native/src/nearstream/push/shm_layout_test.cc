// The layout contract: every offset and size of shm_layout.h, printed as the "golden" table of
// docs/shm-layout.md. The Java mirror's test asserts the same numbers; change all three together.
#include "nearstream/shm_layout.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nearstream/push/shm_region.h"

namespace nearstream::push {
namespace {

struct Row {
  std::string name;
  size_t offset;
  size_t size;
};

#define NS_ROW(type, field) \
  Row { #type "." #field, offsetof(type, field), sizeof(type::field) }

std::vector<Row> LayoutRows() {
  return {
      NS_ROW(ns_shm_region_header, magic),
      NS_ROW(ns_shm_region_header, layout_version),
      NS_ROW(ns_shm_region_header, header_bytes),
      NS_ROW(ns_shm_region_header, ring_count),
      NS_ROW(ns_shm_region_header, slots_per_ring),
      NS_ROW(ns_shm_region_header, slot_bytes),
      NS_ROW(ns_shm_region_header, descriptor_bytes),
      NS_ROW(ns_shm_region_header, ring_header_bytes),
      NS_ROW(ns_shm_region_header, payload_offset),
      NS_ROW(ns_shm_region_header, ring_stride),
      NS_ROW(ns_shm_region_header, region_bytes),
      NS_ROW(ns_shm_region_header, broker_epoch),
      NS_ROW(ns_shm_region_header, broker_heartbeat_ns),
      NS_ROW(ns_shm_region_header, region_state),
      NS_ROW(ns_shm_region_header, release_doorbell),
      NS_ROW(ns_shm_region_header, broker_waiting),
      NS_ROW(ns_shm_region_header, slot_format),
      NS_ROW(ns_shm_region_header, segment_file_prefix),
      NS_ROW(ns_shm_ring_header, ring_id),
      NS_ROW(ns_shm_ring_header, subtask_index),
      NS_ROW(ns_shm_ring_header, state),
      NS_ROW(ns_shm_ring_header, generation),
      NS_ROW(ns_shm_ring_header, base_position),
      NS_ROW(ns_shm_ring_header, data_doorbell),
      NS_ROW(ns_shm_ring_header, published),
      NS_ROW(ns_shm_ring_header, consumer_waiting),
      NS_ROW(ns_shm_ring_header, released),
      NS_ROW(ns_shm_ring_header, consumer_heartbeat_ns),
      NS_ROW(ns_shm_slot_descriptor, sequence),
      NS_ROW(ns_shm_slot_descriptor, row_count),
      NS_ROW(ns_shm_slot_descriptor, chunk_count),
      NS_ROW(ns_shm_slot_descriptor, validity_offset),
      NS_ROW(ns_shm_slot_descriptor, validity_length),
      NS_ROW(ns_shm_slot_descriptor, offsets_offset),
      NS_ROW(ns_shm_slot_descriptor, offsets_length),
      NS_ROW(ns_shm_slot_descriptor, data_offset),
      NS_ROW(ns_shm_slot_descriptor, data_length),
      NS_ROW(ns_shm_slot_descriptor, chunk_map_offset),
      NS_ROW(ns_shm_slot_descriptor, chunk_map_length),
      NS_ROW(ns_shm_slot_descriptor, flags),
      NS_ROW(ns_shm_slot_descriptor, payload_length),
      NS_ROW(ns_shm_slot_descriptor, buffers_offset),
      NS_ROW(ns_shm_slot_descriptor, buffers_length),
      NS_ROW(ns_shm_buffer_table_entry, segment_file),
      NS_ROW(ns_shm_buffer_table_entry, file_bytes),
      NS_ROW(ns_shm_chunk_map_entry, streamlet),
      NS_ROW(ns_shm_chunk_map_entry, record_count),
      NS_ROW(ns_shm_chunk_map_entry, group),
      NS_ROW(ns_shm_chunk_map_entry, segment),
      NS_ROW(ns_shm_chunk_map_entry, byte_position),
      NS_ROW(ns_shm_chunk_map_entry, chunk_bytes),
      NS_ROW(ns_shm_chunk_map_entry, first_timestamp_ms),
  };
}

// The golden table of docs/shm-layout.md, section "Golden offsets".
const std::vector<Row>& Golden() {
  static const std::vector<Row> kGolden = {
      {"ns_shm_region_header.magic", 0, 8},
      {"ns_shm_region_header.layout_version", 8, 4},
      {"ns_shm_region_header.header_bytes", 12, 4},
      {"ns_shm_region_header.ring_count", 16, 4},
      {"ns_shm_region_header.slots_per_ring", 20, 4},
      {"ns_shm_region_header.slot_bytes", 24, 4},
      {"ns_shm_region_header.descriptor_bytes", 28, 4},
      {"ns_shm_region_header.ring_header_bytes", 32, 4},
      {"ns_shm_region_header.payload_offset", 36, 4},
      {"ns_shm_region_header.ring_stride", 40, 8},
      {"ns_shm_region_header.region_bytes", 48, 8},
      {"ns_shm_region_header.broker_epoch", 56, 8},
      {"ns_shm_region_header.broker_heartbeat_ns", 64, 8},
      {"ns_shm_region_header.region_state", 72, 4},
      {"ns_shm_region_header.release_doorbell", 128, 4},
      {"ns_shm_region_header.broker_waiting", 192, 4},
      {"ns_shm_region_header.slot_format", 256, 4},
      {"ns_shm_region_header.segment_file_prefix", 320, 64},
      {"ns_shm_ring_header.ring_id", 0, 4},
      {"ns_shm_ring_header.subtask_index", 4, 4},
      {"ns_shm_ring_header.state", 8, 4},
      {"ns_shm_ring_header.generation", 12, 4},
      {"ns_shm_ring_header.base_position", 16, 8},
      {"ns_shm_ring_header.data_doorbell", 64, 4},
      {"ns_shm_ring_header.published", 72, 8},
      {"ns_shm_ring_header.consumer_waiting", 128, 4},
      {"ns_shm_ring_header.released", 192, 8},
      {"ns_shm_ring_header.consumer_heartbeat_ns", 200, 8},
      {"ns_shm_slot_descriptor.sequence", 0, 8},
      {"ns_shm_slot_descriptor.row_count", 8, 4},
      {"ns_shm_slot_descriptor.chunk_count", 12, 4},
      {"ns_shm_slot_descriptor.validity_offset", 16, 4},
      {"ns_shm_slot_descriptor.validity_length", 20, 4},
      {"ns_shm_slot_descriptor.offsets_offset", 24, 4},
      {"ns_shm_slot_descriptor.offsets_length", 28, 4},
      {"ns_shm_slot_descriptor.data_offset", 32, 4},
      {"ns_shm_slot_descriptor.data_length", 36, 4},
      {"ns_shm_slot_descriptor.chunk_map_offset", 40, 4},
      {"ns_shm_slot_descriptor.chunk_map_length", 44, 4},
      {"ns_shm_slot_descriptor.flags", 48, 4},
      {"ns_shm_slot_descriptor.payload_length", 52, 4},
      {"ns_shm_slot_descriptor.buffers_offset", 56, 4},
      {"ns_shm_slot_descriptor.buffers_length", 60, 4},
      {"ns_shm_buffer_table_entry.segment_file", 0, 8},
      {"ns_shm_buffer_table_entry.file_bytes", 8, 4},
      {"ns_shm_chunk_map_entry.streamlet", 0, 4},
      {"ns_shm_chunk_map_entry.record_count", 4, 4},
      {"ns_shm_chunk_map_entry.group", 8, 8},
      {"ns_shm_chunk_map_entry.segment", 16, 8},
      {"ns_shm_chunk_map_entry.byte_position", 24, 4},
      {"ns_shm_chunk_map_entry.chunk_bytes", 28, 4},
      {"ns_shm_chunk_map_entry.first_timestamp_ms", 32, 8},
  };
  return kGolden;
}

TEST(ShmLayoutTest, OffsetsMatchTheGoldenTable) {
  const std::vector<Row> rows = LayoutRows();
  ASSERT_EQ(rows.size(), Golden().size());
  std::printf("| field | offset | size |\n|---|---:|---:|\n");
  for (size_t i = 0; i < rows.size(); ++i) {
    std::printf("| `%s` | %zu | %zu |\n", rows[i].name.c_str(), rows[i].offset, rows[i].size);
    EXPECT_EQ(rows[i].name, Golden()[i].name);
    EXPECT_EQ(rows[i].offset, Golden()[i].offset) << rows[i].name;
    EXPECT_EQ(rows[i].size, Golden()[i].size) << rows[i].name;
  }
}

// docs/shm-layout.md carries the same table; the two must not drift apart.
TEST(ShmLayoutTest, DocsCarryTheGoldenTable) {
  const std::string doc = std::string(NEARSTREAM_TESTDATA_DIR) + "/../docs/shm-layout.md";
  std::ifstream in(doc);
  if (!in) GTEST_SKIP() << "no " << doc;
  std::vector<Row> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `ns_shm_", 0) != 0) continue;
    Row r;
    char name[128];
    if (std::sscanf(line.c_str(), "| `%127[^`]` | %zu | %zu |", name, &r.offset, &r.size) != 3) {
      ADD_FAILURE() << "unparsable row: " << line;
      continue;
    }
    r.name = name;
    rows.push_back(r);
  }
  ASSERT_EQ(rows.size(), Golden().size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].name, Golden()[i].name);
    EXPECT_EQ(rows[i].offset, Golden()[i].offset) << rows[i].name;
    EXPECT_EQ(rows[i].size, Golden()[i].size) << rows[i].name;
  }
}

// The JNI library includes the header from C: it must compile as strict C11, with the same
// static_asserts holding there.
TEST(ShmLayoutTest, HeaderCompilesAsC11) {
  if (std::system("command -v cc >/dev/null 2>&1") != 0) GTEST_SKIP() << "no C compiler";
  const std::string include = std::string(NEARSTREAM_TESTDATA_DIR) + "/../native/include";
  const std::string cmd =
      "printf '#include \"nearstream/shm_layout.h\"\\n"
      "int f(void) { return (int)ns_shm_region_bytes(1, 8, 64); }\\n' | "
      "cc -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I'" +
      include + "' -x c -";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

TEST(ShmLayoutTest, StructSizesAndConstants) {
  EXPECT_EQ(sizeof(ns_shm_region_header), 4096u);
  EXPECT_EQ(sizeof(ns_shm_ring_header), 256u);
  EXPECT_EQ(sizeof(ns_shm_slot_descriptor), 128u);
  EXPECT_EQ(sizeof(ns_shm_chunk_map_entry), 40u);
  EXPECT_EQ(sizeof(ns_shm_buffer_table_entry), 16u);
  EXPECT_EQ(NS_SHM_VIEW_BYTES, 16u);
  EXPECT_EQ(NS_SHM_VIEW_INLINE_BYTES, 12u);
  EXPECT_EQ(NS_SHM_SLOT_FORMAT_BINARY, 0u);
  EXPECT_EQ(NS_SHM_SLOT_FORMAT_BINARY_VIEW, 1u);
  // "NSPUSH01" in memory order.
  uint64_t magic = NS_SHM_MAGIC;
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&magic), 8), "NSPUSH01");
  EXPECT_EQ(NS_SHM_LAYOUT_VERSION, 3u);
  EXPECT_EQ(NS_SHM_SLOT_FETCH_CHUNK, 1u);
  EXPECT_EQ(NS_SHM_SLOT_DAMAGED, 2u);
}

TEST(ShmLayoutTest, HotWordsSitAloneOnTheirCacheLines) {
  auto line = [](size_t offset) { return offset / NS_SHM_CACHE_LINE; };
  EXPECT_NE(line(offsetof(ns_shm_region_header, broker_heartbeat_ns)),
            line(offsetof(ns_shm_region_header, slot_bytes)));
  EXPECT_NE(line(offsetof(ns_shm_region_header, release_doorbell)),
            line(offsetof(ns_shm_region_header, broker_heartbeat_ns)));
  EXPECT_NE(line(offsetof(ns_shm_region_header, release_doorbell)),
            line(offsetof(ns_shm_region_header, broker_waiting)));
  EXPECT_NE(line(offsetof(ns_shm_ring_header, data_doorbell)),
            line(offsetof(ns_shm_ring_header, state)));
  EXPECT_NE(line(offsetof(ns_shm_ring_header, data_doorbell)),
            line(offsetof(ns_shm_ring_header, consumer_waiting)));
  EXPECT_NE(line(offsetof(ns_shm_ring_header, consumer_waiting)),
            line(offsetof(ns_shm_ring_header, released)));
}

// The worked example of docs/shm-layout.md: 2 rings of 8 slots of 1 MiB.
TEST(ShmLayoutTest, GeometryOfTheWorkedExample) {
  RegionGeometry g{2, 8, 1u << 20};
  ASSERT_TRUE(g.Validate().ok());
  EXPECT_EQ(g.payload_offset(), 4096u);
  EXPECT_EQ(g.ring_stride(), 8392704u);
  EXPECT_EQ(g.region_bytes(), 16789504u);
  ns_shm_region_header h{};
  h.header_bytes = NS_SHM_HEADER_BYTES;
  h.slot_bytes = g.slot_bytes;
  h.descriptor_bytes = NS_SHM_DESCRIPTOR_BYTES;
  h.ring_header_bytes = NS_SHM_RING_HEADER_BYTES;
  h.payload_offset = static_cast<uint32_t>(g.payload_offset());
  h.ring_stride = g.ring_stride();
  EXPECT_EQ(ns_shm_ring_offset(&h, 1), 8396800u);
  EXPECT_EQ(ns_shm_descriptor_offset(&h, 1, 3), 8397440u);
  EXPECT_EQ(ns_shm_slot_payload_offset(&h, 1, 3), 11546624u);
  // 64 slots push the payloads one page further.
  EXPECT_EQ(ns_shm_payload_offset(64), 12288u);
  EXPECT_EQ(ns_shm_ring_stride(3, 64), 8192u);
}

TEST(ShmLayoutTest, GeometryValidation) {
  EXPECT_TRUE((RegionGeometry{1, 1, 64}.Validate().ok()));
  EXPECT_FALSE((RegionGeometry{0, 8, 1024}.Validate().ok()));
  EXPECT_FALSE((RegionGeometry{1, 0, 1024}.Validate().ok()));
  EXPECT_FALSE((RegionGeometry{1, 8, 0}.Validate().ok()));
  EXPECT_FALSE((RegionGeometry{1, 8, 1000}.Validate().ok()));  // not a multiple of 64
  EXPECT_FALSE((RegionGeometry{1, 8, (1u << 30) + 64}.Validate().ok()));
}

}  // namespace
}  // namespace nearstream::push
