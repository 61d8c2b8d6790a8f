#!/usr/bin/env bash
# Quick start: a real Flink job against a real broker, on this machine, in one command.
#
#   1. builds the project if the broker binaries or the benchmarks jar are missing
#      (mvn -B -q package -DskipTests -DskipSanitizers: a few minutes the first time);
#   2. starts nearstreamd on 127.0.0.1 (a free port, a temporary data directory, push regions in
#      a directory of their own under /dev/shm);
#   3. fetches the Shakespeare corpus (scripts/fetch-corpus.sh; cached in ~/.cache/nearstream);
#   4. produces it into a 4-streamlet stream (CorpusProducer, 2 KiB text records);
#   5. runs the streaming word count job with the PUSH source (the broker fills shared-memory Arrow
#      slots) on a local Flink MiniCluster, parallelism 2, reading the stream to its tail;
#   6. prints the 10 most frequent words and the throughput, and checks every word's count
#      against an independent count (scripts/wordcount_reference.py);
#   7. stops everything and removes what it made (also on failure or Ctrl-C).
#
# Environment: QUICKSTART_REPEAT (corpus copies to produce, default 1), QUICKSTART_MODE (push or
# pull, default push), QUICKSTART_PARALLELISM (default 2).
# Needs Java 17, Maven, python3 with pip, and the native toolchain the README lists.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/native/build/default"
JAR="$ROOT/benchmarks/target/benchmarks.jar"
STREAM=quickstart
REPEAT="${QUICKSTART_REPEAT:-1}"
MODE="${QUICKSTART_MODE:-push}"
PARALLELISM="${QUICKSTART_PARALLELISM:-2}"

work="$(mktemp -d -t nearstream-quickstart.XXXXXX)"
push_dir=""
pids=()
cleanup() {
  # The broker last: a job still running hands its push slots back to it first.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    pid="${pids[i]}"
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      # A clean stop takes milliseconds; a process that hangs must not hang the script.
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  [[ -n "$push_dir" ]] && rm -rf "$push_dir"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
  echo "quickstart: $*" >&2
  exit 1
}

for tool in java python3; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (see the README's requirements)"
done
# pip fetches the corpus; Debian's python3 comes without it.
if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "Installing python3-pip with apt-get (it fetches the corpus)..."
  sudo=()
  [[ $(id -u) == 0 ]] || sudo=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends \
    python3-pip >"$work/apt.log" 2>&1 ||
    fail "could not install python3-pip (log: $work/apt.log); install it and run again"
fi


if [[ ! -x "$BIN/nearstreamd" || ! -f "$JAR" ]]; then
  echo "Building (first run: a few minutes; log in $work/build.log)..."
  if ! (cd "$ROOT" && mvn -B -q package -DskipTests -DskipSanitizers) >"$work/build.log" 2>&1; then
    tail -50 "$work/build.log" >&2
    fail "the build failed (log tail above)"
  fi
fi

# Port 0: the kernel picks a free port and the broker writes it to the port file once listening.
push_dir="$(mktemp -d /dev/shm/nearstream-quickstart.XXXXXX)"
"$BIN/nearstreamd" --listen 127.0.0.1:0 --data-dir "$work/data" --workers 2 \
  --push-dir "$push_dir" --port-file "$work/port" >"$work/broker.log" 2>&1 &
pids+=($!)
broker_pid=$!
for _ in $(seq 100); do
  [[ -s "$work/port" ]] && break
  kill -0 "$broker_pid" 2>/dev/null || { cat "$work/broker.log" >&2; fail "nearstreamd exited at start"; }
  sleep 0.1
done
[[ -s "$work/port" ]] || { cat "$work/broker.log" >&2; fail "nearstreamd did not report its port within 10 s"; }
broker="127.0.0.1:$(cat "$work/port")"
echo "nearstreamd (pid $broker_pid) listening on $broker"

corpus="$("$ROOT/scripts/fetch-corpus.sh" | tail -1)"
echo "corpus: $corpus ($(wc -c <"$corpus") bytes) x $REPEAT"

# An array, not a function: a backgrounded function would be a subshell, and $! its pid.
# (Arrow, under the push reader's slot view, needs java.nio opened on Java 17+.)
java_run=(java -Xmx2g -XX:+UseParallelGC
  --add-opens=java.base/java.nio=org.apache.arrow.memory.core,ALL-UNNAMED -cp "$JAR")

"${java_run[@]}" io.nearstream.benchmarks.workloads.CorpusProducer --broker "$broker" --stream "$STREAM" \
  --streamlets 4 --corpus "$corpus" --repeat "$REPEAT" >"$work/produced.json" 2>"$work/producer.log" ||
  { cat "$work/producer.log" >&2; fail "producing the corpus failed"; }
records="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["records"])' "$work/produced.json")"
echo "produced $records text records into stream '$STREAM' (4 streamlets)"

echo "running the word count job: $MODE source, parallelism $PARALLELISM, Flink MiniCluster..."
"${java_run[@]}" io.nearstream.benchmarks.jobs.JobRunner --workload wordcount --mode "$MODE" \
  --broker "$broker" --stream "$STREAM" --parallelism "$PARALLELISM" --records "$records" \
  --output-dir "$work/counts" >"$work/job.out" 2>"$work/job.log" &
pids+=($!)
if ! wait $!; then
  tail -40 "$work/job.log" >&2
  cat "$work/job.out" >&2
  fail "the word count job failed (log tail above)"
fi

# Each word's largest running count is its total; merge the subtasks' files.
LC_ALL=C awk -F'\t' '{ if ($2 > c[$1]) c[$1] = $2 } END { for (w in c) print w "\t" c[w] }' \
  "$work"/counts/word-counts-*.tsv | LC_ALL=C sort >"$work/job-counts.tsv"
python3 "$ROOT/scripts/wordcount_reference.py" "$corpus" --repeat "$REPEAT" \
  --out "$work/reference.tsv"

echo "--- top 10 words:"
# Sorted into a file first: head closing the pipe early would fail the pipeline (pipefail).
LC_ALL=C sort -t$'\t' -k2,2nr -k1,1 "$work/job-counts.tsv" >"$work/by-count.tsv"
awk -F'\t' 'NR <= 10 { printf "%10d  %s\n", $2, $1 }' "$work/by-count.tsv"
echo "---"
python3 - "$work/job.out" <<'EOF'
import json, sys
m = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"workload"')][-1]
print(f"{m['records']:,} records, {m['output']:,} words in {m['seconds']:.2f} s: "
      f"{m['records_per_s']:,.0f} records/s, {m['output'] / m['seconds']:,.0f} words/s "
      f"({m['mode']}, parallelism {m['parallelism']}; job CPU {m['job_cpu_s']:.1f} s, "
      f"broker CPU {m['broker_cpu_s']:.2f} s)")
EOF

if ! cmp -s "$work/job-counts.tsv" "$work/reference.tsv"; then
  diff "$work/reference.tsv" "$work/job-counts.tsv" | head -20 >&2
  fail "the job's word counts differ from scripts/wordcount_reference.py (first lines above)"
fi
echo "OK: all $(wc -l <"$work/reference.tsv") distinct words counted as the reference counts them;" \
  "stopping the broker."
