package io.nearstream.flinkcluster;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs {@code scripts/flink-cluster.sh}, the one implementation of starting, stopping and
 * submitting to the session cluster, which users run by hand.
 */
final class ClusterScript {

    /** What one run printed: its stdout (the result, e.g. a job id) and stderr (the story). */
    record Result(String stdout, String stderr) {}

    private final Path script;
    private final Path workDir;

    /**
     * @param workDir where the outputs of the runs are kept (the cluster directory)
     */
    ClusterScript(Path workDir) {
        this.script = Repository.file("scripts/flink-cluster.sh");
        this.workDir = workDir;
    }

    /** Runs the script with {@code args}; fails with everything it printed unless it exits 0. */
    Result run(Duration timeout, List<String> args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(script.toString());
        command.addAll(args);
        Path out = Files.createTempFile(workDir, "script-", ".out");
        Path err = Files.createTempFile(workDir, "script-", ".err");
        try {
            ProcessBuilder builder =
                    new ProcessBuilder(command)
                            .redirectOutput(out.toFile())
                            .redirectError(err.toFile())
                            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
            mavenEnvironment(builder.environment());
            Process process = builder.start();
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                process.waitFor();
                throw new IOException(
                        describe(command)
                                + " did not finish in "
                                + timeout.toSeconds()
                                + " s; it printed:\n"
                                + read(out)
                                + read(err));
            }
            Result result = new Result(read(out), read(err));
            if (process.exitValue() != 0) {
                throw new IOException(
                        describe(command)
                                + " failed (exit "
                                + process.exitValue()
                                + "):\n"
                                + result.stdout()
                                + result.stderr());
            }
            return result;
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    /**
     * The script stages Flink's jars with Maven: the same Maven, local repository and offline mode
     * as the build that runs the tests, as the pom passes them on.
     */
    private static void mavenEnvironment(Map<String, String> env) {
        String home = System.getProperty("nearstream.maven.home");
        if (home != null && !home.isBlank() && Files.isExecutable(Path.of(home, "bin", "mvn"))) {
            env.put("MVN", Path.of(home, "bin", "mvn").toString());
        }
        List<String> args = new ArrayList<>();
        if ("offline=true".equals(System.getProperty("nearstream.maven.offline"))) {
            args.add("-o");
        }
        String repo = System.getProperty("nearstream.maven.repo.local");
        if (repo != null && !repo.isBlank() && !repo.contains(" ")) {
            args.add("-Dmaven.repo.local=" + repo);
        }
        env.put("FLINK_CLUSTER_MVN_ARGS", String.join(" ", args));
    }

    private static String describe(List<String> command) {
        return "scripts/flink-cluster.sh " + String.join(" ", command.subList(1, command.size()));
    }

    private static String read(Path file) throws IOException {
        return Files.readString(file, StandardCharsets.UTF_8);
    }
}
