package io.nearstream.jni;

import static io.nearstream.jni.ShmLayout.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ShmRegionTest {

    @Test
    void mapsAValidRegionAndExposesItsGeometry(@TempDir Path tmp) throws Exception {
        try (TestRegion broker = TestRegion.create(tmp.resolve("r"), 3, 4, 8192, 0);
                ShmRegion region = ShmRegion.map(broker.path)) {
            assertThat(region.ringCount()).isEqualTo(3);
            assertThat(region.slotsPerRing()).isEqualTo(4);
            assertThat(region.slotBytes()).isEqualTo(8192);
            assertThat(region.brokerEpoch()).isEqualTo(42);
            assertThat(region.regionState()).isEqualTo(REGION_OPEN);
            assertThat(region.length()).isEqualTo(regionBytes(3, 4, 8192));
            for (int i = 0; i < 3; i++) {
                SlotRing ring = region.ring(i).attach();
                assertThat(ring.index()).isEqualTo(i);
                assertThat(ring.subtaskIndex()).isEqualTo(i);
                assertThat(ring.generation()).isEqualTo(1);
                assertThat(region.ringAddress(i))
                        .isEqualTo(region.address() + HEADER_BYTES + i * ringStride(4, 8192));
                assertThat(ring.buffer().getInt(RING_ID)).isEqualTo(i);
            }
            region.checkBrokerAlive(TimeUnit.SECONDS.toNanos(60));
            broker.buf.putLong(REGION_BROKER_EPOCH, 43);
            assertThatThrownBy(() -> region.checkBrokerAlive(Long.MAX_VALUE))
                    .hasMessageContaining("epoch changed from 42 to 43");
        }
    }

    @Test
    void closeIsIdempotent(@TempDir Path tmp) throws Exception {
        try (TestRegion broker = TestRegion.create(tmp.resolve("r"), 1, 2, 64, 0)) {
            ShmRegion region = ShmRegion.map(broker.path);
            region.close();
            region.close();
            assertThat(region.isClosed()).isTrue();
            assertThat(region.retain()).isFalse();
        }
    }

    @Test
    void rejectsARegionWhoseMagicIsNotWrittenYet(@TempDir Path tmp) throws Exception {
        Path file = tmp.resolve("r");
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(regionBytes(1, 2, 64));
        }
        assertThatThrownBy(() -> ShmRegion.map(file))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("magic is 0x0000000000000000")
                .hasMessageContaining("not finished creating it");
    }

    @Test
    void rejectsWrongVersionAndGeometry(@TempDir Path tmp) throws Exception {
        // A newer layout, and layout 1, which had no marker slots (this reader would take a
        // marker for an empty batch and skip the chunk it stands for).
        for (int version : new int[] {LAYOUT_VERSION + 1, 1}) {
            try (TestRegion broker = TestRegion.create(tmp.resolve("v" + version), 1, 2, 64, 0)) {
                broker.buf.putInt(REGION_LAYOUT_VERSION, version);
                assertThatThrownBy(() -> ShmRegion.map(broker.path))
                        .hasMessageContaining("layout version " + version);
            }
        }
        try (TestRegion broker = TestRegion.create(tmp.resolve("g"), 1, 2, 64, 0)) {
            broker.buf.putLong(REGION_RING_STRIDE, 12345);
            assertThatThrownBy(() -> ShmRegion.map(broker.path))
                    .hasMessageContaining("ring_stride is 12345");
        }
        try (TestRegion broker = TestRegion.create(tmp.resolve("s"), 1, 2, 64, 0)) {
            broker.buf.putInt(REGION_SLOT_BYTES, 100);
            assertThatThrownBy(() -> ShmRegion.map(broker.path))
                    .hasMessageContaining("slot_bytes 100");
        }
    }

    @Test
    void attachFailsOnAnInactiveRing(@TempDir Path tmp) throws Exception {
        try (TestRegion broker = TestRegion.create(tmp.resolve("r"), 1, 2, 64, 0);
                ShmRegion region = ShmRegion.map(broker.path)) {
            broker.buf.putInt(broker.ring(0) + RING_STATE, RING_RECLAIMED);
            assertThatThrownBy(() -> region.ring(0).attach())
                    .hasMessageContaining("not active (state 2)");
        }
    }
}
