package io.nearstream.jni;

/**
 * The Java mirror of {@code native/include/nearstream/shm_layout.h}, the layout of a push region
 * (docs/shm-layout.md). The C header is the single definition; {@code ShmLayoutTest} compares every
 * constant here with the {@code offsetof}/{@code sizeof} value the C compiler computes for it
 * ({@link Natives#offsetsOfLayout()}), so the two cannot drift apart silently. All integers are
 * little-endian; offsets of a region header field are from the start of the mapping, of a ring
 * header field from the ring's start, of a descriptor field from the descriptor's start.
 *
 * <pre>
 *   region (region_bytes, a multiple of 4096)
 *   +-------------------------------+ 0
 *   | region header (4096 B)        |   magic (written LAST, release), version, geometry,
 *   |                               |   broker epoch + heartbeat, release doorbell
 *   +-------------------------------+ header_bytes = 4096
 *   | ring 0                        |
 *   +-------------------------------+ header_bytes + 1 * ring_stride
 *   | ...                           |
 *   +-------------------------------+ region_bytes = header_bytes + ring_count * ring_stride
 *
 *   ring i (ring_stride bytes, a multiple of 4096)
 *   +-------------------------------+ 0
 *   | ring header (256 B)           |   state, doorbell, waiter flag, heartbeat, counters
 *   +-------------------------------+ ring_header_bytes = 256
 *   | descriptor 0 .. N-1 (128 B)   |   sequence word, row/chunk counts, Arrow buffer layout
 *   +-------------------------------+ payload_offset = round_up(256 + N * 128, 4096)
 *   | slot payload 0 .. N-1         |   validity | int32 offsets | data | chunk map
 *   | (slot_bytes each)             |   (64-byte aligned, offsets from the payload start)
 *   +-------------------------------+ payload_offset + N * slot_bytes, rounded up to 4096
 *
 *   region header                       ring header
 *   off  size field                     off  size field
 *   0    8    magic "NSPUSH01" (last)   0    4    ring_id
 *   8    4    layout_version (3)        4    4    subtask_index
 *   12   4    header_bytes (4096)       8    4    state (0 free, 1 active, 2 reclaimed)
 *   16   4    ring_count                12   4    generation
 *   20   4    slots_per_ring (N)        16   8    base_position
 *   24   4    slot_bytes                64   4    data_doorbell    (futex, broker +1)
 *   28   4    descriptor_bytes (128)    72   8    published
 *   32   4    ring_header_bytes (256)   128  4    consumer_waiting (own line)
 *   36   4    payload_offset            192  8    released         (consumer, own line)
 *   40   8    ring_stride               200  8    consumer_heartbeat_ns
 *   48   8    region_bytes
 *   56   8    broker_epoch              slot descriptor (128 B)
 *   64   8    broker_heartbeat_ns       0    8    sequence: pos free, pos+1 published,
 *   72   4    region_state                        pos+N released
 *   128  4    release_doorbell (futex)  8    4    row_count       12  4  chunk_count
 *   192  4    broker_waiting            16   4+4  validity offset/length
 *                                       24   4+4  offsets offset/length (int32, rows+1)
 *   chunk map entry (40 B)              32   4+4  data offset/length
 *   0    4    streamlet                 40   4+4  chunk_map offset/length (count * 40)
 *   4    4    record_count              48   4    flags (SLOT_*)
 *   8    8    group                     52   4    payload_length
 *   16   8    segment                   56   4+4  buffers offset/length (binary_view)
 *   24   4    byte_position
 *   28   4    chunk_bytes               region header, view slots
 *   32   8    first_timestamp_ms        256  4    slot_format (0 binary, 1 binary_view)
 *                                       320  64   segment_file_prefix (ASCII, NUL-padded)
 *   buffer table entry (16 B)
 *   0    8    segment_file              binary_view: offsets offset/length locate the 16-byte
 *   8    4    file_bytes                views; data is variadic buffer 0, entry k buffer k + 1
 * </pre>
 *
 * Unsigned C fields are read as Java {@code int}/{@code long}; widen 32-bit lengths with {@code
 * Integer.toUnsignedLong} where they can exceed 2^31 (they cannot for slot-relative values, which
 * stay below {@link #MAX_SLOT_BYTES}).
 */
