#!/usr/bin/env bash
# The long run of the replicated-transaction fault test
# (native/src/nearstream/broker/replicated_txn_test.cc,
# CommittedTransactionsSurviveFaultsAtAnyStepWholeAndOnce): ZooKeeper and three brokers on
# 127.0.0.1, a stream with replication 2 and then 3, one transactional writer running transaction after
# transaction (begin, 3 appends, prepare, commit, each retried through failovers) while faults
# at random steps kill the leader, kill the follower, move the leadership to a follower (the
# operator's `move`) or pause the leader past its ZooKeeper session; then every committed transaction must be read whole, once, in commit order. CI runs
# the same test with 3 faults per replication factor.
#
# Usage: scripts/replicated-txn-chaos.sh [FAULTS] [REPORT]
#   FAULTS  faults per replication factor, default 100
#   REPORT  the markdown report, default docs/results/replicated-txn-chaos.md
#   NEARSTREAM_TXN_CHAOS_SEED=N repeats a run's fault sequence.
#   NEARSTREAM_TXN_CHAOS_DURABILITY=async runs the stream with durability async (default sync).
#   NEARSTREAM_TXN_CHAOS_FILES_AWAITING_SYNC=N starts the brokers with --txn-files-awaiting-sync N
#     (with async, 0: every commit syncs and renames its own files before it answers).
# Needs the native build (native/build/default) and ZooKeeper's jars (zookeeper-server/target/lib,
# built with `mvn -pl zookeeper-server package` when missing).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
FAULTS="${1:-100}"
REPORT="${2:-$ROOT/docs/results/replicated-txn-chaos.md}"
TESTS="$ROOT/native/build/default/nearstream_tests"
SEED="${NEARSTREAM_TXN_CHAOS_SEED:-$(date +%s)}"
DURABILITY="${NEARSTREAM_TXN_CHAOS_DURABILITY:-sync}"

[[ -x "$TESTS" ]] || { echo "build the native module first (cmake --build --preset default)" >&2; exit 1; }
if [[ ! -d "$ROOT/zookeeper-server/target/lib" ]]; then
  (cd "$ROOT" && mvn -B -q -pl zookeeper-server package -DskipTests)
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
started="$(date -u +%Y-%m-%dT%H:%MZ)"
status=0
begin=$(date +%s)
NEARSTREAM_TXN_CHAOS_FAULTS="$FAULTS" NEARSTREAM_TXN_CHAOS_SEED="$SEED" \
  NEARSTREAM_TXN_CHAOS_DURABILITY="$DURABILITY" "$TESTS" --gtest_filter='*ReplicatedTxnFaultTest.CommittedTransactions*' >"$log" 2>&1 || status=$?
seconds=$(( $(date +%s) - begin ))
{
  echo "# Replicated transactions under faults"
  echo
  prefix="NEARSTREAM_TXN_CHAOS_SEED=$SEED"
  if [[ $DURABILITY != sync ]]; then prefix="NEARSTREAM_TXN_CHAOS_DURABILITY=$DURABILITY $prefix"; fi
  if [[ -n ${NEARSTREAM_TXN_CHAOS_FILES_AWAITING_SYNC:-} ]]; then
    prefix="NEARSTREAM_TXN_CHAOS_FILES_AWAITING_SYNC=$NEARSTREAM_TXN_CHAOS_FILES_AWAITING_SYNC $prefix"
  fi
  echo "\`$prefix scripts/replicated-txn-chaos.sh $FAULTS\` on $started"
  echo "($(nproc) cores, ${seconds} s): ZooKeeper and three brokers on 127.0.0.1 (ZooKeeper session"
  echo "2 s), a stream of 1 streamlet with durability $DURABILITY, once with replication 2 and once"
  echo "with 3; in each, one transactional writer running $(( 4 * FAULTS + 2 )) transactions (begin,"
  echo "3 appends, prepare, commit; each request sent to the current leader and retried through"
  echo "failovers) and $FAULTS faults at random steps of random transactions: the leader killed"
  echo "(SIGKILL), a follower killed, the leadership moved to a follower, or the leader paused"
  echo "(SIGSTOP) past its session; each is"
  echo "healed (restart, SIGCONT) and every replica is in sync before the next."
  echo
  echo "| run | result |"
  echo "|---|---|"
  for r in R2 R3; do
    line="$(grep -E "(OK|FAILED) \] .*/$r" "$log" | head -1)"
    echo "| replication ${r#R} | ${line:-not run} |"
  done
  echo
  if [[ $status -eq 0 ]]; then
    echo "Passed: every committed transaction was read whole, once and in commit order from the"
    echo "last leader, nothing else was read, and the transactional id's epoch survived every"
    echo "failover (the next TxnInit fenced at the next epoch)."
  else
    echo "FAILED (exit $status):"
    echo
    echo '```'
    grep -A8 "Failure$" "$log" | grep -v "ZOO_" | head -60
    echo '```'
  fi
} >"$REPORT"
cat "$REPORT"
exit "$status"
