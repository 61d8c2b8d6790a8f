package io.nearstream.flink.table;

import io.nearstream.client.NearstreamRecord;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import java.io.IOException;
import javax.annotation.Nullable;
import org.apache.flink.annotation.Internal;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.utils.JoinedRowData;
import org.apache.flink.table.data.utils.ProjectedRowData;
import org.apache.flink.util.Collector;

/**
 * A {@code nearstream} table's records as rows: the value format decodes the physical columns (only
 * the projected ones when the format can; otherwise all of them, then projected here), and the
 * requested metadata columns follow. A record the format cannot decode fails the job with its
 * stream, streamlet and position; a format told to ignore parse errors emits nothing for it
 * instead, and so does this.
 */
@Internal
final class RowDataRecordDeserializer implements NearstreamRecordDeserializationSchema<RowData> {

    private static final long serialVersionUID = 1L;

    private final String stream;
    private final String format;
    private final DeserializationSchema<RowData> valueDecoder;
    @Nullable private final int[] projectionAfterDecoding;
    private final ReadableMetadata[] metadata;
    private final TypeInformation<RowData> producedType;

    private transient RowCollector rows;

    RowDataRecordDeserializer(
            String stream,
            String format,
            DeserializationSchema<RowData> valueDecoder,
            @Nullable int[] projectionAfterDecoding,
            ReadableMetadata[] metadata,
            TypeInformation<RowData> producedType) {
        this.stream = stream;
        this.format = format;
        this.valueDecoder = valueDecoder;
        this.projectionAfterDecoding = projectionAfterDecoding;
        this.metadata = metadata;
        this.producedType = producedType;
    }

    @Override
    public void open(DeserializationSchema.InitializationContext context) throws Exception {
        valueDecoder.open(context);
        rows = new RowCollector();
    }

    @Override
    public void deserialize(NearstreamRecord record, Collector<RowData> out) throws IOException {
        rows.record = record;
        rows.out = out;
        try {
            valueDecoder.deserialize(record.value(), rows);
        } catch (IOException | RuntimeException e) {
            throw new IOException(
                    "Cannot decode the record of stream '"
                            + stream
                            + "' at streamlet "
                            + record.streamlet()
                            + ", position "
                            + record.chunk()
                            + ", index "
                            + record.index()
                            + " with format '"
                            + format
                            + "' (set the format's ignore-parse-errors option to skip such"
                            + " records): "
                            + e.getMessage(),
                    e);
        } finally {
            rows.record = null;
            rows.out = null;
        }
    }

    @Override
    public TypeInformation<RowData> getProducedType() {
        return producedType;
    }

    /** Adds projection and metadata to what the format emits for the current record. */
    private final class RowCollector implements Collector<RowData> {
        NearstreamRecord record;
        Collector<RowData> out;

        @Override
        public void collect(RowData physical) {
            RowData row = physical;
            if (projectionAfterDecoding != null) {
                row = ProjectedRowData.from(projectionAfterDecoding).replaceRow(physical);
            }
            if (metadata.length > 0) {
                GenericRowData meta = new GenericRowData(physical.getRowKind(), metadata.length);
                for (int i = 0; i < metadata.length; i++) {
                    meta.setField(i, metadata[i].read(record));
                }
                row = new JoinedRowData(physical.getRowKind(), row, meta);
            }
            out.collect(row);
        }

        @Override
        public void close() {}
    }
}
