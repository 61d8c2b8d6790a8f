package io.nearstream.benchmarks.sql;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A {@code CREATE TEMPORARY TABLE} statement: a name, its columns as SQL text, and the {@code WITH}
 * options in the order given. Temporary, so each job's TableEnvironment holds its own tables and
 * nothing outlives it.
 *
 * <pre>{@code
 * String ddl = TableDdl.nearstream("lines", "line STRING", "127.0.0.1:7420", "text")
 *         .with("format", "raw")
 *         .with("scan.bounded.mode", "latest")
 *         .toString();
 * }</pre>
 */
public final class TableDdl {

    private final String name;
    private final String columns;
    private final Map<String, String> options = new LinkedHashMap<>();

    private TableDdl(String name, String columns) {
        this.name = name;
        this.columns = columns;
    }

    /** A table of the {@code nearstream} connector over {@code stream} at {@code broker}. */
    public static TableDdl nearstream(String name, String columns, String broker, String stream) {
        return new TableDdl(name, columns)
                .with("connector", "nearstream")
                .with("brokers", broker)
                .with("stream", stream);
    }

    /** A table of Flink's {@code kafka} connector over {@code topic}. */
    public static TableDdl kafka(
            String name, String columns, String bootstrapServers, String topic) {
        return new TableDdl(name, columns)
                .with("connector", "kafka")
                .with("properties.bootstrap.servers", bootstrapServers)
                .with("topic", topic);
    }

    /** Adds (or replaces) an option. */
    public TableDdl with(String key, String value) {
        options.put(key, value);
        return this;
    }

    @Override
    public String toString() {
        StringBuilder b =
                new StringBuilder("CREATE TEMPORARY TABLE ")
                        .append(name)
                        .append(" (\n  ")
                        .append(columns)
                        .append("\n) WITH (");
        String separator = "\n  ";
        for (Map.Entry<String, String> o : options.entrySet()) {
            b.append(separator)
                    .append(literal(o.getKey()))
                    .append(" = ")
                    .append(literal(o.getValue()));
            separator = ",\n  ";
        }
        return b.append("\n)").toString();
    }

    /** A SQL string literal: quotes doubled. */
    static String literal(String text) {
        return "'" + text.replace("'", "''") + "'";
    }
}
