/*
 * The shared-memory layout of a push region: the single definition used by the broker (C++20) and
 * by the JNI library (C11). Java mirrors it as offset constants and a test compares them with the
 * values asserted here; docs/shm-layout.md is the same contract in prose.
 *
 * One region = one file in /dev/shm (mode 0600) per push subscription, created by the broker.
 * All integers are little-endian (host order; Nearstream targets little-endian hosts).
 *
 *   region (region_bytes, a multiple of 4096)
 *   +-------------------------------+ 0
 *   | region header (4096 B)        |   magic (written LAST, release), version, geometry,
 *   |                               |   broker epoch + heartbeat, release doorbell
 *   +-------------------------------+ header_bytes = 4096
 *   | ring 0                        |
 *   +-------------------------------+ header_bytes + 1 * ring_stride
 *   | ring 1                        |
 *   +-------------------------------+ ...
 *   | ring ring_count-1             |
 *   +-------------------------------+ region_bytes = header_bytes + ring_count * ring_stride
 *
 *   ring i (ring_stride bytes, a multiple of 4096)
 *   +-------------------------------+ 0
 *   | ring header (256 B)           |   state, doorbell, waiter flag, heartbeat, counters
 *   +-------------------------------+ ring_header_bytes = 256
 *   | descriptor 0 (128 B)          |   sequence word, row/chunk counts, Arrow buffer layout
 *   | descriptor 1                  |
 *   | ...  slots_per_ring of them   |
 *   +-------------------------------+ payload_offset = round_up(256 + N * 128, 4096)
 *   | slot payload 0 (slot_bytes)   |   validity | int32 offsets | data | chunk map
 *   | slot payload 1                |   (each buffer 64-byte aligned, offsets relative to
 *   | ...                           |    the start of the slot payload)
 *   +-------------------------------+ payload_offset + N * slot_bytes, rounded up to 4096
 *
 *   region header (4096 B; each hot word alone on its 64-byte cache line)
 *   offset size  field                 writer
 *   0      8     magic                 broker, last, release store ("NSPUSH01")
 *   8      4     layout_version        broker (3)
 *   12     4     header_bytes          broker (4096)
 *   16     4     ring_count            broker
 *   20     4     slots_per_ring        broker (N)
 *   24     4     slot_bytes            broker (payload bytes per slot, multiple of 64)
 *   28     4     descriptor_bytes      broker (128)
 *   32     4     ring_header_bytes     broker (256)
 *   36     4     payload_offset        broker (slot 0 payload, from the ring start)
 *   40     8     ring_stride           broker
 *   48     8     region_bytes          broker
 *   56     8     broker_epoch          broker
 *   64     8     broker_heartbeat_ns   broker (CLOCK_MONOTONIC), own cache line
 *   72     4     region_state          broker (1 open, 2 closed)
 *   128    4     release_doorbell      consumers (futex word, +1 after releasing; the broker
 *                                      also bumps it to wake its push thread), own line
 *   192    4     broker_waiting        broker (1 while it sleeps on release_doorbell), own line
 *   256    4     slot_format           broker (0 binary: records copied; 1 binary_view: views)
 *   320    64    segment_file_prefix   broker (binary_view: ASCII name prefix of segment files)
 *
 *   ring header (256 B)
 *   0      4     ring_id               broker (= the ring's index)
 *   4      4     subtask_index         broker
 *   8      4     state                 broker (0 free, 1 active, 2 reclaimed; release store)
 *   12     4     generation            broker (+1 at every activation)
 *   16     8     base_position         broker (first slot position of this generation)
 *   64     4     data_doorbell         broker (futex word, +1 after publishing), own line
 *   72     8     published             broker (slots published this generation)
 *   128    4     consumer_waiting      consumer (1 while it sleeps on data_doorbell), own line
 *   192    8     released              consumer (slots released this generation), own line
 *   200    8     consumer_heartbeat_ns consumer (CLOCK_MONOTONIC)
 *
 *   slot descriptor (128 B)
 *   0      8     sequence              both: pos = free for position pos, pos+1 = published
 *                                      (broker, release), pos+N = released (consumer, release)
 *   8      4     row_count             broker
 *   12     4     chunk_count           broker
 *   16     4+4   validity_offset/length
 *   24     4+4   offsets_offset/length (int32, row_count + 1 entries)
 *   32     4+4   data_offset/length
 *   40     4+4   chunk_map_offset/length (chunk_count * 40 bytes)
 *   48     4     flags                 0 = an Arrow batch; else a marker slot (below)
 *   52     4     payload_length        bytes of the payload in use
 *   56     4+4   buffers_offset/length binary_view only: the buffer table (16 B per entry)
 *
 *   binary_view slots: offsets_offset/length locate the 16-byte views (Arrow BinaryView) instead
 *   of int32 offsets; data is variadic buffer 0 (records copied into the slot); buffer table entry
 *   k is variadic buffer k + 1, a segment file the consumer maps read-only.
 *
 *   buffer table entry (16 B)
 *   0      8     segment_file          its number: file = <dir>/<segment_file_prefix><number>
 *   8      4     file_bytes            bytes to map (the file's size)
 *
 *   chunk map entry (40 B)
 *   0      4     streamlet
 *   4      4     record_count
 *   8      8     group
 *   16     8     segment
 *   24     4     byte_position         the chunk's offset in its segment
 *   28     4     chunk_bytes           the chunk's size in the segment (header + payload)
 *   32     8     first_timestamp_ms    the chunk's first-record timestamp (event time of its rows)
 */
