package io.nearstream.flink.sql;

import java.nio.file.Files;
import java.nio.file.Path;

/** Where the module's main artifact, the shaded SQL connector jar, lies for the ITCases. */
final class ShadedConnectorJar {

    /** Set by the pom: target/flink-sql-connector-nearstream-VERSION.jar. */
    static final String PROPERTY = "nearstream.sql.jar";

    private ShadedConnectorJar() {}

    /** The jar the package phase built; failsafe runs after it, an IDE run may come before. */
    static Path path() {
        String property = System.getProperty(PROPERTY);
        if (property == null) {
            throw new IllegalStateException(
                    "-D"
                            + PROPERTY
                            + " is not set: run the ITCases through Maven (mvn verify -pl"
                            + " flink-sql-connector-nearstream)");
        }
        Path jar = Path.of(property);
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException(
                    jar
                            + " does not exist: build it first (mvn package -pl"
                            + " flink-sql-connector-nearstream)");
        }
        return jar;
    }
}