public final class ShmLayout {
    private ShmLayout() {}

    // ---- constants (#define NS_SHM_*) ----
    /** "NSPUSH01" read as a little-endian u64. */
    public static final long MAGIC = 0x313048535550534EL;

    /** 3: view slots (region {@code slot_format}, descriptor buffer table). */
    public static final int LAYOUT_VERSION = 3;

    /**
     * Descriptor flags: 0 = an Arrow batch of whole chunks. A marker slot has no rows and one chunk
     * map entry. {@code SLOT_FETCH_CHUNK}: the entry is a chunk too large for the region's slots,
     * to be read with a Fetch of its position. {@code SLOT_DAMAGED}: the entry is a damaged range
     * recovery found (byte position, chunk bytes = its length, no records).
     */
    public static final int SLOT_FETCH_CHUNK = 1;

    public static final int SLOT_DAMAGED = 2;
    public static final int HEADER_BYTES = 4096;
    public static final int RING_HEADER_BYTES = 256;
    public static final int DESCRIPTOR_BYTES = 128;
    public static final int CHUNK_MAP_ENTRY_BYTES = 40;
    public static final int CACHE_LINE = 64;
    public static final int PAGE = 4096;
    public static final int BUFFER_ALIGNMENT = 64;
    public static final int MAX_SLOT_BYTES = 1 << 30;

    /**
     * Geometry bounds of a push subscription: the broker refuses a PushSubscribe outside them with
     * INVALID_ARGUMENT. Slot bytes are also a multiple of {@link #BUFFER_ALIGNMENT}. {@link
     * #MAX_SLOT_BYTES} is the layout's own, wider limit.
     */
    public static final int MIN_SLOTS_PER_RING = 2;

    public static final int MAX_SLOTS_PER_RING = 1024;
    public static final int MIN_SLOT_BYTES = 64 << 10;
    public static final int MAX_PUSH_SLOT_BYTES = 64 << 20;
    public static final int MAX_RINGS = 1024;
    public static final long MAX_REGION_BYTES = 16L << 30;

    public static final int REGION_OPEN = 1;
    public static final int REGION_CLOSED = 2;

    /**
     * Region slot formats ({@code slot_format}): {@code binary} slots carry the records' bytes,
     * {@code binary_view} slots 16-byte Arrow BinaryViews into the slot's data or segment files.
     */
    public static final int SLOT_FORMAT_BINARY = 0;

    public static final int SLOT_FORMAT_BINARY_VIEW = 1;

    /** A BinaryView: int32 length, then inline bytes or (prefix, buffer index, offset). */
    public static final int VIEW_BYTES = 16;

    /** A view holds a record of at most this many bytes inline. */
    public static final int VIEW_INLINE_BYTES = 12;

    public static final int BUFFER_TABLE_ENTRY_BYTES = 16;
    public static final int SEGMENT_FILE_PREFIX_BYTES = 64;

    public static final int RING_FREE = 0;
    public static final int RING_ACTIVE = 1;
    public static final int RING_RECLAIMED = 2;

    // ---- region header (ns_shm_region_header), from the start of the mapping ----
    public static final int REGION_MAGIC = 0;
    public static final int REGION_LAYOUT_VERSION = 8;
    public static final int REGION_HEADER_BYTES = 12;
    public static final int REGION_RING_COUNT = 16;
    public static final int REGION_SLOTS_PER_RING = 20;
    public static final int REGION_SLOT_BYTES = 24;
    public static final int REGION_DESCRIPTOR_BYTES = 28;
    public static final int REGION_RING_HEADER_BYTES = 32;
    public static final int REGION_PAYLOAD_OFFSET = 36;
    public static final int REGION_RING_STRIDE = 40;
    public static final int REGION_REGION_BYTES = 48;
    public static final int REGION_BROKER_EPOCH = 56;
    public static final int REGION_BROKER_HEARTBEAT_NS = 64;
    public static final int REGION_STATE = 72;
    public static final int REGION_RELEASE_DOORBELL = 128;
    public static final int REGION_BROKER_WAITING = 192;
    public static final int REGION_SLOT_FORMAT = 256;
    public static final int REGION_SEGMENT_FILE_PREFIX = 320;