#ifndef NEARSTREAM_SHM_LAYOUT_H_
#define NEARSTREAM_SHM_LAYOUT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define NS_SHM_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#define NS_SHM_INLINE inline
extern "C" {
#else
#define NS_SHM_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#define NS_SHM_INLINE static inline
#endif

/* "NSPUSH01" read as a little-endian u64. */
#define NS_SHM_MAGIC UINT64_C(0x313048535550534E)
/* 2: descriptor flags mark slots that carry a chunk map entry but no rows. */
#define NS_SHM_LAYOUT_VERSION 3u
#define NS_SHM_HEADER_BYTES 4096u
#define NS_SHM_RING_HEADER_BYTES 256u
#define NS_SHM_DESCRIPTOR_BYTES 128u
#define NS_SHM_CHUNK_MAP_ENTRY_BYTES 40u
#define NS_SHM_VIEW_BYTES 16u
#define NS_SHM_BUFFER_TABLE_ENTRY_BYTES 16u
/* A BinaryView holds a record of at most this many bytes inline. */
#define NS_SHM_VIEW_INLINE_BYTES 12u
#define NS_SHM_SEGMENT_FILE_PREFIX_BYTES 64u
#define NS_SHM_CACHE_LINE 64u
#define NS_SHM_PAGE 4096u
/* Alignment of every Arrow buffer and of the chunk map inside a slot payload. */
#define NS_SHM_BUFFER_ALIGNMENT 64u
/* slot_bytes is a multiple of 64 and below 2^31 (int32 Arrow offsets). */
#define NS_SHM_MAX_SLOT_BYTES (1u << 30)

/* Geometry bounds of a push subscription: the broker refuses a PushSubscribe outside them with
 * INVALID_ARGUMENT, and clients check them before asking. slot_bytes is also a multiple of
 * NS_SHM_BUFFER_ALIGNMENT. (NS_SHM_MAX_SLOT_BYTES above is the layout's own limit, which any
 * mapper checks; these are the broker's narrower policy.) */
#define NS_SHM_MIN_SLOTS_PER_RING 2u
#define NS_SHM_MAX_SLOTS_PER_RING 1024u
#define NS_SHM_MIN_SLOT_BYTES (64u << 10)
#define NS_SHM_MAX_PUSH_SLOT_BYTES (64u << 20)
#define NS_SHM_MAX_RINGS 1024u
#define NS_SHM_MAX_REGION_BYTES (UINT64_C(16) << 30)

/* region_state */
#define NS_SHM_REGION_OPEN 1u
#define NS_SHM_REGION_CLOSED 2u

/* ring state */
#define NS_SHM_RING_FREE 0u
#define NS_SHM_RING_ACTIVE 1u
#define NS_SHM_RING_RECLAIMED 2u

/* Descriptor flags. 0: the slot is an Arrow batch of whole chunks. A marker slot has one flag
 * set, row_count 0 and exactly one chunk map entry, and stands in its split's order like a chunk:
 * FETCH_CHUNK: the entry is a chunk too large for this region's slots; the consumer reads it with
 *   a Fetch of (streamlet, group, segment, byte_position) and goes on with the next slot.
 * DAMAGED: the entry is a damaged range (byte_position, chunk_bytes = its length, record_count
 *   0) that recovery found in a segment; the consumer fails, or skips it when told to. */
#define NS_SHM_SLOT_FETCH_CHUNK 1u
#define NS_SHM_SLOT_DAMAGED 2u

/* Region slot formats (region header slot_format). */
#define NS_SHM_SLOT_FORMAT_BINARY 0u
#define NS_SHM_SLOT_FORMAT_BINARY_VIEW 1u

typedef struct ns_shm_region_header {
  /* cache line 0: written once by the broker before magic is published */
  uint64_t magic;
  uint32_t layout_version;
  uint32_t header_bytes;
  uint32_t ring_count;
  uint32_t slots_per_ring;
  uint32_t slot_bytes;
  uint32_t descriptor_bytes;
  uint32_t ring_header_bytes;
  uint32_t payload_offset;
  uint64_t ring_stride;
  uint64_t region_bytes;
  uint64_t broker_epoch;
  /* cache line 1: broker liveness */
  uint64_t broker_heartbeat_ns;
  uint32_t region_state;
  uint8_t pad1[52];
  /* cache line 2: consumers bump it after releasing slots */
  uint32_t release_doorbell;
  uint8_t pad2[60];
  /* cache line 3: set by the broker while it sleeps on release_doorbell */
  uint32_t broker_waiting;
  uint8_t pad3[60];
  /* cache line 4 on: written once by the broker before magic is published */
  uint32_t slot_format;
  uint8_t pad4[60];
  char segment_file_prefix[NS_SHM_SEGMENT_FILE_PREFIX_BYTES];
  uint8_t reserved[NS_SHM_HEADER_BYTES - 384];
} ns_shm_region_header;

typedef struct ns_shm_ring_header {
  /* cache line 0: written by the broker at (re)activation, read-mostly */
  uint32_t ring_id;
  uint32_t subtask_index;
  uint32_t state;
  uint32_t generation;
  uint64_t base_position;
  uint8_t pad0[40];
  /* cache line 1: broker, once per published slot */
  uint32_t data_doorbell;
  uint32_t pad1a;
  uint64_t published;
  uint8_t pad1[48];
  /* cache line 2: consumer, while it sleeps on data_doorbell */
  uint32_t consumer_waiting;
  uint8_t pad2[60];
  /* cache line 3: consumer, once per released slot and per heartbeat */
  uint64_t released;
  uint64_t consumer_heartbeat_ns;
  uint8_t pad3[48];
} ns_shm_ring_header;

typedef struct ns_shm_slot_descriptor {
  uint64_t sequence;
  uint32_t row_count;
  uint32_t chunk_count;
  uint32_t validity_offset;
  uint32_t validity_length;
  uint32_t offsets_offset;
  uint32_t offsets_length;
  uint32_t data_offset;
  uint32_t data_length;
  uint32_t chunk_map_offset;
  uint32_t chunk_map_length;
  uint32_t flags;
  uint32_t payload_length;
  uint32_t buffers_offset;
  uint32_t buffers_length;
  uint8_t reserved[NS_SHM_DESCRIPTOR_BYTES - 64];
} ns_shm_slot_descriptor;

typedef struct ns_shm_buffer_table_entry {
  uint64_t segment_file;
  uint32_t file_bytes;
  uint32_t reserved;
} ns_shm_buffer_table_entry;

typedef struct ns_shm_chunk_map_entry {
  uint32_t streamlet;
  uint32_t record_count;
  uint64_t group;
  uint64_t segment;
  uint32_t byte_position;
  uint32_t chunk_bytes;
  int64_t first_timestamp_ms;
} ns_shm_chunk_map_entry;

/* ---- sizes ---- */
NS_SHM_STATIC_ASSERT(sizeof(ns_shm_region_header) == NS_SHM_HEADER_BYTES, "region header size");
NS_SHM_STATIC_ASSERT(sizeof(ns_shm_ring_header) == NS_SHM_RING_HEADER_BYTES, "ring header size");
NS_SHM_STATIC_ASSERT(sizeof(ns_shm_slot_descriptor) == NS_SHM_DESCRIPTOR_BYTES, "descriptor size");
NS_SHM_STATIC_ASSERT(sizeof(ns_shm_chunk_map_entry) == NS_SHM_CHUNK_MAP_ENTRY_BYTES,
                     "chunk map entry size");
NS_SHM_STATIC_ASSERT(sizeof(ns_shm_buffer_table_entry) == NS_SHM_BUFFER_TABLE_ENTRY_BYTES,
                     "buffer table entry size");

/* ---- push geometry bounds ---- */
NS_SHM_STATIC_ASSERT(NS_SHM_MAX_PUSH_SLOT_BYTES <= NS_SHM_MAX_SLOT_BYTES, "push slot bound");
NS_SHM_STATIC_ASSERT(NS_SHM_MIN_SLOT_BYTES % NS_SHM_BUFFER_ALIGNMENT == 0, "min slot bytes");
NS_SHM_STATIC_ASSERT(NS_SHM_MIN_SLOTS_PER_RING <= NS_SHM_MAX_SLOTS_PER_RING, "slots per ring");

/* ---- region header offsets ---- */
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, magic) == 0, "magic");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, layout_version) == 8, "layout_version");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, header_bytes) == 12, "header_bytes");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, ring_count) == 16, "ring_count");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, slots_per_ring) == 20, "slots_per_ring");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, slot_bytes) == 24, "slot_bytes");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, descriptor_bytes) == 28, "descriptor_bytes");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, ring_header_bytes) == 32, "ring_header_bytes");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, payload_offset) == 36, "payload_offset");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, ring_stride) == 40, "ring_stride");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, region_bytes) == 48, "region_bytes");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, broker_epoch) == 56, "broker_epoch");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, broker_heartbeat_ns) == 64,
                     "broker_heartbeat_ns");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, region_state) == 72, "region_state");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, release_doorbell) == 128, "release_doorbell");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, broker_waiting) == 192, "broker_waiting");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, slot_format) == 256, "slot_format");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_region_header, segment_file_prefix) == 320,
                     "segment_file_prefix");

