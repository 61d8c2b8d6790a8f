#!/usr/bin/env bash
# A local Flink session cluster (one JobManager, N TaskManagers, each its own JVM) built from
# Maven Central jars instead of a distribution tarball, to submit job jars to as users do.
# Everything binds to 127.0.0.1. The Flink version is the root pom's flink.version.
#
# Usage:
#   scripts/flink-cluster.sh start [--dir DIR] [--taskmanagers N] [--slots N] [--rest-port P]
#                                  [--rpc-port P] [--connector-in-lib [--connector-jars JARDIR]]
#                                  [--sql [--sql-connector-jar JAR]]
#                                  [--set KEY=VALUE]... [--timeout S]
#   scripts/flink-cluster.sh stop [--dir DIR]
#   scripts/flink-cluster.sh taskmanager start|kill ID [--dir DIR] [--timeout S]
#   scripts/flink-cluster.sh submit [--dir DIR] [--via rest|cli] JAR [--class MAIN] [-- ARGS...]
#   scripts/flink-cluster.sh sql [--dir DIR] -f SCRIPT.sql
#   scripts/flink-cluster.sh cancel [--dir DIR] JOBID
#   scripts/flink-cluster.sh status [--dir DIR]
#
# start   stages DIR/lib once (the Flink jars listed by scripts/flink-cluster/pom.xml, copied with
#         `mvn dependency:copy-dependencies`), writes DIR/conf (config.yaml, log4j files), starts
#         the JobManager and TaskManagers tm-1..tm-N in the background (pid files DIR/*.pid, logs
#         DIR/log/*.log and *.out) and waits until the REST API reports N TaskManagers. Defaults:
#         DIR target/flink-cluster of the repository, 2 TaskManagers of 2 slots, REST port 8081,
#         JobManager RPC port 6123, timeout 120 s. A start that fails prints the log tails and
#         stops what it started.
#           --connector-in-lib  also puts the Nearstream connector and its runtime dependencies
#                               into lib/, as docs/flink-connector.md ("Where the jars go") says:
#                               built from this repository like docker/stage-jars.sh (`mvn package
#                               dependency:copy-dependencies`, runtime scope, SLF4J left out), or
#                               copied from JARDIR with --connector-jars (a directory holding that
#                               set already). Also sets classloader.parent-first-patterns.additional
#                               so copies inside a fat job jar are ignored.
#           --sql               lib/ as a distribution's for SQL: the table jars (API, planner
#                               loader, runtime) and the json and csv formats, with the shaded
#                               flink-sql-connector-nearstream jar (built from this repository, or
#                               JAR with --sql-connector-jar); the SQL client and gateway go to
#                               opt/ (scripts/flink-cluster/sql-pom.xml). Not with
#                               --connector-in-lib: one copy of the connector in lib/.
#           --set KEY=VALUE     any other Flink option (overrides the defaults written here).
# stop    stops every process of the cluster: SIGTERM, SIGKILL after 15 s; removes the pid files.
# taskmanager start ID   starts one more TaskManager with resource id ID (e.g. a replacement) and
#                        waits until it has registered.
# taskmanager kill ID    kill -9 of that TaskManager: a crash, as the JobManager sees one.
# submit  submits a job jar. --via rest (default): POST /jars/upload, then POST /jars/:id/run
#         (entryClass, programArgsList). --via cli: Flink's CliFrontend (`flink run --detached`)
#         with FLINK_CONF_DIR=DIR/conf. Prints the job id on stdout.
# sql     runs SCRIPT.sql with Flink's SQL client (embedded gateway, FLINK_CONF_DIR=DIR/conf, so
#         its jobs go to this cluster) from lib/ and opt/ of a cluster started with --sql; prints
#         what the client prints and exits with its status.
# cancel  cancels a job (PATCH /jobs/:id?mode=cancel) and waits until it is CANCELED.
# status  the processes and the REST /overview.
#
# Environment: JAVA_HOME (else java on PATH); MVN (default mvn) and FLINK_CLUSTER_MVN_ARGS
# (extra Maven arguments, e.g. "-o"); FLINK_CLUSTER_HTTP=curl|python picks the HTTP client (default:
# curl when installed, else python3's urllib).
# Needs Java 17, Maven and curl or python3.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LIB_POM="$ROOT/scripts/flink-cluster/pom.xml"
SQL_POM="$ROOT/scripts/flink-cluster/sql-pom.xml"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
MVN="${MVN:-mvn}"
read -r -a MVN_EXTRA <<<"${FLINK_CLUSTER_MVN_ARGS:-}"
STOP_GRACE_S=15

