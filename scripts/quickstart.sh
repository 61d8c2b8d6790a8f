#!/usr/bin/env bash
# Quick start: builds the native code if needed, starts nearstreamd on 127.0.0.1 (a free port, a
# temporary data directory), creates a stream, produces a few lines, consumes them back and
# prints them, then stops the broker and removes everything it made.
# (A later version runs a Flink job against the broker instead of the CLI consumer.)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/native/build/default"
STREAM=quickstart

work="$(mktemp -d -t nearstream-quickstart.XXXXXX)"
broker_pid=""
cleanup() {
  if [[ -n "$broker_pid" ]] && kill -0 "$broker_pid" 2>/dev/null; then
    kill -TERM "$broker_pid" 2>/dev/null || true
    # A clean stop takes milliseconds; a broker that hangs must not hang the script.
    for _ in $(seq 50); do kill -0 "$broker_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$broker_pid" 2>/dev/null || true
    wait "$broker_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Incremental: only the first run compiles much; only the two binaries used here are built.
[[ -f "$BIN/build.ninja" ]] || echo "Building nearstreamd and nearstream (first run: a minute or two)..."
if ! (cd "$ROOT/native" &&
  { [[ -f "$BIN/build.ninja" ]] || cmake --preset default; } &&
  cmake --build --preset default --parallel 2 --target nearstreamd nearstream) \
  >"$work/build.log" 2>&1; then
  cat "$work/build.log" >&2
  echo "quickstart: the native build failed (log above)" >&2
  exit 1
fi

# Port 0: the kernel picks a free port and the broker writes it to the port file once listening.
"$BIN/nearstreamd" --listen 127.0.0.1:0 --data-dir "$work/data" --workers 2 \
  --port-file "$work/port" >"$work/broker.log" 2>&1 &
broker_pid=$!

for _ in $(seq 100); do
  [[ -s "$work/port" ]] && break
  if ! kill -0 "$broker_pid" 2>/dev/null; then
    echo "quickstart: nearstreamd exited at start:" >&2
    cat "$work/broker.log" >&2
    exit 1
  fi
  sleep 0.1
done
if [[ ! -s "$work/port" ]]; then
  echo "quickstart: nearstreamd did not report its port within 10 s:" >&2
  cat "$work/broker.log" >&2
  exit 1
fi
broker="127.0.0.1:$(cat "$work/port")"
echo "nearstreamd (pid $broker_pid) listening on $broker, data in $work/data"

cli() { "$BIN/nearstream" --broker "$broker" "$@"; }

cli create "$STREAM" --streamlets 4 --durability none

lines=(
  "Nearstream stores streams the KerA way:"
  "streamlets, groups of fixed-size segments,"
  "and chunks appended whole, without per-record offsets."
  "Flink reads them by pull (fetch RPCs)"
  "or by push (shared-memory Arrow slots)."
)
# --round-robin spreads the chunks over all four streamlets.
printf '%s\n' "${lines[@]}" | cli produce "$STREAM" --round-robin --batch-records 1

# The timeout only guards against a hang; all records are there already.
cli consume "$STREAM" --from earliest --max-records "${#lines[@]}" --timeout-ms 10000 \
  >"$work/consumed"
echo "--- consumed from '$STREAM' (streamlets are read in turn, so the order may differ):"
cat "$work/consumed"
echo "---"

got=$(wc -l <"$work/consumed")
if ((got != ${#lines[@]})); then
  echo "quickstart: produced ${#lines[@]} records but consumed $got" >&2
  exit 1
fi
echo "OK: ${#lines[@]} records produced and consumed; stopping the broker."