/* ---- ring header offsets ---- */
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_ring_header, ring_id) == 0, "ring_id");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_ring_header, subtask_index) == 4, "subtask_index");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_ring_header, state) == 8, "state");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_ring_header, generation) == 12, "generation");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_ring_header, base_position) == 16, "base_position");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_ring_header, data_doorbell) == 64, "data_doorbell");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_ring_header, published) == 72, "published");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_ring_header, consumer_waiting) == 128, "consumer_waiting");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_ring_header, released) == 192, "released");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_ring_header, consumer_heartbeat_ns) == 200,
                     "consumer_heartbeat_ns");

/* ---- slot descriptor offsets ---- */
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, sequence) == 0, "sequence");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, row_count) == 8, "row_count");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, chunk_count) == 12, "chunk_count");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, validity_offset) == 16, "validity_offset");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, validity_length) == 20, "validity_length");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, offsets_offset) == 24, "offsets_offset");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, offsets_length) == 28, "offsets_length");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, data_offset) == 32, "data_offset");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, data_length) == 36, "data_length");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, chunk_map_offset) == 40, "chunk_map_offset");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, chunk_map_length) == 44, "chunk_map_length");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, flags) == 48, "flags");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, payload_length) == 52, "payload_length");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, buffers_offset) == 56, "buffers_offset");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_slot_descriptor, buffers_length) == 60, "buffers_length");

