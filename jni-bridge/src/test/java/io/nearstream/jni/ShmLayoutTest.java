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
