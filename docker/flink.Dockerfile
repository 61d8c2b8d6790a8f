# Flink 2.2 with the Nearstream connector on its parent-first class path, and the benchmark jobs
# ready for `flink run`. Build from the repository root after staging the jars (docker/README.md):
#
#   mvn -B package -DskipTests && docker/stage-jars.sh
#   docker build -f docker/flink.Dockerfile -t nearstream-flink:dev .
#
# The tag names Scala and Java explicitly, as Flink's Docker docs recommend; the Flink version
# must match flink.version in the root pom.xml.
ARG FLINK_IMAGE=flink:2.2.1-scala_2.12-java17
FROM ${FLINK_IMAGE}

# Why lib/ and not the job jar (docs/flink-connector.md, "Where the jars go"): the JNI library and
# the push registry exist once per class loader, and Flink gives every job its own. In
# /opt/flink/lib the connector, the JNI bridge, Arrow and Netty are loaded once per JVM by the
# application class loader and shared by all jobs. (The compose file also lists these packages in
# classloader.parent-first-patterns.additional, so copies inside a fat job jar are ignored.)
#
# docker/stage-jars.sh puts there: flink-connector-nearstream, nearstream-client (the Java client
# the connector reads through), nearstream-jni-bridge and their runtime dependencies that Flink's
# lib/ lacks (Netty, Arrow and what Arrow needs).
COPY --chown=flink:flink docker/target/flink-lib/ /opt/flink/lib/

# The benchmark jobs (io.nearstream.benchmarks.jobs.JobRunner), submitted by the compose file's
# "submit" service.
COPY --chown=flink:flink docker/target/nearstream-benchmarks.jar /opt/nearstream/

# The entrypoint, user (flink, uid 9999) and ports of the base image stay as they are.
