package io.nearstream.client;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** The records of a chunk as the tests sent them: UTF-8 strings. */
final class ChunkRecords {

    private ChunkRecords() {}

    /** The records of {@code chunk} (header and CRCs validated first). */
    static List<String> of(byte[] chunk) {
        int count = Chunks.validate(chunk).recordCount();
        ByteBuffer b = ByteBuffer.wrap(chunk).order(ByteOrder.LITTLE_ENDIAN);
        b.position(Chunks.HEADER_BYTES);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            byte[] r = new byte[b.getInt()];
            b.get(r);
            out.add(new String(r, StandardCharsets.UTF_8));
        }
        return out;
    }
}
