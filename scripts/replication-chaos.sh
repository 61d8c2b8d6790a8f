#!/usr/bin/env bash
# The long run of the replication chaos test (native/src/nearstream/broker/replication_chaos_test.cc):
# ZooKeeper and three brokers on 127.0.0.1, a replicated stream with one idempotent producer and
# two readers per streamlet (one of its leader, one of an in-sync follower's copy: follower
# reads), and a fault loop of kill -9 of leaders and followers (a follower also
# while ZooKeeper is paused with SIGSTOP for under a second), SIGSTOP/SIGCONT
# of leaders past their ZooKeeper session, clean restarts, drains of a broker (replication 2),
# leaders moved to a follower (replication 3) and a leader's disk failing for a while (full, or
# fsyncs failing); then the checker counts lost acknowledged writes, duplicates, reordering and reads of data a failover took back. CI runs
# the same test with a few faults per replication factor.
#
# Usage: scripts/replication-chaos.sh [FAULTS_PER_FACTOR] [REPORT]
#   FAULTS_PER_FACTOR  faults per replication factor (2 and 3), default 100
#   REPORT             the markdown report, default docs/results/replication-chaos.md
#   NEARSTREAM_CHAOS_SEED=N repeats a run's fault sequence.
#   NEARSTREAM_CHAOS_DURABILITY=async runs the stream with durability async (default sync).
# Needs the native build (native/build/default) and ZooKeeper's jars (zookeeper-server/target/lib,
# built with `mvn -pl zookeeper-server package` when missing).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
FAULTS="${1:-100}"
REPORT="${2:-$ROOT/docs/results/replication-chaos.md}"
TESTS="$ROOT/native/build/default/nearstream_tests"

[[ -x "$TESTS" ]] || { echo "build the native module first (cmake --build --preset default)" >&2; exit 1; }
if [[ ! -d "$ROOT/zookeeper-server/target/lib" ]]; then
  (cd "$ROOT" && mvn -B -q -pl zookeeper-server package -DskipTests)
fi

lines="$(mktemp)"
trap 'rm -f "$lines"' EXIT
started="$(date -u +%Y-%m-%dT%H:%MZ)"
durability="${NEARSTREAM_CHAOS_DURABILITY:-sync}"
status=0
NEARSTREAM_CHAOS_FAULTS="$FAULTS" NEARSTREAM_CHAOS_REPORT="$lines" NEARSTREAM_CHAOS_DURABILITY="$durability" \
  "$TESTS" --gtest_filter='*ReplicationChaos*' --gtest_brief=1 >"$lines.log" 2>&1 || status=$?
{
  echo "# Replication chaos run"
  echo
  echo "\`NEARSTREAM_CHAOS_DURABILITY=$durability scripts/replication-chaos.sh $FAULTS\` on $started ($(nproc) cores): ZooKeeper and three"
  echo "brokers on 127.0.0.1 (ZooKeeper session 2 s), stream of 3 streamlets, durability $durability,"
  echo "64 KiB segments, one idempotent producer (chunks of 10 numbered records) and two readers per"
  echo "streamlet: one of its leader, one of an in-sync follower's copy (follower reads, falling back"
  echo "to the leader while no follower serves it). Faults one at a time, 0.3–1 s apart; a killed or stopped broker is restarted"
  echo "before the next. Drains and moves are the operator's \`nearstream drain\` and \`move\`, run"
  echo "while the producers write; ZooKeeper is paused (SIGSTOP, 0.4–0.8 s) while a follower is"
  echo "killed; a leader's disk fails for 1–3 s (full, or fsyncs failing: a library preloaded into"
  echo "each broker, native/src/nearstream/testing/disk_faults.h). The checker reads every streamlet"
  echo "to its tail afterwards."
  echo
  echo "| run | result |"
  echo "|---|---|"
  while IFS= read -r line; do
    echo "| ${line%%:*} | ${line#*: } |"
  done <"$lines"
  echo
  if [[ $status -eq 0 ]]; then
    echo "Every check passed: no acknowledged record lost, none stored twice, no producer's records"
    echo "out of order, nothing read during the faults that the final log does not hold in the same place."
  else
    echo "The test FAILED (exit $status); its failures:"
    echo
    echo '```'
    grep -A8 "Failure$" "$lines.log" | grep -v "ZOO_" | head -60
    echo '```'
  fi
} >"$REPORT"
rm -f "$lines.log"
echo "report: $REPORT"
exit "$status"
