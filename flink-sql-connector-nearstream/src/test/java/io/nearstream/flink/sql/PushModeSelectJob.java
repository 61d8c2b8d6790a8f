package io.nearstream.flink.sql;

import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

/**
 * The program SqlConnectorJarPushQueryITCase runs in a JVM of its own, on Flink's jars and the
 * shaded connector jar: a SQL table over a Nearstream stream of JSON records, read to its current
 * end in push mode on a local MiniCluster, each row printed as {@code ROW<TAB>id<TAB>word}. It uses
 * Flink's Table API only, as a user's program or the SQL client would: the connector is found by
 * its identifier, through the jar's META-INF/services.
 *
 * <p>Arguments: the broker's host:port, the stream's name.
 */
public final class PushModeSelectJob {

    /** Each printed row starts with this; the rest of the output is Flink's. */
    static final String ROW_PREFIX = "ROW\t";

    private PushModeSelectJob() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            throw new IllegalArgumentException("usage: PushModeSelectJob BROKER STREAM");
        }
        TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        env.getConfig().set("parallelism.default", "2");
        // A failing job must end the program, not restart forever.
        env.getConfig().set("restart-strategy.type", "none");
        env.executeSql(
                "CREATE TABLE words (id BIGINT, word STRING) WITH ("
                        + "'connector' = 'nearstream', "
                        + "'brokers' = '"
                        + args[0]
                        + "', "
                        + "'stream' = '"
                        + args[1]
                        + "', "
                        + "'format' = 'json', "
                        + "'scan.read-mode' = 'push', "
                        + "'scan.bounded.mode' = 'latest')");
        try (CloseableIterator<Row> rows = env.executeSql("SELECT id, word FROM words").collect()) {
            while (rows.hasNext()) {
                Row row = rows.next();
                System.out.println(ROW_PREFIX + row.getField(0) + "\t" + row.getField(1));
            }
        }
    }
}
