package io.nearstream.jni;

import static io.nearstream.jni.ShmLayout.*;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.Map;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;

/**
 * Keeps {@link ShmLayout} equal to {@code native/include/nearstream/shm_layout.h}: the C side
 * reports {@code offsetof}/{@code sizeof} and the header's constants in the order of {@link
 * #expected()} (the {@code kLayout} table of {@code nearstream_jni.c}), followed by geometry
 * samples computed with the header's inline functions.
 */
class ShmLayoutTest {

    /** Name (the C spelling) → the Java value; the order is the order of C's kLayout table. */
    static Map<String, Long> expected() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("NS_SHM_MAGIC", MAGIC);
        m.put("NS_SHM_LAYOUT_VERSION", (long) LAYOUT_VERSION);
        m.put("NS_SHM_HEADER_BYTES", (long) HEADER_BYTES);
        m.put("NS_SHM_RING_HEADER_BYTES", (long) RING_HEADER_BYTES);
        m.put("NS_SHM_DESCRIPTOR_BYTES", (long) DESCRIPTOR_BYTES);
        m.put("NS_SHM_CHUNK_MAP_ENTRY_BYTES", (long) CHUNK_MAP_ENTRY_BYTES);
        m.put("NS_SHM_CACHE_LINE", (long) CACHE_LINE);
        m.put("NS_SHM_PAGE", (long) PAGE);
        m.put("NS_SHM_BUFFER_ALIGNMENT", (long) BUFFER_ALIGNMENT);
        m.put("NS_SHM_MAX_SLOT_BYTES", (long) MAX_SLOT_BYTES);
        m.put("NS_SHM_REGION_OPEN", (long) REGION_OPEN);
        m.put("NS_SHM_REGION_CLOSED", (long) REGION_CLOSED);
        m.put("NS_SHM_RING_FREE", (long) RING_FREE);
        m.put("NS_SHM_RING_ACTIVE", (long) RING_ACTIVE);
        m.put("NS_SHM_RING_RECLAIMED", (long) RING_RECLAIMED);

        m.put("sizeof(ns_shm_region_header)", (long) HEADER_BYTES);
        m.put("sizeof(ns_shm_ring_header)", (long) RING_HEADER_BYTES);
        m.put("sizeof(ns_shm_slot_descriptor)", (long) DESCRIPTOR_BYTES);
        m.put("sizeof(ns_shm_chunk_map_entry)", (long) CHUNK_MAP_ENTRY_BYTES);

        m.put("region.magic", (long) REGION_MAGIC);
        m.put("region.layout_version", (long) REGION_LAYOUT_VERSION);
        m.put("region.header_bytes", (long) REGION_HEADER_BYTES);
        m.put("region.ring_count", (long) REGION_RING_COUNT);
        m.put("region.slots_per_ring", (long) REGION_SLOTS_PER_RING);
        m.put("region.slot_bytes", (long) REGION_SLOT_BYTES);
        m.put("region.descriptor_bytes", (long) REGION_DESCRIPTOR_BYTES);
        m.put("region.ring_header_bytes", (long) REGION_RING_HEADER_BYTES);
        m.put("region.payload_offset", (long) REGION_PAYLOAD_OFFSET);
        m.put("region.ring_stride", (long) REGION_RING_STRIDE);
        m.put("region.region_bytes", (long) REGION_REGION_BYTES);
        m.put("region.broker_epoch", (long) REGION_BROKER_EPOCH);
        m.put("region.broker_heartbeat_ns", (long) REGION_BROKER_HEARTBEAT_NS);
        m.put("region.region_state", (long) REGION_STATE);
        m.put("region.release_doorbell", (long) REGION_RELEASE_DOORBELL);
        m.put("region.broker_waiting", (long) REGION_BROKER_WAITING);

        m.put("ring.ring_id", (long) RING_ID);
        m.put("ring.subtask_index", (long) RING_SUBTASK_INDEX);
        m.put("ring.state", (long) RING_STATE);
        m.put("ring.generation", (long) RING_GENERATION);
        m.put("ring.base_position", (long) RING_BASE_POSITION);
        m.put("ring.data_doorbell", (long) RING_DATA_DOORBELL);
        m.put("ring.published", (long) RING_PUBLISHED);
        m.put("ring.consumer_waiting", (long) RING_CONSUMER_WAITING);
        m.put("ring.released", (long) RING_RELEASED);
        m.put("ring.consumer_heartbeat_ns", (long) RING_CONSUMER_HEARTBEAT_NS);

