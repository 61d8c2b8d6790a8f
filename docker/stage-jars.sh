#!/usr/bin/env bash
# Stages the jars docker/flink.Dockerfile copies, under docker/target/:
#   flink-lib/                  flink-connector-nearstream, nearstream-client, nearstream-jni-bridge
#                               and their runtime dependencies that Flink's lib/ lacks (Netty,
#                               Arrow, ...)
#   nearstream-benchmarks.jar   the benchmark jobs (benchmarks/target/benchmarks.jar)
# Run it after `mvn -B package -DskipTests` from the repository root; arguments go to Maven
# (e.g. -o to stay offline).
#
# The connector is not shaded into one jar, so its dependency closure comes from Maven
# (copy-dependencies, runtime scope: Flink itself is "provided" and stays out; the client,
# nearstream-client, is one of those dependencies). That needs the reactor to package the modules
# the connector depends on (-am: jni-bridge, nearstream-client, ...) in the same run, hence
# "package" below (incremental, quick).
set -euo pipefail

cd "$(dirname "$0")/.."
out=docker/target

connector=(flink-connector/target/flink-connector-nearstream-*.jar)
benchmarks=benchmarks/target/benchmarks.jar
if [[ ! -f ${connector[0]} || ! -f $benchmarks ]]; then
  echo "stage-jars: ${connector[0]} or $benchmarks is missing." >&2
  echo "  Build the jars first: mvn -B package -DskipTests" >&2
  exit 1
fi

rm -rf flink-connector/target/dependency jni-bridge/target/dependency \
  nearstream-client/target/dependency broker-process/target/dependency "$out"
# slf4j-api is part of Flink's lib/ already; a second copy would only warn about bindings.
mvn -B -q -DskipTests -pl flink-connector -am package dependency:copy-dependencies \
  -DincludeScope=runtime -DexcludeGroupIds=org.slf4j "$@"

mkdir -p "$out/flink-lib"
cp flink-connector/target/flink-connector-nearstream-*.jar flink-connector/target/dependency/*.jar \
  "$out/flink-lib/"
cp "$benchmarks" "$out/nearstream-benchmarks.jar"

for needed in flink-connector-nearstream nearstream-client nearstream-jni-bridge arrow-vector \
  netty-transport; do
  if ! compgen -G "$out/flink-lib/$needed-*.jar" >/dev/null; then
    echo "stage-jars: $needed is missing from $out/flink-lib" >&2
    exit 1
  fi
done
if compgen -G "$out/flink-lib/flink-*.jar" | grep -v flink-connector-nearstream; then
  echo "stage-jars: Flink's own jars must not be copied into its lib/ (see above)" >&2
  exit 1
fi
echo "stage-jars: $(ls "$out/flink-lib" | wc -l) jars in $out/flink-lib, benchmarks in $out/"
ls "$out/flink-lib"
