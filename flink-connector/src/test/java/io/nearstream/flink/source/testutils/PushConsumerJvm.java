package io.nearstream.flink.source.testutils;

import io.nearstream.flink.source.NearstreamSource;
import io.nearstream.flink.source.ReadMode;
import io.nearstream.flink.source.reader.deserializer.NearstreamRecordDeserializationSchema;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * A consuming JVM for tests that kill it: {@link #main} runs an unbounded PUSH-mode job
 * (parallelism 2, local MiniCluster) on a stream and prints {@link #MARKER} once it has consumed
 * the given number of records; {@link #fork} starts it as a child process of the test JVM.
 *
 * <p>The child exits by itself when its standard input closes, so it cannot outlive a test JVM that
 * died without killing it.
 */
public final class PushConsumerJvm {

    /** Printed on a line of its own, followed by the count, once enough records were consumed. */
    public static final String MARKER = "NEARSTREAM-PUSH-CONSUMED";

    private static final AtomicLong CONSUMED = new AtomicLong();

    private PushConsumerJvm() {}

    /**
     * Starts the child JVM with the test class path; its stdout and stderr go to {@code log}, its
     * temporary files (Flink's, the extracted JNI library) under {@code tmpDir}.
     */
    public static Process fork(String broker, String stream, long markAfter, Path tmpDir, Path log)
            throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx768m");
        // Push mode uses Arrow, whose MemoryUtil reads java.nio.Buffer.address (as in the pom).
        cmd.add("--add-opens=java.base/java.nio=ALL-UNNAMED");
        cmd.add("-Djava.io.tmpdir=" + tmpDir);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(PushConsumerJvm.class.getName());
        cmd.add(broker);
        cmd.add(stream);
        cmd.add(Long.toString(markAfter));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectErrorStream(true);
        pb.redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        return pb.start(); // stdin stays a pipe held by this JVM: see exitWhenStdinCloses
    }

    /** Whether the child's log shows the marker. */
    public static boolean consumed(Path log) throws IOException {
        return Files.exists(log)
                && Files.readString(log, StandardCharsets.UTF_8).contains(MARKER + " ");
    }

    /** {@code broker stream markAfter}. */
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: PushConsumerJvm <host:port> <stream> <records-before-mark>");
            System.exit(2);
        }
        exitWhenStdinCloses();
        String broker = args[0];
        String stream = args[1];
        long markAfter = Long.parseLong(args[2]);

        NearstreamSource<String> source =
                NearstreamSource.<String>builder()
                        .setBrokers(broker)
                        .setStream(stream)
                        .setReadMode(ReadMode.PUSH)
                        .setPushSlots(4, 64 * 1024)
                        .setDeserializer(NearstreamRecordDeserializationSchema.utf8())
                        .build();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "nearstream-push")
                .map(new Count(markAfter))
                .sinkTo(new DiscardingSink<>());
        env.execute("push consumer to be killed"); // unbounded: runs until killed
    }

    /** The parent holds our stdin; EOF means it is gone, and so must we be. */
    private static void exitWhenStdinCloses() {
        Thread t =
                new Thread(
                        () -> {
                            try (InputStream in = System.in) {
                                while (in.read() >= 0) {
                                    // nothing is sent; only EOF matters
                                }
                            } catch (IOException ignored) {
                                // treated as EOF
                            }
                            Runtime.getRuntime().halt(3);
                        },
                        "parent-watch");
        t.setDaemon(true);
        t.start();
    }

    /** Counts the records of both subtasks (same JVM) and prints the marker once. */
    private static final class Count implements MapFunction<String, String> {
        private final long markAfter;

        Count(long markAfter) {
            this.markAfter = markAfter;
        }

        @Override
        public String map(String value) {
            if (CONSUMED.incrementAndGet() == markAfter) {
                System.out.println(MARKER + " " + markAfter);
                System.out.flush();
            }
            return value;
        }
    }
}