        m.put("desc.sequence", (long) DESC_SEQUENCE);
        m.put("desc.row_count", (long) DESC_ROW_COUNT);
        m.put("desc.chunk_count", (long) DESC_CHUNK_COUNT);
        m.put("desc.validity_offset", (long) DESC_VALIDITY_OFFSET);
        m.put("desc.validity_length", (long) DESC_VALIDITY_LENGTH);
        m.put("desc.offsets_offset", (long) DESC_OFFSETS_OFFSET);
        m.put("desc.offsets_length", (long) DESC_OFFSETS_LENGTH);
        m.put("desc.data_offset", (long) DESC_DATA_OFFSET);
        m.put("desc.data_length", (long) DESC_DATA_LENGTH);
        m.put("desc.chunk_map_offset", (long) DESC_CHUNK_MAP_OFFSET);
        m.put("desc.chunk_map_length", (long) DESC_CHUNK_MAP_LENGTH);
        m.put("desc.flags", (long) DESC_FLAGS);
        m.put("desc.payload_length", (long) DESC_PAYLOAD_LENGTH);

        m.put("chunk.streamlet", (long) CHUNK_STREAMLET);
        m.put("chunk.record_count", (long) CHUNK_RECORD_COUNT);
        m.put("chunk.group", (long) CHUNK_GROUP);
        m.put("chunk.segment", (long) CHUNK_SEGMENT);
        m.put("chunk.byte_position", (long) CHUNK_BYTE_POSITION);
        m.put("chunk.chunk_bytes", (long) CHUNK_CHUNK_BYTES);
        m.put("chunk.first_timestamp_ms", (long) CHUNK_FIRST_TIMESTAMP_MS);
        m.put("NS_SHM_SLOT_FETCH_CHUNK", (long) SLOT_FETCH_CHUNK);
        m.put("NS_SHM_SLOT_DAMAGED", (long) SLOT_DAMAGED);
        m.put("NS_SHM_MIN_SLOTS_PER_RING", (long) MIN_SLOTS_PER_RING);
        m.put("NS_SHM_MAX_SLOTS_PER_RING", (long) MAX_SLOTS_PER_RING);
        m.put("NS_SHM_MIN_SLOT_BYTES", (long) MIN_SLOT_BYTES);
        m.put("NS_SHM_MAX_PUSH_SLOT_BYTES", (long) MAX_PUSH_SLOT_BYTES);
        m.put("NS_SHM_MAX_RINGS", (long) MAX_RINGS);
        m.put("NS_SHM_MAX_REGION_BYTES", MAX_REGION_BYTES);
        m.put("NS_SHM_VIEW_BYTES", (long) VIEW_BYTES);
        m.put("NS_SHM_BUFFER_TABLE_ENTRY_BYTES", (long) BUFFER_TABLE_ENTRY_BYTES);
        m.put("NS_SHM_VIEW_INLINE_BYTES", (long) VIEW_INLINE_BYTES);
        m.put("NS_SHM_SEGMENT_FILE_PREFIX_BYTES", (long) SEGMENT_FILE_PREFIX_BYTES);
        m.put("NS_SHM_SLOT_FORMAT_BINARY", (long) SLOT_FORMAT_BINARY);
        m.put("NS_SHM_SLOT_FORMAT_BINARY_VIEW", (long) SLOT_FORMAT_BINARY_VIEW);
        m.put("sizeof(ns_shm_buffer_table_entry)", (long) BUFFER_TABLE_ENTRY_BYTES);
        m.put("region.slot_format", (long) REGION_SLOT_FORMAT);
        m.put("region.segment_file_prefix", (long) REGION_SEGMENT_FILE_PREFIX);
        m.put("sizeof(region.segment_file_prefix)", (long) SEGMENT_FILE_PREFIX_BYTES);
        m.put("desc.buffers_offset", (long) DESC_BUFFERS_OFFSET);
        m.put("desc.buffers_length", (long) DESC_BUFFERS_LENGTH);
        m.put("buffer.segment_file", (long) BUFFER_SEGMENT_FILE);
        m.put("buffer.file_bytes", (long) BUFFER_FILE_BYTES);