/* ---- buffer table entry offsets ---- */
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_buffer_table_entry, segment_file) == 0, "segment_file");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_buffer_table_entry, file_bytes) == 8, "file_bytes");

/* ---- chunk map entry offsets ---- */
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_chunk_map_entry, streamlet) == 0, "streamlet");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_chunk_map_entry, record_count) == 4, "record_count");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_chunk_map_entry, group) == 8, "group");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_chunk_map_entry, segment) == 16, "segment");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_chunk_map_entry, byte_position) == 24, "byte_position");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_chunk_map_entry, chunk_bytes) == 28, "chunk_bytes");
NS_SHM_STATIC_ASSERT(offsetof(ns_shm_chunk_map_entry, first_timestamp_ms) == 32,
                     "first_timestamp_ms");

/* ---- geometry: computed by the broker at creation, validated by every mapper ---- */

NS_SHM_INLINE uint64_t ns_shm_round_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

/* Offset of slot 0's payload from the start of its ring. */
NS_SHM_INLINE uint64_t ns_shm_payload_offset(uint32_t slots_per_ring) {
  return ns_shm_round_up(
      (uint64_t)NS_SHM_RING_HEADER_BYTES + (uint64_t)slots_per_ring * NS_SHM_DESCRIPTOR_BYTES,
      NS_SHM_PAGE);
}