# The JVM options of the distribution's config.yaml (env.java.opts.all) for Java 17; Arrow needs
# java.nio open (its MemoryUtil reads Buffer.address). Written to config.yaml and passed to every
# JVM here, as Flink's own start scripts pass env.java.opts.all.
JAVA_OPTS_ALL=(
  --add-exports=java.base/sun.net.util=ALL-UNNAMED
  --add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED
  --add-exports=jdk.compiler/com.sun.tools.javac.api=ALL-UNNAMED
  --add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
  --add-exports=jdk.compiler/com.sun.tools.javac.parser=ALL-UNNAMED
  --add-exports=jdk.compiler/com.sun.tools.javac.tree=ALL-UNNAMED
  --add-exports=jdk.compiler/com.sun.tools.javac.util=ALL-UNNAMED
  --add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED
  --add-opens=java.base/java.lang=ALL-UNNAMED
  --add-opens=java.base/java.net=ALL-UNNAMED
  --add-opens=java.base/java.io=ALL-UNNAMED
  --add-opens=java.base/java.nio=ALL-UNNAMED
  --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens=java.base/java.text=ALL-UNNAMED
  --add-opens=java.base/java.time=ALL-UNNAMED
  --add-opens=java.base/java.util=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED
)

die() {
  echo "flink-cluster: $*" >&2
  exit 1
}

