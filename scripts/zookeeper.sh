#!/usr/bin/env bash
# A standalone Apache ZooKeeper server on 127.0.0.1 for manual runs: the jars that the
# zookeeper-server module assembles (zookeeper-server/target/lib, built when missing) in a JVM of
# its own, configured as the Java test kit's io.nearstream.process.ZooKeeperProcess does it.
#
# Usage:
#   scripts/zookeeper.sh start --dir DIR [--port P] [--timeout S]
#   scripts/zookeeper.sh stop --dir DIR
#   scripts/zookeeper.sh status --dir DIR
#
# start   writes DIR/zoo.cfg (data in DIR/data, tickTime 500, no admin server, four-letter words
#         ruok, srvr and conf only), starts the server in the background (pid in
#         DIR/zookeeper.pid, port in DIR/port, output appended to DIR/zookeeper.log), waits until
#         it serves (timeout 30 s) and prints its connect string, 127.0.0.1:PORT. Default port: a
#         free one. A restart in the same DIR keeps the data.
# stop    SIGTERM, SIGKILL after 5 s; removes the pid file (keeps the data and the port file).
# status  running or not, and the server's answer to srvr; exit status 3 when not running.
#
# Environment: JAVA_HOME (else java on PATH); MVN (default mvn); NEARSTREAM_ZOOKEEPER_LIB (a
# directory of ZooKeeper's jars instead of zookeeper-server/target/lib).
# Needs Java 17, and Maven to build the jars.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
MVN="${MVN:-mvn}"
LIB="${NEARSTREAM_ZOOKEEPER_LIB:-$ROOT/zookeeper-server/target/lib}"
STOP_GRACE_S=5

die() {
  echo "zookeeper: $*" >&2
  exit 1
}

usage() {
  sed -n '/^# Usage:/,/^# Needs/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# is_ours PID: PID is the server started with DIR's zoo.cfg (a pid file can outlive its process).
is_ours() {
  [[ $1 =~ ^[0-9]+$ && -r /proc/$1/cmdline ]] || return 1
  [[ "$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null)" == *"ZooKeeperServerMain $dir/zoo.cfg"* ]]
}

running_pid() {
  local pid
  [[ -f $dir/zookeeper.pid ]] || return 1
  pid="$(<"$dir/zookeeper.pid")"
  is_ours "$pid" && echo "$pid"
}

# word PORT WORD: sends a four-letter word to 127.0.0.1:PORT and prints the answer.
# shellcheck disable=SC2016 # $0 and $1 expand in the inner bash
word() {
  timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && printf %s "$1" >&3 && cat <&3' \
    "$1" "$2" 2>/dev/null
}

# free_port: a port of 127.0.0.1 that nothing listens on (start retries if it is taken meanwhile).
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    # shellcheck disable=SC2016 # $0 expands in the inner bash
    if ! timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$p" 2>/dev/null; then
      echo "$p"
      return
    fi
  done
}

ensure_lib() {
  compgen -G "$LIB/zookeeper-[0-9]*.jar" >/dev/null && return
  [[ -z ${NEARSTREAM_ZOOKEEPER_LIB:-} ]] || die "no zookeeper-*.jar in $LIB"
  echo "zookeeper: building $LIB" >&2
  (cd "$ROOT" && "$MVN" -B -q -pl zookeeper-server package) >&2 ||
    die "cannot build the ZooKeeper jars (mvn -pl zookeeper-server package)"
}