        // Geometry samples: {slots_per_ring, slot_bytes, ring_count}, as kGeometry in C.
        int[][] samples = {{8, 1 << 20, 1}, {8, 1 << 20, 2}, {1, 64, 3}, {100, 4160, 7}};
        for (int[] s : samples) {
            String key = "(" + s[0] + ", " + s[1] + ", " + s[2] + ")";
            m.put("ns_shm_payload_offset" + key, payloadOffset(s[0]));
            m.put("ns_shm_ring_stride" + key, ringStride(s[0], s[1]));
            m.put("ns_shm_region_bytes" + key, regionBytes(s[2], s[0], s[1]));
        }
        return m;
    }

    @Test
    void everyJavaConstantEqualsTheCValue() {
        long[] c = Natives.offsetsOfLayout();
        Map<String, Long> java = expected();
        assertThat(c)
                .as("the C kLayout table and this test list different numbers of values")
                .hasSize(java.size());
        SoftAssertions soft = new SoftAssertions();
        int i = 0;
        for (Map.Entry<String, Long> e : java.entrySet()) {
            soft.assertThat(e.getValue()).as(e.getKey()).isEqualTo(c[i++]);
        }
        soft.assertAll();
    }

    /** A row of docs/shm-layout.md, "Golden offsets": the Java constant and the table's values. */
    private record Golden(String field, int javaOffset, int offset, int size) {}

    private static final int[] STRUCT_BYTES = {
        HEADER_BYTES,
        RING_HEADER_BYTES,
        DESCRIPTOR_BYTES,
        BUFFER_TABLE_ENTRY_BYTES,
        CHUNK_MAP_ENTRY_BYTES
    };

    /**
     * The golden table of docs/shm-layout.md, literally, grouped by struct (STRUCT_BYTES order).
     */
    private static final Golden[][] GOLDEN = {
        {
            new Golden("ns_shm_region_header.magic", REGION_MAGIC, 0, 8),
            new Golden("ns_shm_region_header.layout_version", REGION_LAYOUT_VERSION, 8, 4),
            new Golden("ns_shm_region_header.header_bytes", REGION_HEADER_BYTES, 12, 4),
            new Golden("ns_shm_region_header.ring_count", REGION_RING_COUNT, 16, 4),
            new Golden("ns_shm_region_header.slots_per_ring", REGION_SLOTS_PER_RING, 20, 4),
            new Golden("ns_shm_region_header.slot_bytes", REGION_SLOT_BYTES, 24, 4),
            new Golden("ns_shm_region_header.descriptor_bytes", REGION_DESCRIPTOR_BYTES, 28, 4),
            new Golden("ns_shm_region_header.ring_header_bytes", REGION_RING_HEADER_BYTES, 32, 4),
            new Golden("ns_shm_region_header.payload_offset", REGION_PAYLOAD_OFFSET, 36, 4),
            new Golden("ns_shm_region_header.ring_stride", REGION_RING_STRIDE, 40, 8),
            new Golden("ns_shm_region_header.region_bytes", REGION_REGION_BYTES, 48, 8),
            new Golden("ns_shm_region_header.broker_epoch", REGION_BROKER_EPOCH, 56, 8),
            new Golden(
                    "ns_shm_region_header.broker_heartbeat_ns", REGION_BROKER_HEARTBEAT_NS, 64, 8),
            new Golden("ns_shm_region_header.region_state", REGION_STATE, 72, 4),
            new Golden("ns_shm_region_header.release_doorbell", REGION_RELEASE_DOORBELL, 128, 4),
            new Golden("ns_shm_region_header.broker_waiting", REGION_BROKER_WAITING, 192, 4),
            new Golden("ns_shm_region_header.slot_format", REGION_SLOT_FORMAT, 256, 4),
            new Golden(
                    "ns_shm_region_header.segment_file_prefix",
                    REGION_SEGMENT_FILE_PREFIX,
                    320,
                    SEGMENT_FILE_PREFIX_BYTES),
        },
        {
            new Golden("ns_shm_ring_header.ring_id", RING_ID, 0, 4),
            new Golden("ns_shm_ring_header.subtask_index", RING_SUBTASK_INDEX, 4, 4),
            new Golden("ns_shm_ring_header.state", RING_STATE, 8, 4),
            new Golden("ns_shm_ring_header.generation", RING_GENERATION, 12, 4),
            new Golden("ns_shm_ring_header.base_position", RING_BASE_POSITION, 16, 8),
            new Golden("ns_shm_ring_header.data_doorbell", RING_DATA_DOORBELL, 64, 4),
            new Golden("ns_shm_ring_header.published", RING_PUBLISHED, 72, 8),
            new Golden("ns_shm_ring_header.consumer_waiting", RING_CONSUMER_WAITING, 128, 4),
            new Golden("ns_shm_ring_header.released", RING_RELEASED, 192, 8),
            new Golden(
                    "ns_shm_ring_header.consumer_heartbeat_ns", RING_CONSUMER_HEARTBEAT_NS, 200, 8),
        },
        {
            new Golden("ns_shm_slot_descriptor.sequence", DESC_SEQUENCE, 0, 8),
            new Golden("ns_shm_slot_descriptor.row_count", DESC_ROW_COUNT, 8, 4),
            new Golden("ns_shm_slot_descriptor.chunk_count", DESC_CHUNK_COUNT, 12, 4),
            new Golden("ns_shm_slot_descriptor.validity_offset", DESC_VALIDITY_OFFSET, 16, 4),
            new Golden("ns_shm_slot_descriptor.validity_length", DESC_VALIDITY_LENGTH, 20, 4),
            new Golden("ns_shm_slot_descriptor.offsets_offset", DESC_OFFSETS_OFFSET, 24, 4),
            new Golden("ns_shm_slot_descriptor.offsets_length", DESC_OFFSETS_LENGTH, 28, 4),
            new Golden("ns_shm_slot_descriptor.data_offset", DESC_DATA_OFFSET, 32, 4),
            new Golden("ns_shm_slot_descriptor.data_length", DESC_DATA_LENGTH, 36, 4),
            new Golden("ns_shm_slot_descriptor.chunk_map_offset", DESC_CHUNK_MAP_OFFSET, 40, 4),
            new Golden("ns_shm_slot_descriptor.chunk_map_length", DESC_CHUNK_MAP_LENGTH, 44, 4),
            new Golden("ns_shm_slot_descriptor.flags", DESC_FLAGS, 48, 4),
            new Golden("ns_shm_slot_descriptor.payload_length", DESC_PAYLOAD_LENGTH, 52, 4),
            new Golden("ns_shm_slot_descriptor.buffers_offset", DESC_BUFFERS_OFFSET, 56, 4),
            new Golden("ns_shm_slot_descriptor.buffers_length", DESC_BUFFERS_LENGTH, 60, 4),
        },
        {
            new Golden("ns_shm_buffer_table_entry.segment_file", BUFFER_SEGMENT_FILE, 0, 8),
            new Golden("ns_shm_buffer_table_entry.file_bytes", BUFFER_FILE_BYTES, 8, 4),
        },
        {
            new Golden("ns_shm_chunk_map_entry.streamlet", CHUNK_STREAMLET, 0, 4),
            new Golden("ns_shm_chunk_map_entry.record_count", CHUNK_RECORD_COUNT, 4, 4),
            new Golden("ns_shm_chunk_map_entry.group", CHUNK_GROUP, 8, 8),
            new Golden("ns_shm_chunk_map_entry.segment", CHUNK_SEGMENT, 16, 8),
            new Golden("ns_shm_chunk_map_entry.byte_position", CHUNK_BYTE_POSITION, 24, 4),
            new Golden("ns_shm_chunk_map_entry.chunk_bytes", CHUNK_CHUNK_BYTES, 28, 4),
            new Golden(
                    "ns_shm_chunk_map_entry.first_timestamp_ms", CHUNK_FIRST_TIMESTAMP_MS, 32, 8),
        },
    };

    @Test
    void javaOffsetsAreTheDocumentedGoldenTable() {
        SoftAssertions soft = new SoftAssertions();
        for (int s = 0; s < GOLDEN.length; s++) {
            int end = 0;
            for (Golden g : GOLDEN[s]) {
                soft.assertThat(g.javaOffset()).as(g.field()).isEqualTo(g.offset());
                // Rows in offset order, none overlapping the one before, all inside the struct.
                soft.assertThat(g.offset())
                        .as(g.field() + " after the previous field")
                        .isGreaterThanOrEqualTo(end);
                end = g.offset() + g.size();
                soft.assertThat(end)
                        .as(g.field() + " inside its struct")
                        .isLessThanOrEqualTo(STRUCT_BYTES[s]);
            }
        }
        soft.assertThat(VIEW_BYTES).as("view").isEqualTo(16);
        soft.assertThat(BUFFER_TABLE_ENTRY_BYTES).as("buffer table entry").isEqualTo(16);
        soft.assertThat(MAGIC).as("NS_SHM_MAGIC").isEqualTo(0x313048535550534EL);
        soft.assertThat(SLOT_FETCH_CHUNK).as("NS_SHM_SLOT_FETCH_CHUNK").isEqualTo(1);
        soft.assertThat(SLOT_DAMAGED).as("NS_SHM_SLOT_DAMAGED").isEqualTo(2);
        soft.assertAll();
    }

    @Test
    void hotWordsSitOnTheirOwnCacheLines() {
        assertThat(REGION_RELEASE_DOORBELL % CACHE_LINE).isZero();
        assertThat(REGION_BROKER_WAITING % CACHE_LINE).isZero();
        assertThat(RING_DATA_DOORBELL % CACHE_LINE).isZero();
        assertThat(RING_CONSUMER_WAITING % CACHE_LINE).isZero();
        assertThat(RING_RELEASED % CACHE_LINE).isZero();
        // 8-byte words are 8-aligned (VarHandle atomics need it).
        assertThat(RING_RELEASED % 8).isZero();
        assertThat(RING_PUBLISHED % 8).isZero();
        assertThat(DESC_SEQUENCE % 8).isZero();
        assertThat(DESCRIPTOR_BYTES % 8).isZero();
    }
}