# usage [STATUS]: the header above, on stderr unless asked for (-h).
usage() {
  if [[ ${1:-2} == 0 ]]; then
    sed -n '/^# Usage:/,/^# Needs/p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
  fi
  sed -n '/^# Usage:/,/^# Needs/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# --- the cluster directory ------------------------------------------------------------------

dir="$ROOT/target/flink-cluster"

# Makes $dir absolute; the processes' command lines name it, which is how they are recognised.
resolve_dir() {
  if [[ ${1:-} == create ]]; then
    mkdir -p "$dir"
  fi
  [[ -d $dir ]] || die "no cluster directory $dir (start one first, or give --dir)"
  dir="$(cd "$dir" && pwd)"
}

# conf_get KEY: the value config.yaml holds for KEY (written by this script: one flat key a line).
conf_get() {
  awk -v key="$1" 'index($0, key ": ") == 1 { print substr($0, length(key) + 3); exit }' \
    "$dir/conf/config.yaml"
}

rest_url() {
  [[ -f $dir/conf/config.yaml ]] || die "no cluster in $dir (no conf/config.yaml)"
  echo "http://127.0.0.1:$(conf_get rest.port)"
}

# --- processes ------------------------------------------------------------------------------

# is_ours PID: PID runs a JVM of this cluster. A pid file can outlive its process and the pid be
# reused; a zombie has no command line, so it counts as gone too.
is_ours() {
  local pid="$1" cmdline
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  if [[ -r /proc/$pid/cmdline ]]; then
    cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  else
    cmdline="$(ps -o args= -p "$pid" 2>/dev/null)" || return 1
  fi
  [[ $cmdline == *"--configDir $dir/conf "* ]]
}

# resource_params GET_JM_RESOURCE_PARAMS|GET_TM_RESOURCE_PARAMS: sets jvm_flags and dyn_props from
# Flink's memory model, as the distribution's start scripts compute them.
resource_params() {
  local out results
  if ! out="$("$JAVA" -Dlog.file="$dir/log/bash-java-utils.log" \
    -Dlog4j.configurationFile="file:$dir/conf/log4j-cli.properties" -cp "$dir/lib/*" \
    org.apache.flink.runtime.util.bash.BashJavaUtils "$1" --configDir "$dir/conf" 2>&1)"; then
    echo "$out" >&2
    die "BashJavaUtils $1 failed (output above)"
  fi
  results="$(grep '^BASH_JAVA_UTILS_EXEC_RESULT:' <<<"$out" | sed 's/^BASH_JAVA_UTILS_EXEC_RESULT://')" || true
  jvm_flags="$(sed -n 1p <<<"$results")"
  dyn_props="$(sed -n 2p <<<"$results")"
  if [[ -z $jvm_flags || -z $dyn_props ]]; then
    echo "$out" >&2
    die "BashJavaUtils $1 printed no JVM flags and dynamic properties (output above)"
  fi
}

# launch NAME CLASS [ARGS...]: starts one cluster JVM in the background, pid in DIR/NAME.pid.
# jvm_flags and dyn_props come from resource_params; the flags are space-separated words.
launch() {
  local name="$1" class="$2"
  shift 2
  # In DIR, with DIR/plugins (empty) as the plugins directory: nothing resolves against the
  # caller's working directory. The subshell execs java, so $! is the JVM's pid.
  # shellcheck disable=SC2086
  (cd "$dir" && FLINK_PLUGINS_DIR="$dir/plugins" exec "$JAVA" $jvm_flags "${JAVA_OPTS_ALL[@]}" \
    -Dlog.file="$dir/log/$name.log" -Dlog4j.configurationFile="file:$dir/conf/log4j.properties" \
    -cp "$dir/lib/*" "$class" --configDir "$dir/conf" $dyn_props "$@") \
    >"$dir/log/$name.out" 2>&1 </dev/null &
  echo $! >"$dir/$name.pid"
}

start_taskmanager_process() {
  local id="$1"
  [[ $id =~ ^[A-Za-z0-9._-]+$ ]] || die "bad TaskManager id '$id' (letters, digits, . _ -)"
  if [[ -f $dir/taskmanager-$id.pid ]] && is_ours "$(<"$dir/taskmanager-$id.pid")"; then
    die "TaskManager $id is running already (pid $(<"$dir/taskmanager-$id.pid"))"
  fi
  resource_params GET_TM_RESOURCE_PARAMS
  launch "taskmanager-$id" org.apache.flink.runtime.taskexecutor.TaskManagerRunner \
    -D "taskmanager.resource-id=$id"
}

# log_tails: the end of every log of the cluster, for a failure message.
log_tails() {
  local f
  for f in "$dir"/log/jobmanager.log "$dir"/log/jobmanager.out "$dir"/log/taskmanager-*.log \
    "$dir"/log/taskmanager-*.out; do
    [[ -s $f ]] || continue
    echo "----- last 30 lines of $f" >&2
    tail -n 30 "$f" >&2
  done
}

stop_all() {
  local f pid pids=() files=()
  shopt -s nullglob
  for f in "$dir"/*.pid; do
    files+=("$f")
    pid="$(<"$f")"
    if is_ours "$pid"; then
      pids+=("$pid")
    fi
  done
  shopt -u nullglob
  if ((${#pids[@]} > 0)); then
    kill -TERM "${pids[@]}" 2>/dev/null || true
    local deadline=$((SECONDS + STOP_GRACE_S)) left
    while :; do
      left=()
      for pid in "${pids[@]}"; do
        if is_ours "$pid"; then left+=("$pid"); fi
      done
      ((${#left[@]} == 0 || SECONDS >= deadline)) && break
      sleep 0.2
    done
    if ((${#left[@]} > 0)); then
      echo "flink-cluster: killing ${left[*]} (still running ${STOP_GRACE_S} s after SIGTERM)" >&2
      kill -KILL "${left[@]}" 2>/dev/null || true
    fi
  fi
  ((${#files[@]} == 0)) || rm -f "${files[@]}"
  echo "stopped ${#pids[@]} process(es) of $dir"
}

# --- HTTP -----------------------------------------------------------------------------------

if [[ ${FLINK_CLUSTER_HTTP:-} == python ]] || { [[ -z ${FLINK_CLUSTER_HTTP:-} ]] &&
  ! command -v curl >/dev/null 2>&1; }; then
  HTTP_CLIENT=python
else
  HTTP_CLIENT=curl
fi

# The fallback client: python3's standard library, no package to install.
PYTHON_HTTP='
import os, sys, urllib.error, urllib.request, uuid
method, url = sys.argv[1], sys.argv[2]
data, headers = None, {}
if len(sys.argv) > 4 and sys.argv[3] == "--json":
    data, headers["Content-Type"] = sys.argv[4].encode(), "application/json"
elif len(sys.argv) > 4 and sys.argv[3] == "--jar":
    boundary = uuid.uuid4().hex
    with open(sys.argv[4], "rb") as f:
        jar = f.read()
    part = ("--%s\r\nContent-Disposition: form-data; name=\"jarfile\"; filename=\"%s\"\r\n"
            "Content-Type: application/x-java-archive\r\n\r\n"
            % (boundary, os.path.basename(sys.argv[4])))
    data = part.encode() + jar + ("\r\n--%s--\r\n" % boundary).encode()
    headers["Content-Type"] = "multipart/form-data; boundary=" + boundary
try:
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=120) as r:
        sys.stdout.write(r.read().decode())
except urllib.error.HTTPError as e:
    sys.stderr.write("%s\nHTTP %d from %s %s\n" % (e.read().decode(errors="replace"), e.code, method, url))
    sys.exit(1)
except OSError as e:
    sys.stderr.write("%s %s: %s\n" % (method, url, e))
    sys.exit(1)
'

# http METHOD URL [--json BODY | --jar FILE]: prints the response body; fails on an error status.
http() {
  local method="$1" url="$2"
  shift 2
  if [[ $HTTP_CLIENT == python ]]; then
    python3 -c "$PYTHON_HTTP" "$method" "$url" "$@"
    return
  fi
  local args=(-sS --connect-timeout 5 --max-time 120 -X "$method")
  if [[ ${1:-} == --json ]]; then
    args+=(-H 'Content-Type: application/json' --data-binary "$2")
  elif [[ ${1:-} == --jar ]]; then
    # "Expect:" turns off curl's 100-continue, which Flink's REST server does not answer.
    args+=(-H 'Expect:' -F "jarfile=@$2;type=application/x-java-archive")
  fi
  local body code
  body="$(mktemp)"
  if ! code="$(curl "${args[@]}" -o "$body" -w '%{http_code}' "$url")"; then
    rm -f "$body"
    return 1
  fi
  if [[ $code != 2?? ]]; then
    cat "$body" >&2
    echo >&2
    echo "HTTP $code from $method $url" >&2
    rm -f "$body"
    return 1
  fi
  cat "$body"
  rm -f "$body"
}

# json_string S: S as a JSON string literal.
json_string() {
  local s="$1"
  s="${s//\\/\\\\}"
  s="${s//\"/\\\"}"
  s="${s//$'\n'/\\n}"
  s="${s//$'\r'/\\r}"
  s="${s//$'\t'/\\t}"
  printf '"%s"' "$s"
}

# json_field NAME: the value of the first "NAME": string or number in the JSON on stdin (Flink's
# responses are compact one-line JSON).
json_field() {
  sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p" | head -n 1
}

# --- start ----------------------------------------------------------------------------------

# stage_lib CONNECTOR(yes|no) JARDIR SQL(yes|no) SQLJAR: DIR/lib with the Flink jars, and the
# connector's (--connector-in-lib) or the SQL jars and the SQL connector jar (--sql) when asked.
# Kept across starts of the same directory unless what it should hold changed.
stage_lib() {
  local connector="$1" jars="$2" sql="$3" sql_jar="$4" marker="$dir/lib/.staged"
  local want="flink-cluster/pom.xml $(cksum <"$LIB_POM") connector=$connector $jars sql=$sql"
  want+=" $(cksum <"$SQL_POM") $sql_jar"
  if [[ -f $marker && "$(<"$marker")" == "$want" ]]; then
    return
  fi
  rm -rf "$dir/lib"
  echo "Staging the Flink jars in $dir/lib (mvn dependency:copy-dependencies)..." >&2
  local out
  if ! out="$("$MVN" -B -q -f "$LIB_POM" "${MVN_EXTRA[@]}" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$dir/lib" 2>&1)"; then
    echo "$out" >&2
    die "could not copy the Flink jars (mvn -f $LIB_POM dependency:copy-dependencies failed)"
  fi
  if [[ $connector == yes ]]; then
    stage_connector "$jars"
  fi
  if [[ $sql == yes ]]; then
    stage_sql "$sql_jar"
  fi
  # Two versions of one library on the class path: whichever loads first wins, per class.
  local twice
  twice="$(find "$dir/lib" -name '*.jar' -printf '%f\n' | sed 's/-[0-9].*\.jar$//' | sort | uniq -d)"
  [[ -z $twice ]] || die "lib/ would hold two versions of: $twice (in $dir/lib)"
  echo "$want" >"$marker"
}

# stage_connector JARDIR: the connector and its runtime dependencies into DIR/lib.
stage_connector() {
  local jars="$1" n
  if [[ -z $jars ]]; then
    echo "Building the connector and collecting its runtime dependencies (mvn package)..." >&2
    rm -rf "$ROOT/flink-connector/target/dependency"
    # As docker/stage-jars.sh: runtime scope leaves Flink ("provided") out; lib/ has SLF4J.
    local out
    if ! out="$(cd "$ROOT" && "$MVN" -B -q "${MVN_EXTRA[@]}" -DskipTests -DskipSanitizers \
      -pl flink-connector -am package dependency:copy-dependencies -DincludeScope=runtime \
      -DexcludeGroupIds=org.slf4j 2>&1)"; then
      echo "$out" >&2
      die "building the connector failed (Maven's output above)"
    fi
    mkdir -p "$dir/tmp/connector-lib"
    jars="$dir/tmp/connector-lib"
    rm -f "$jars"/*.jar
    cp "$ROOT"/flink-connector/target/dependency/*.jar "$jars/"
    local j
    for j in "$ROOT"/flink-connector/target/flink-connector-nearstream-*.jar; do
      [[ $j == *-tests.jar || $j == *-sources.jar ]] || cp "$j" "$jars/"
    done
  fi
  [[ -d $jars ]] || die "--connector-jars $jars is not a directory"
  cp "$jars"/*.jar "$dir/lib/"
  for n in flink-connector-nearstream nearstream-client nearstream-jni-bridge arrow-vector \
    netty-transport; do
    compgen -G "$dir/lib/$n-*.jar" >/dev/null || die "$n is missing from the connector's jars ($jars)"
  done
}

# stage_sql JAR: the SQL jars into DIR/lib and DIR/opt, and the shaded SQL connector jar (JAR,
# or built from this repository) into DIR/lib.
stage_sql() {
  local jar="$1" out
  rm -rf "$dir/opt"
  # Without transitive dependencies: lib/ has Flink's runtime, and the client jars bundle theirs.
  if ! out="$("$MVN" -B -q -f "$SQL_POM" "${MVN_EXTRA[@]}" dependency:copy-dependencies \
    -DexcludeTransitive=true -DexcludeArtifactIds=flink-sql-client,flink-sql-gateway,flink-python \
    -DoutputDirectory="$dir/lib" 2>&1)" ||
    ! out="$("$MVN" -B -q -f "$SQL_POM" "${MVN_EXTRA[@]}" dependency:copy-dependencies \
      -DexcludeTransitive=true -DincludeArtifactIds=flink-sql-client,flink-sql-gateway,flink-python \
      -DoutputDirectory="$dir/opt" 2>&1)"; then
    echo "$out" >&2
    die "could not copy the SQL jars (mvn -f $SQL_POM dependency:copy-dependencies failed)"
  fi
  if [[ -z $jar ]]; then
    echo "Building the SQL connector jar (mvn package)..." >&2
    if ! out="$(cd "$ROOT" && "$MVN" -B -q "${MVN_EXTRA[@]}" -DskipTests -DskipSanitizers \
      -pl flink-sql-connector-nearstream -am package 2>&1)"; then
      echo "$out" >&2
      die "building flink-sql-connector-nearstream failed (Maven's output above)"
    fi
    jar="$(compgen -G "$ROOT/flink-sql-connector-nearstream/target/flink-sql-connector-nearstream-*.jar" |
      grep -v -e '-tests.jar$' -e '/original-' | head -n 1)"
  fi
  [[ -f $jar ]] || die "no SQL connector jar $jar"
  cp "$jar" "$dir/lib/"
}

# yaml_value V: V as a YAML scalar, quoted unless it is plain already.
yaml_value() {
  if [[ $1 =~ ^[A-Za-z0-9_./=,\;+-][A-Za-z0-9\ _./=,\;+-]*$ ]]; then
    printf '%s' "$1"
  else
    printf "'%s'" "${1//\'/\'\'}"
  fi
}

write_conf() {
  local slots="$1" rest_port="$2" rpc_port="$3" connector="$4"
  shift 4
  local keys=() values=() kv key i found
  set_conf() {
    for i in "${!keys[@]}"; do
      if [[ ${keys[i]} == "$1" ]]; then
        values[i]="$2"
        return
      fi
    done
    keys+=("$1")
    values+=("$2")
  }
  set_conf jobmanager.rpc.address 127.0.0.1
  set_conf jobmanager.rpc.port "$rpc_port"
  set_conf jobmanager.bind-host 127.0.0.1
  set_conf jobmanager.memory.process.size 1024m
  set_conf jobmanager.execution.failover-strategy region
  set_conf taskmanager.host 127.0.0.1
  set_conf taskmanager.bind-host 127.0.0.1
  set_conf taskmanager.numberOfTaskSlots "$slots"
  set_conf taskmanager.memory.process.size 1280m
  set_conf parallelism.default 1
  set_conf rest.address 127.0.0.1
  set_conf rest.bind-address 127.0.0.1
  set_conf rest.port "$rest_port"
  # Working files inside DIR: two clusters on one machine never share a TaskManager directory.
  set_conf io.tmp.dirs "$dir/tmp"
  set_conf process.working-dir "$dir/work"
  set_conf web.tmpdir "$dir/tmp/web"
  set_conf env.java.opts.all "${JAVA_OPTS_ALL[*]}"
  if [[ $connector == yes ]]; then
    set_conf classloader.parent-first-patterns.additional "io.nearstream.;org.apache.arrow.;io.netty."
  fi
  for kv in "$@"; do
    [[ $kv == *=* ]] || die "--set needs KEY=VALUE, got '$kv'"
    set_conf "${kv%%=*}" "${kv#*=}"
  done

  mkdir -p "$dir/conf" "$dir/log" "$dir/tmp" "$dir/work" "$dir/plugins"
  {
    echo "# Written by scripts/flink-cluster.sh start; rewritten on every start."
    for i in "${!keys[@]}"; do
      echo "${keys[i]}: $(yaml_value "${values[i]}")"
    done
  } >"$dir/conf/config.yaml"

  # One log file per process (log.file, set per JVM), as the distribution's log4j.properties.
  cat >"$dir/conf/log4j.properties" <<'EOF'
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = MainAppender
logger.shaded_zookeeper.name = org.apache.flink.shaded.zookeeper3
logger.shaded_zookeeper.level = INFO
appender.main.name = MainAppender
appender.main.type = File
appender.main.append = true
appender.main.fileName = ${sys:log.file}
appender.main.layout.type = PatternLayout
appender.main.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
EOF
  # The client (flink run) and BashJavaUtils: a file, so their stdout carries only their output.
  cp "$dir/conf/log4j.properties" "$dir/conf/log4j-cli.properties"
}

cmd_start() {
  local taskmanagers=2 slots=2 rest_port=8081 rpc_port=6123 connector=no jars="" timeout=120
  local sql=no sql_jar=""
  local sets=()
  while (($# > 0)); do
    case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --taskmanagers) taskmanagers="$2"; shift 2 ;;
    --slots) slots="$2"; shift 2 ;;
    --rest-port) rest_port="$2"; shift 2 ;;
    --rpc-port) rpc_port="$2"; shift 2 ;;
    --connector-in-lib) connector=yes; shift ;;
    --connector-jars) jars="$(cd "$2" && pwd)" || die "no directory $2"; shift 2 ;;
    --sql) sql=yes; shift ;;
    --sql-connector-jar) sql_jar="$(realpath "$2")" || die "no file $2"; shift 2 ;;
    --set) sets+=("$2"); shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    *) die "start: unknown argument '$1'" ;;
    esac
  done
  [[ $taskmanagers =~ ^[0-9]+$ && $slots =~ ^[1-9][0-9]*$ ]] || die "bad --taskmanagers or --slots"
  [[ $rest_port =~ ^[0-9]+$ && $rpc_port =~ ^[0-9]+$ ]] || die "bad --rest-port or --rpc-port"
  [[ -z $jars || $connector == yes ]] || die "--connector-jars goes with --connector-in-lib"
  [[ -z $sql_jar || $sql == yes ]] || die "--sql-connector-jar goes with --sql"
  [[ $sql == no || $connector == no ]] || die "--sql and --connector-in-lib: one connector in lib/"
  resolve_dir create

  if [[ -f $dir/jobmanager.pid ]] && is_ours "$(<"$dir/jobmanager.pid")"; then
    die "a cluster is running in $dir already (stop it first: $0 stop --dir $dir)"
  fi
  local port
  for port in "$rest_port" "$rpc_port"; do
    # A connection that succeeds means another process listens there.
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      die "port $port of 127.0.0.1 is in use (choose another with --rest-port / --rpc-port)"
    fi
  done

  stage_lib "$connector" "$jars" "$sql" "$sql_jar"
  local in_lib="$connector"
  [[ $sql == no ]] || in_lib=yes
  write_conf "$slots" "$rest_port" "$rpc_port" "$in_lib" "${sets[@]}"
  rm -f "$dir"/log/*

  # From here on, a start that fails (any die) stops what it started.
  trap 'stop_all >/dev/null' EXIT
  resource_params GET_JM_RESOURCE_PARAMS
  launch jobmanager org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint
  local i
  for ((i = 1; i <= taskmanagers; i++)); do
    start_taskmanager_process "tm-$i"
  done

  local url deadline=$((SECONDS + timeout)) registered=""
  url="$(rest_url)"
  while :; do
    registered="$(http GET "$url/overview" 2>/dev/null | json_field taskmanagers)" || true
    [[ $registered == "$taskmanagers" ]] && break
    local f dead=""
    for f in "$dir"/*.pid; do
      is_ours "$(<"$f")" || dead+=" $(basename "$f" .pid)"
    done
    if [[ -n $dead || $SECONDS -ge $deadline ]]; then
      log_tails
      [[ -n $dead ]] && die "start failed:$dead exited (log tails above; logs in $dir/log)"
      die "start failed: ${registered:-0} of $taskmanagers TaskManagers registered within" \
        "${timeout} s (log tails above; logs in $dir/log)"
    fi
    sleep 0.5
  done
  trap - EXIT
  echo "Flink session cluster running: $url (JobManager and $taskmanagers TaskManagers of" \
    "$slots slots; logs in $dir/log)"
}

# --- other commands -------------------------------------------------------------------------

cmd_stop() {
  while (($# > 0)); do
    case "$1" in
    --dir) dir="$2"; shift 2 ;;
    *) die "stop: unknown argument '$1'" ;;
    esac
  done
  resolve_dir
  stop_all
}

cmd_taskmanager() {
  local action="${1:-}" id="${2:-}" timeout=120
  (($# >= 2)) || usage
  shift 2
  while (($# > 0)); do
    case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    *) die "taskmanager: unknown argument '$1'" ;;
    esac
  done
  resolve_dir
  local pidfile="$dir/taskmanager-$id.pid"
  case "$action" in
  start)
    [[ -f $dir/jobmanager.pid ]] && is_ours "$(<"$dir/jobmanager.pid")" ||
      die "no JobManager runs in $dir (start the cluster first)"
    start_taskmanager_process "$id"
    local url deadline=$((SECONDS + timeout))
    url="$(rest_url)"
    until http GET "$url/taskmanagers" 2>/dev/null | grep -q "\"id\":\"$id\""; do
      if ! is_ours "$(<"$pidfile")" || ((SECONDS >= deadline)); then
        tail -n 30 "$dir/log/taskmanager-$id.log" "$dir/log/taskmanager-$id.out" >&2 || true
        die "TaskManager $id did not register (log tail above)"
      fi
      sleep 0.5
    done
    echo "TaskManager $id running (pid $(<"$pidfile"))"
    ;;
  kill)
    [[ -f $pidfile ]] || die "no TaskManager $id in $dir"
    local pid
    pid="$(<"$pidfile")"
    is_ours "$pid" || die "TaskManager $id (pid $pid) is not running"
    kill -KILL "$pid"
    # Returns once the process is gone, so that what comes next sees the crash.
    local deadline=$((SECONDS + 10))
    while is_ours "$pid"; do
      ((SECONDS < deadline)) || die "TaskManager $id (pid $pid) still runs 10 s after SIGKILL"
      sleep 0.1
    done
    rm -f "$pidfile"
    echo "killed TaskManager $id (pid $pid)"
    ;;
  *) usage ;;
  esac
}

cmd_submit() {
  local via=rest jar="" class="" args=()
  while (($# > 0)); do
    case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --via) via="$2"; shift 2 ;;
    --class) class="$2"; shift 2 ;;
    --) shift; args=("$@"); break ;;
    -*) die "submit: unknown argument '$1'" ;;
    *) [[ -z $jar ]] || die "submit: one jar only ('$jar', '$1')"; jar="$1"; shift ;;
    esac
  done
  [[ -n $jar ]] || die "submit: which jar?"
  [[ -f $jar ]] || die "submit: no file $jar"
  resolve_dir
  local url job
  url="$(rest_url)"
  case "$via" in
  rest)
    local upload jar_id body a sep=""
    upload="$(http POST "$url/jars/upload" --jar "$jar")" || die "uploading $jar failed"
    jar_id="$(json_field filename <<<"$upload")"
    jar_id="${jar_id##*/}"
    [[ -n $jar_id ]] || die "unexpected answer to the upload: $upload"
    body="{"
    [[ -z $class ]] || body+="\"entryClass\":$(json_string "$class"),"
    body+="\"programArgsList\":["
    for a in "${args[@]}"; do
      body+="$sep$(json_string "$a")"
      sep=","
    done
    body+="]}"
    local answer
    answer="$(http POST "$url/jars/$jar_id/run" --json "$body")" || die "running $jar failed"
    job="$(json_field jobid <<<"$answer")"
    [[ -n $job ]] || die "unexpected answer to the run request: $answer"
    ;;
  cli)
    local out rc=0
    out="$(FLINK_CONF_DIR="$dir/conf" "$JAVA" "${JAVA_OPTS_ALL[@]}" \
      -Dlog.file="$dir/log/flink-cli.log" \
      -Dlog4j.configurationFile="file:$dir/conf/log4j-cli.properties" -cp "$dir/lib/*" \
      org.apache.flink.client.cli.CliFrontend run --detached ${class:+-c "$class"} "$jar" \
      "${args[@]}" 2>&1)" || rc=$?
    echo "$out" >&2
    ((rc == 0)) || die "flink run failed (exit $rc; output above, log $dir/log/flink-cli.log)"
    job="$(sed -n 's/.*JobID \([0-9a-f]\{32\}\).*/\1/p' <<<"$out" | head -n 1)"
    [[ -n $job ]] || die "flink run printed no job id (output above)"
    ;;
  *) die "submit: --via rest or cli, not '$via'" ;;
  esac
  echo "$job"
}

