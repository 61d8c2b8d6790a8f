package io.nearstream.benchmarks.jobs;

import io.nearstream.client.RecordFilter;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * {@code --source-filter}: a record filter the Nearstream source applies (in the broker's push
 * thread in push mode, in the reader in pull mode), so the workload sees only the records that
 * pass. Two forms: {@code FIELD=V1,V2,...} (the JSON top-level member {@code FIELD} is a string
 * equal to one of the values) and {@code contains:TEXT} (the record's bytes contain TEXT's UTF-8
 * bytes). YSB's {@code event_type=view} takes its filter out of the job.
 */
public final class SourceFilterFlag {

    public static final String NAME = "source-filter";

    private SourceFilterFlag() {}

    /** The filter {@code spec} names; {@link RecordFilter#none()} for an empty spec. */
    public static RecordFilter parse(String spec) {
        if (spec.isEmpty()) {
            return RecordFilter.none();
        }
        if (spec.startsWith("contains:")) {
            return RecordFilter.bytesContain(
                    spec.substring("contains:".length()).getBytes(StandardCharsets.UTF_8));
        }
        int eq = spec.indexOf('=');
        if (eq <= 0) {
            throw new IllegalArgumentException(
                    "--" + NAME + " takes FIELD=V1,V2,... or contains:TEXT, got '" + spec + "'");
        }
        return RecordFilter.jsonFieldIn(
                spec.substring(0, eq), Arrays.asList(spec.substring(eq + 1).split(",", -1)));
    }
}