    // ---- ring header (ns_shm_ring_header), from the ring's start ----
    public static final int RING_ID = 0;
    public static final int RING_SUBTASK_INDEX = 4;
    public static final int RING_STATE = 8;
    public static final int RING_GENERATION = 12;
    public static final int RING_BASE_POSITION = 16;
    public static final int RING_DATA_DOORBELL = 64;
    public static final int RING_PUBLISHED = 72;
    public static final int RING_CONSUMER_WAITING = 128;
    public static final int RING_RELEASED = 192;
    public static final int RING_CONSUMER_HEARTBEAT_NS = 200;

    // ---- slot descriptor (ns_shm_slot_descriptor), from the descriptor's start ----
    public static final int DESC_SEQUENCE = 0;
    public static final int DESC_ROW_COUNT = 8;
    public static final int DESC_CHUNK_COUNT = 12;
    public static final int DESC_VALIDITY_OFFSET = 16;
    public static final int DESC_VALIDITY_LENGTH = 20;
    public static final int DESC_OFFSETS_OFFSET = 24;
    public static final int DESC_OFFSETS_LENGTH = 28;
    public static final int DESC_DATA_OFFSET = 32;
    public static final int DESC_DATA_LENGTH = 36;
    public static final int DESC_CHUNK_MAP_OFFSET = 40;
    public static final int DESC_CHUNK_MAP_LENGTH = 44;
    public static final int DESC_FLAGS = 48;
    public static final int DESC_PAYLOAD_LENGTH = 52;
    public static final int DESC_BUFFERS_OFFSET = 56;
    public static final int DESC_BUFFERS_LENGTH = 60;

    // ---- buffer table entry (ns_shm_buffer_table_entry), from the entry's start ----
    public static final int BUFFER_SEGMENT_FILE = 0;
    public static final int BUFFER_FILE_BYTES = 8;

    // ---- chunk map entry (ns_shm_chunk_map_entry), from the entry's start ----
    public static final int CHUNK_STREAMLET = 0;
    public static final int CHUNK_RECORD_COUNT = 4;
    public static final int CHUNK_GROUP = 8;
    public static final int CHUNK_SEGMENT = 16;
    public static final int CHUNK_BYTE_POSITION = 24;
    public static final int CHUNK_CHUNK_BYTES = 28;
    public static final int CHUNK_FIRST_TIMESTAMP_MS = 32;

    // ---- geometry (ns_shm_payload_offset, ns_shm_ring_stride, ns_shm_region_bytes) ----

    /** {@code ns_shm_round_up}. */
    public static long roundUp(long value, long alignment) {
        return (value + alignment - 1) / alignment * alignment;
    }

    /** Offset of slot 0's payload from the start of its ring. */
    public static long payloadOffset(int slotsPerRing) {
        return roundUp(RING_HEADER_BYTES + (long) slotsPerRing * DESCRIPTOR_BYTES, PAGE);
    }

    /** Bytes from one ring's start to the next one's. */
    public static long ringStride(int slotsPerRing, int slotBytes) {
        return roundUp(payloadOffset(slotsPerRing) + (long) slotsPerRing * slotBytes, PAGE);
    }

    /** The size of a whole region. */
    public static long regionBytes(int ringCount, int slotsPerRing, int slotBytes) {
        return HEADER_BYTES + (long) ringCount * ringStride(slotsPerRing, slotBytes);
    }
}
