package io.nearstream.flinkcluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The job jars of the example project (examples/wordcount-job) and how its job is called. */
final class ExampleJobs {

    static final String WORD_COUNT = "io.nearstream.examples.WordCountJob";

    private ExampleJobs() {}

    /** The example's job jar with this classifier ({@code fat} or {@code thin}), as built. */
    static Path jar(String classifier) throws Exception {
        Path target =
                Repository.buildOutput(
                        "nearstream.example.jobs",
                        "examples/wordcount-job/target",
                        "build the example first: mvn -pl examples/wordcount-job -am package");
        String version = System.getProperty("nearstream.version");
        String suffix = "-" + classifier + ".jar";
        try (var files = Files.list(target)) {
            List<Path> jars =
                    files.filter(
                                    f -> {
                                        String n = f.getFileName().toString();
                                        return n.startsWith("wordcount-job-")
                                                && n.endsWith(suffix)
                                                && (version == null || n.contains(version));
                                    })
                            .toList();
            assertThat(jars).as("the example's " + classifier + " job jar in " + target).hasSize(1);
            return jars.get(0);
        }
    }

    /** The word count job's arguments. */
    static List<String> wordCountArgs(
            String broker,
            String input,
            String output,
            String mode,
            int parallelism,
            String txnPrefix) {
        List<String> args = new ArrayList<>();
        args.addAll(List.of("--broker", broker, "--input", input, "--output", output));
        args.addAll(List.of("--mode", mode, "--checkpoint-interval-ms", "500"));
        args.addAll(List.of("--txn-prefix", txnPrefix));
        args.addAll(List.of("--parallelism", Integer.toString(parallelism)));
        return args;
    }
}