cmd_sql() {
  local script=""
  while (($# > 0)); do
    case "$1" in
    --dir) dir="$2"; shift 2 ;;
    -f) script="$(realpath "$2")" || die "no file $2"; shift 2 ;;
    *) die "sql: unknown argument '$1'" ;;
    esac
  done
  [[ -n $script && -f $script ]] || die "sql: give the script with -f SCRIPT.sql"
  resolve_dir
  compgen -G "$dir/opt/flink-sql-client-*.jar" >/dev/null ||
    die "no SQL client in $dir/opt: start the cluster with --sql"
  mkdir -p "$dir/log"
  # As the distribution's sql-client.sh: lib/ (the connector is there) and the client's jars,
  # the JDK 17 options of config.yaml, the CLI's log4j file.
  FLINK_CONF_DIR="$dir/conf" "$JAVA" "${JAVA_OPTS_ALL[@]}" \
    -Dlog.file="$dir/log/sql-client.log" \
    -Dlog4j.configurationFile="file:$dir/conf/log4j-cli.properties" \
    -cp "$dir/lib/*:$dir/opt/*" org.apache.flink.table.client.SqlClient -f "$script"
}

cmd_cancel() {
  local job=""
  while (($# > 0)); do
    case "$1" in
    --dir) dir="$2"; shift 2 ;;
    -*) die "cancel: unknown argument '$1'" ;;
    *) job="$1"; shift ;;
    esac
  done
  [[ $job =~ ^[0-9a-f]{32}$ ]] || die "cancel: which job? (its 32-digit id)"
  resolve_dir
  local url state deadline=$((SECONDS + 60))
  url="$(rest_url)"
  http PATCH "$url/jobs/$job?mode=cancel" >/dev/null || die "cancelling job $job failed"
  while state="$(http GET "$url/jobs/$job" | json_field state)" && [[ $state != CANCELED ]]; do
    ((SECONDS < deadline)) || die "job $job is $state 60 s after the cancel request"
    sleep 0.5
  done
  echo "job $job cancelled"
}

cmd_status() {
  while (($# > 0)); do
    case "$1" in
    --dir) dir="$2"; shift 2 ;;
    *) die "status: unknown argument '$1'" ;;
    esac
  done
  resolve_dir
  local f pid
  shopt -s nullglob
  for f in "$dir"/*.pid; do
    pid="$(<"$f")"
    if is_ours "$pid"; then
      echo "$(basename "$f" .pid): pid $pid, running"
    else
      echo "$(basename "$f" .pid): pid $pid, not running"
    fi
  done
  shopt -u nullglob
  http GET "$(rest_url)/overview" || die "the REST API does not answer"
  echo
}

(($# > 0)) || usage
command="$1"
shift
case "$command" in
start) cmd_start "$@" ;;
stop) cmd_stop "$@" ;;
taskmanager) cmd_taskmanager "$@" ;;
submit) cmd_submit "$@" ;;
sql) cmd_sql "$@" ;;
cancel) cmd_cancel "$@" ;;
status) cmd_status "$@" ;;
-h | --help | help) usage 0 ;;
*) die "unknown command '$command' (start, stop, taskmanager, submit, sql, cancel, status)" ;;
esac
