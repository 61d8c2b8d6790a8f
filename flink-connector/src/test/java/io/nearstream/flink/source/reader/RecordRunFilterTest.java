package io.nearstream.flink.source.reader;

import static org.assertj.core.api.Assertions.assertThat;

import io.nearstream.client.ChunkBuilder;
import io.nearstream.client.ChunkCursor;
import io.nearstream.client.Position;
import io.nearstream.client.RecordFilter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A fetched chunk under a record filter: only the records that pass become a run, and indexes (the
 * run's first index, records to skip on resume) count passing records, as a push slot's rows do, so
 * a restore resumes at the same record in either mode.
 */
class RecordRunFilterTest {

    private static final RecordFilter VIEWS = RecordFilter.jsonFieldIn("t", "view");
    private static final Position AT = new Position(1, 2, 64);

    private static ChunkCursor chunk(String... types) {
        ChunkBuilder b = new ChunkBuilder();
        for (int i = 0; i < types.length; i++) {
            b.add(
                    ("{\"i\":" + i + ",\"t\":\"" + types[i] + "\"}")
                            .getBytes(StandardCharsets.UTF_8));
        }
        ChunkCursor cursor = new ChunkCursor();
        cursor.reset(AT, ByteBuffer.wrap(b.build(0, 0, 1000)));
        assertThat(cursor.nextChunk()).isTrue();
        return cursor;
    }

    private static List<String> values(RecordRun run) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < run.size(); i++) {
            out.add(new String(run.value(i), StandardCharsets.UTF_8));
        }
        return out;
    }

    @Test
    void keepsThePassingRecordsIndexedAmongThemselves() {
        RecordRun run =
                RecordRun.copyChunk(chunk("view", "click", "view", "buy", "view"), 3, 0, VIEWS);
        assertThat(values(run))
                .containsExactly(
                        "{\"i\":0,\"t\":\"view\"}",
                        "{\"i\":2,\"t\":\"view\"}",
                        "{\"i\":4,\"t\":\"view\"}");
        assertThat(run.firstIndex()).isZero();
        assertThat(run.chunk()).isEqualTo(AT);
        assertThat(run.record(2).index()).isEqualTo(2);
    }

    @Test
    void aResumeSkipsPassingRecords() {
        // Two of the chunk's views were emitted before the checkpoint.
        RecordRun run =
                RecordRun.copyChunk(chunk("view", "click", "view", "buy", "view"), 3, 2, VIEWS);
        assertThat(values(run)).containsExactly("{\"i\":4,\"t\":\"view\"}");
        assertThat(run.firstIndex()).isEqualTo(2);
        assertThat(RecordRun.copyChunk(chunk("view", "click", "view"), 3, 2, VIEWS)).isNull();
    }

    @Test
    void aChunkWithoutAPassingRecordMakesNoRun() {
        assertThat(RecordRun.copyChunk(chunk("click", "buy"), 3, 0, VIEWS)).isNull();
    }

    @Test
    void keptRecordsAreCopiedWholeWhateverTheirLengths() {
        RecordFilter views = RecordFilter.bytesContain("view".getBytes(StandardCharsets.UTF_8));
        String longView = "view" + "x".repeat(5000);
        ChunkBuilder b = new ChunkBuilder();
        for (String r : List.of("", "view", "click" + "y".repeat(3000), longView, "", "view!")) {
            b.add(r.getBytes(StandardCharsets.UTF_8));
        }
        ChunkCursor cursor = new ChunkCursor();
        cursor.reset(AT, ByteBuffer.wrap(b.build(0, 0, 1000)));
        assertThat(cursor.nextChunk()).isTrue();

        RecordRun run = RecordRun.copyChunk(cursor, 3, 0, views);
        assertThat(values(run)).containsExactly("view", longView, "view!");
        assertThat(cursor.nextRecord()).isFalse(); // the cursor is left at the chunk's end
    }

    @Test
    void withoutAFilterEveryRecordIsKept() {
        RecordRun run =
                RecordRun.copyChunk(chunk("view", "click", "buy"), 3, 1, RecordFilter.none());
        assertThat(values(run)).hasSize(2);
        assertThat(run.firstIndex()).isEqualTo(1);
    }
}