# launch PORT TIMEOUT: starts the server on PORT; 0 once it serves, 2 if the port was taken.
launch() {
  local port="$1" timeout_s="$2" pid log_start deadline
  mkdir -p "$dir/data"
  printf '%s\n' "tickTime=500" "dataDir=$dir/data" "clientPortAddress=127.0.0.1" \
    "clientPort=$port" "admin.enableServer=false" "4lw.commands.whitelist=ruok,srvr,conf" \
    "forceSync=no" >"$dir/zoo.cfg"
  log_start=$(($(stat -c %s "$dir/zookeeper.log" 2>/dev/null || echo 0) + 1))
  "$JAVA" -Xmx256m -Djava.awt.headless=true -Dorg.slf4j.simpleLogger.showDateTime=true \
    -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS -cp "$LIB/*" \
    org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
    >>"$dir/zookeeper.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$dir/zookeeper.pid"
  echo "$port" >"$dir/port"
  deadline=$((SECONDS + timeout_s))
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$dir/zookeeper.pid"
      tail -c +"$log_start" "$dir/zookeeper.log" | grep -q 'Address already in use' && return 2
      tail -c +"$log_start" "$dir/zookeeper.log" | tail -n 40 >&2
      die "ZooKeeper exited before serving (log: $dir/zookeeper.log)"
    fi
    # imok: listening; srvr's mode: serving; conf's dataDir: this server, not another one on the
    # port while this one has yet to fail to bind it.
    if [[ "$(word "$port" ruok)" == imok && "$(word "$port" srvr)" == *"Mode: "* &&
      "$(word "$port" conf)" == *"dataDir=$dir/data/"* ]]; then
      return 0
    fi
    if ((SECONDS >= deadline)); then
      kill -KILL "$pid" 2>/dev/null || true
      rm -f "$dir/zookeeper.pid"
      tail -c +"$log_start" "$dir/zookeeper.log" | tail -n 40 >&2
      die "ZooKeeper did not serve on port $port within $timeout_s s (log: $dir/zookeeper.log)"
    fi
    sleep 0.1
  done
}

cmd_start() {
  local port=0 timeout_s=30 attempt rc pid
  while (($# > 0)); do
    case "$1" in
    --port) port="${2:?--port needs a value}" && shift 2 ;;
    --timeout) timeout_s="${2:?--timeout needs a value}" && shift 2 ;;
    *) die "unknown option '$1'" ;;
    esac
  done
  [[ $port =~ ^[0-9]+$ ]] || die "bad port '$port'"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  if pid="$(running_pid)"; then
    die "ZooKeeper is running already in $dir (pid $pid, port $(<"$dir/port"))"
  fi
  ensure_lib
  for attempt in 1 2 3; do
    rc=0
    launch "$([[ $port != 0 ]] && echo "$port" || free_port)" "$timeout_s" || rc=$?
    ((rc == 2 && port == 0 && attempt < 3)) || break
  done
  ((rc == 0)) || die "port $(<"$dir/port") is in use (log: $dir/zookeeper.log)"
  echo "127.0.0.1:$(<"$dir/port")"
}

cmd_stop() {
  local pid deadline
  if ! pid="$(running_pid)"; then
    rm -f "$dir/zookeeper.pid"
    echo "ZooKeeper in $dir is not running"
    return
  fi
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$((SECONDS + STOP_GRACE_S))
  while is_ours "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
  if is_ours "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  while is_ours "$pid"; do sleep 0.1; done
  rm -f "$dir/zookeeper.pid"
  echo "stopped ZooKeeper in $dir (pid $pid)"
}

cmd_status() {
  local pid
  if ! pid="$(running_pid)"; then
    echo "ZooKeeper in $dir is not running"
    exit 3
  fi
  echo "ZooKeeper in $dir: pid $pid, 127.0.0.1:$(<"$dir/port")"
  word "$(<"$dir/port")" srvr || echo "(no answer to srvr)"
}

(($# > 0)) || usage
command="$1"
shift
dir=""
args=()
while (($# > 0)); do
  case "$1" in
  --dir) dir="${2:?--dir needs a value}" && shift 2 ;;
  -h | --help) usage ;;
  *) args+=("$1") && shift ;;
  esac
done
[[ -n $dir ]] || die "--dir DIR is required"
if [[ $command != start ]]; then
  [[ -d $dir ]] || die "no directory $dir"
  dir="$(cd "$dir" && pwd)"
  ((${#args[@]} == 0)) || die "unknown option '${args[0]}'"
fi
case "$command" in
start) cmd_start "${args[@]}" ;;
stop) cmd_stop ;;
status) cmd_status ;;
*) die "unknown command '$command' (start, stop, status)" ;;
esac