NS_SHM_INLINE uint64_t ns_shm_ring_stride(uint32_t slots_per_ring, uint32_t slot_bytes) {
  return ns_shm_round_up(
      ns_shm_payload_offset(slots_per_ring) + (uint64_t)slots_per_ring * slot_bytes, NS_SHM_PAGE);
}

NS_SHM_INLINE uint64_t ns_shm_region_bytes(uint32_t ring_count, uint32_t slots_per_ring,
                                           uint32_t slot_bytes) {
  return NS_SHM_HEADER_BYTES +
         (uint64_t)ring_count * ns_shm_ring_stride(slots_per_ring, slot_bytes);
}

/* ---- addresses inside a mapped region (base = the mapping's first byte) ---- */

NS_SHM_INLINE uint64_t ns_shm_ring_offset(const ns_shm_region_header* h, uint32_t ring) {
  return (uint64_t)h->header_bytes + (uint64_t)ring * h->ring_stride;
}

NS_SHM_INLINE uint64_t ns_shm_descriptor_offset(const ns_shm_region_header* h, uint32_t ring,
                                                uint32_t slot) {
  return ns_shm_ring_offset(h, ring) + h->ring_header_bytes + (uint64_t)slot * h->descriptor_bytes;
}

NS_SHM_INLINE uint64_t ns_shm_slot_payload_offset(const ns_shm_region_header* h, uint32_t ring,
                                                  uint32_t slot) {
  return ns_shm_ring_offset(h, ring) + h->payload_offset + (uint64_t)slot * h->slot_bytes;
}

NS_SHM_INLINE ns_shm_ring_header* ns_shm_ring(void* base, uint32_t ring) {
  const ns_shm_region_header* h = (const ns_shm_region_header*)base;
  return (ns_shm_ring_header*)((uint8_t*)base + ns_shm_ring_offset(h, ring));
}

NS_SHM_INLINE ns_shm_slot_descriptor* ns_shm_descriptor(void* base, uint32_t ring, uint32_t slot) {
  const ns_shm_region_header* h = (const ns_shm_region_header*)base;
  return (ns_shm_slot_descriptor*)((uint8_t*)base + ns_shm_descriptor_offset(h, ring, slot));
}

NS_SHM_INLINE uint8_t* ns_shm_slot_payload(void* base, uint32_t ring, uint32_t slot) {
  const ns_shm_region_header* h = (const ns_shm_region_header*)base;
  return (uint8_t*)base + ns_shm_slot_payload_offset(h, ring, slot);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NEARSTREAM_SHM_LAYOUT_H_ */
