#!/usr/bin/env python3
"""Asserts what docker/docker-compose.yml must keep for push mode to work across containers, and
for its job to read what its producer writes.

Reads the normalized model that `docker-compose config` prints (stdin) and the files the images
are built from. scripts/check-compose.sh runs it; run alone:

    docker-compose -f docker/docker-compose.yml config | scripts/compose_invariants.py

Then it breaks each invariant on purpose and checks that the check notices, so a check that can
no longer fail does not go unnoticed. With --workload W the model is the one rendered with
WORKLOAD=W: the job must be W's and its producer the one W reads; the breakages are tried on the
default model only.
"""

import argparse
import copy
import pathlib
import re
import shlex
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLINK_DOCKERFILE = "docker/flink.Dockerfile"
BROKER_DOCKERFILE = "docker/broker.Dockerfile"
STAGE_SCRIPT = "docker/stage-jars.sh"
JOB_RUNNER = "io.nearstream.benchmarks.jobs.JobRunner"
BENCHMARKS_JAR = "/opt/nearstream/nearstream-benchmarks.jar"
YSB_PRODUCER = "io.nearstream.benchmarks.workloads.YsbProducer"
YSB_CAMPAIGNS = "io.nearstream.benchmarks.workloads.YsbCampaigns"
PERF_PRODUCER = "nearstream-perf"
# What each workload's job parses, so which producer must fill its stream: the YSB job fails on
# anything but YsbProducer's JSON events; count and filter read any record, and this stack gives
# them nearstream-perf's. A WORKLOAD missing here has no producer in the stack.
WORKLOAD_PRODUCER = {"ysb": YSB_PRODUCER, "count": PERF_PRODUCER, "filter": PERF_PRODUCER}
DEFAULT_WORKLOAD = "ysb"
FLINK_UID = "9999"  # the "flink" user of the official Flink images
DOCKER_DEFAULT_SHM = 64 << 20


def parse_size(text):
    """Docker's byte sizes: 2gb, 512m, 1073741824."""
    m = re.fullmatch(r"(\d+)\s*([kmg]?)b?", str(text).strip().lower())
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2)]


def script_words(text):
    """The words of a shell script as `sh -c` would split them (comment lines dropped). Compose
    prints an escaped $$ as $$; the shell sees one $."""
    text = text.replace("$$", "$").replace("\\\n", " ")
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def command_words(command):
    """Words of a command given as a string or a list, a `sh -c SCRIPT` script split into its
    words as well."""
    if isinstance(command, str):
        return script_words(command)
    words = []
    for part in command or []:
        part = str(part)
        words.extend(script_words(part) if any(c.isspace() for c in part) else [part])
    return words


def service_words(service):
    """Words of a service's entrypoint and command."""
    return command_words(service.get("entrypoint")) + command_words(service.get("command"))


def service_text(service):
    """A service's entrypoint and command as one text, for what is not a flag."""
    parts = []
    for key in ("entrypoint", "command"):
        value = service.get(key)
        parts.extend([value] if isinstance(value, str) else [str(v) for v in value or []])
    return "\n".join(parts).replace("$$", "$")


def flag_values(command, name):
    """Values of --name=V / --name V in a command given as a list or a string."""
    words = command_words(command)
    values = []
    for i, w in enumerate(words):
        if w.startswith(f"--{name}="):
            values.append(w.split("=", 1)[1])
        elif w == f"--{name}" and i + 1 < len(words):
            values.append(words[i + 1])
    return values


def word_after(words, word):
    """The words that follow `word` (a CLI's positional argument after its subcommand)."""
    return [words[i + 1] for i, w in enumerate(words[:-1]) if w == word]


def producer_of(service):
    """Which producer a service runs (YSB_PRODUCER or PERF_PRODUCER), or None."""
    words = service_words(service)
    if YSB_PRODUCER in words:
        return YSB_PRODUCER
    if PERF_PRODUCER in words:
        return PERF_PRODUCER
    return None


def workload_guard(service):
    """(value, admitted workloads) of the `case "$WORKLOAD" in a|b) ;; *) exit 0` that makes a
    producer run only for the workloads that read its records; None when it has no guard."""
    m = re.search(r'case\s+"?([^"\s]*)"?\s+in\s+([^\s)]+)\)\s*;;', service_text(service))
    return (m.group(1), m.group(2).split("|")) if m else None


def runs(service):
    """Whether a producer produces in this model (its guard admits the workload, or it has none)."""
    guard = workload_guard(service)
    return guard is None or guard[0] in guard[1]


def depends_on(service, name):
    """The condition under which `service` waits for `name` (None: it does not)."""
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return "service_started" if name in deps else None
    if name not in deps:
        return None
    return (deps[name] or {}).get("condition", "service_started")


def flink_properties(service):
    text = (service.get("environment") or {}).get("FLINK_PROPERTIES", "")
    props = {}
    for line in text.splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            props[key.strip()] = value.strip()
    return props


def check(config, files, workload=None):
    """Returns the broken invariants (empty when all hold). `workload`: the WORKLOAD the model
    was rendered with (None: the default)."""
    problems = []
    services = config.get("services", {})
    for name in ("broker", "jobmanager", "taskmanager", "create-stream", "wait-for-data",
                 "submit"):
        if name not in services:
            problems.append(f"service '{name}' is missing")
    producers = {name: producer_of(svc) for name, svc in services.items() if producer_of(svc)}
    for kind in (YSB_PRODUCER, PERF_PRODUCER):
        if kind not in producers.values():
            problems.append(f"no service runs {kind}")
    if problems:
        return problems
    broker, jm, tm = services["broker"], services["jobmanager"], services["taskmanager"]
    submit = services["submit"]

    # Shared memory: the TaskManager must see the broker's /dev/shm tmpfs.
    if broker.get("ipc") != "shareable":
        problems.append("broker: ipc must be 'shareable' so the TaskManager can join it")
    if tm.get("ipc") != "service:broker":
        problems.append("taskmanager: ipc must be 'service:broker' (the broker's /dev/shm)")
    try:
        if parse_size(broker.get("shm_size", "0")) <= DOCKER_DEFAULT_SHM:
            problems.append("broker: shm_size must be raised above Docker's 64 MiB")
    except ValueError as e:
        problems.append(f"broker: {e}")
    push_dirs = flag_values(broker.get("command"), "push-dir")
    if push_dirs not in ([], ["/dev/shm"]):
        problems.append(f"broker: --push-dir must be /dev/shm (the shared tmpfs), is {push_dirs}")
    if not re.search(r'"--push-dir",\s*"/dev/shm"', files[BROKER_DOCKERFILE]):
        problems.append(f"{BROKER_DOCKERFILE}: the default command must push to /dev/shm")

    # Same uid on both sides: regions are mode 0600.
    if not re.search(rf"^ARG NEARSTREAM_UID={FLINK_UID}$", files[BROKER_DOCKERFILE], re.M):
        problems.append(f"{BROKER_DOCKERFILE}: the broker must run as uid {FLINK_UID} like Flink")

    # Broker data on a named volume, where --data-dir points.
    data_dirs = flag_values(broker.get("command"), "data-dir")
    volumes = config.get("volumes") or {}
    mounts = [str(v).split(":") for v in broker.get("volumes") or []]
    if not data_dirs or not any(m[0] in volumes and m[1] == data_dirs[0] for m in mounts):
        problems.append("broker: --data-dir must be on a named volume")

    # One Flink image, built from flink.Dockerfile, for the JobManager and the TaskManager.
    build = jm.get("build") or {}
    if build.get("dockerfile") != FLINK_DOCKERFILE:
        problems.append(f"jobmanager: must be built from {FLINK_DOCKERFILE}")
    ysb_producers = [n for n, kind in producers.items() if kind == YSB_PRODUCER]
    for name in ("taskmanager", "submit", *ysb_producers):
        if services[name].get("image") != jm.get("image"):
            problems.append(f"{name}: must use the jobmanager's image {jm.get('image')}")

    # The connector on Flink's parent-first class path.
    flink_df = files[FLINK_DOCKERFILE]
    if not re.search(r"^COPY\b.*\sdocker/target/flink-lib/\s+/opt/flink/lib/\s*$", flink_df, re.M):
        problems.append(f"{FLINK_DOCKERFILE}: must copy docker/target/flink-lib/ to lib/")
    for jar in ("flink-connector-nearstream", "nearstream-client", "nearstream-jni-bridge"):
        if not re.search(rf"\b{jar}\b", files[STAGE_SCRIPT]):
            problems.append(f"{STAGE_SCRIPT}: must stage {jar} into flink-lib/")
    if not re.search(r"^COPY\b.*\sdocker/target/nearstream-benchmarks\.jar\s+/opt/nearstream/\s*$",
                     flink_df, re.M):
        problems.append(f"{FLINK_DOCKERFILE}: must copy the benchmarks jar to /opt/nearstream/")
    for name in ("jobmanager", "taskmanager"):
        patterns = flink_properties(services[name]).get(
            "classloader.parent-first-patterns.additional", "").split(";")
        for needed in ("io.nearstream.", "org.apache.arrow."):
            if needed not in patterns:
                problems.append(f"{name}: classloader.parent-first-patterns.additional lacks "
                                f"'{needed}'")

    # The job submission: push mode, against the broker service, on the session cluster (without
    # --cluster session JobRunner would start a MiniCluster inside the submit container, which
    # has neither the TaskManager nor the broker's /dev/shm).
    cmd = " ".join(service_words(submit))  # a script's words, wherever its lines wrap
    for needed in (f"-c {JOB_RUNNER}", BENCHMARKS_JAR, "--mode push", "--workload",
                   "--stream", "--parallelism", "-m jobmanager:8081", "--cluster session"):
        if needed not in cmd:
            problems.append(f"submit: command lacks '{needed}'")
    listen = flag_values(broker.get("command"), "listen")
    port = listen[0].rsplit(":", 1)[1] if listen else "7420"
    for name in ("submit", "create-stream", "wait-for-data", *producers):
        brokers = flag_values(service_words(services[name]), "broker")
        if not brokers or set(brokers) != {f"broker:{port}"}:
            problems.append(f"{name}: --broker must be broker:{port}, is {brokers}")

    problems += check_data(services, producers, workload)

    # Published ports on the loopback address only: the stack has no authentication.
    for name, svc in services.items():
        for p in svc.get("ports") or []:
            if not str(p).startswith("127.0.0.1:"):
                problems.append(f"{name}: port {p} must be published on 127.0.0.1 only")
    return problems


def check_data(services, producers, workload):
    """The job reads what it can parse: the producer of WORKLOAD's records, and only it, writes
    the stream the job reads, the YSB side from the same ad -> campaign table, and the job is
    submitted once the stream holds a record."""
    problems = []
    submit_words = service_words(services["submit"])
    jobs = flag_values(submit_words, "workload")
    if workload is not None and jobs != [workload]:
        problems.append(f"submit: rendered with WORKLOAD={workload}, runs --workload {jobs}")
    job = jobs[0] if len(jobs) == 1 else None

    # Each producer's guard admits only workloads that read its records, and together they
    # cover every workload a producer exists for.
    admitted = set()
    for name, kind in producers.items():
        guard = workload_guard(services[name])
        if guard is None:
            problems.append(f"{name}: must exit unless WORKLOAD reads its records (no guard)")
            continue
        for w in guard[1]:
            admitted.add(w)
            if WORKLOAD_PRODUCER.get(w) != kind:
                problems.append(f"{name}: runs {kind} for WORKLOAD={w}, whose job reads "
                                f"{WORKLOAD_PRODUCER.get(w, 'no producer of this stack')}")
    if admitted != set(WORKLOAD_PRODUCER):
        problems.append(f"producers run for {sorted(admitted)}, must for "
                        f"{sorted(WORKLOAD_PRODUCER)}")
    if job not in WORKLOAD_PRODUCER:
        problems.append(f"submit: --workload {jobs}: no producer here writes what it reads")
    else:
        running = {n: k for n, k in producers.items() if runs(services[n])}
        if list(running.values()) != [WORKLOAD_PRODUCER[job]]:
            problems.append(f"the {job} job reads {WORKLOAD_PRODUCER[job]} records, but the "
                            f"producers that run are {running or 'none'}")

    # One stream: created, produced to, waited on and read under the same name.
    create_words = service_words(services["create-stream"])
    streams = {
        "submit": flag_values(submit_words, "stream"),
        "create-stream": sorted(set(word_after(create_words, "create")
                                    + word_after(create_words, "describe"))),
        "wait-for-data": word_after(service_words(services["wait-for-data"]), "consume"),
    }
    for name in producers:
        streams[name] = flag_values(service_words(services[name]), "stream")
    if any(len(v) != 1 for v in streams.values()) or len({v[0] for v in streams.values()}) != 1:
        problems.append(f"one stream for all: {streams}")

    # The YSB side: the table the job loads is the one the events were drawn from (same seed),
    # and the producer's streamlets are the stream's (YsbProducer refuses another count).
    streamlets = flag_values(create_words, "streamlets")
    for name in (n for n, k in producers.items() if k == YSB_PRODUCER):
        words = service_words(services[name])
        if flag_values(words, "streamlets") != streamlets:
            problems.append(f"{name}: --streamlets {flag_values(words, 'streamlets')}, the stream "
                            f"is created with {streamlets}")
        if not flag_values(words, "campaigns"):
            problems.append(f"{name}: YsbProducer needs --campaigns")
        table = flag_values(submit_words, "ysb-campaigns")
        if YSB_CAMPAIGNS not in submit_words or len(table) != 1:
            problems.append(f"submit: must generate the ad -> campaign table with {YSB_CAMPAIGNS}"
                            " and pass it as --ysb-campaigns")
        elif flag_values(submit_words, "out") != table:
            problems.append(f"submit: --ysb-campaigns {table} is not the file {YSB_CAMPAIGNS} "
                            f"writes ({flag_values(submit_words, 'out')})")
        seeds = (flag_values(words, "seed"), flag_values(submit_words, "seed"))
        if len(seeds[0]) != 1 or seeds[0] != seeds[1]:
            problems.append(f"{name} draws its ads with --seed {seeds[0]}, the job's table has "
                            f"--seed {seeds[1]}: not the same table")

    # Nothing is submitted before there is data: the stream is created first, the producers
    # write to it, and submit waits for wait-for-data, which ends once it holds a record.
    if depends_on(services["create-stream"], "broker") != "service_healthy":
        problems.append("create-stream: must wait for the broker to be healthy")
    for name in ("wait-for-data", *producers):
        if depends_on(services[name], "create-stream") != "service_completed_successfully":
            problems.append(f"{name}: must wait for create-stream to complete")
    if "consume" not in service_words(services["wait-for-data"]):
        problems.append("wait-for-data: must wait for a record (nearstream consume)")
    if depends_on(services["submit"], "wait-for-data") != "service_completed_successfully":
        problems.append("submit: must wait for wait-for-data to complete (data in the stream)")
    return problems


def mutations(config):
    """Each breaks one invariant; check() must report every one of them."""
    def tm_without_ipc(c):
        del c["services"]["taskmanager"]["ipc"]

    def default_shm(c):
        c["services"]["broker"]["shm_size"] = "64m"

    def sub(c, name, pattern, repl):
        svc = c["services"][name]
        svc["command"] = [re.sub(pattern, repl, str(part)) for part in svc["command"]]

    def pull_mode(c):
        sub(c, "submit", "--mode push", "--mode pull")

    def job_in_submit_container(c):
        sub(c, "submit", "--cluster session ", "")

    def child_first_connector(c):
        env = c["services"]["taskmanager"]["environment"]
        env["FLINK_PROPERTIES"] = env["FLINK_PROPERTIES"].replace("io.nearstream.;", "")

    def data_in_container(c):
        c["services"]["broker"]["volumes"] = []

    def ysb_producer_for_count(c):
        sub(c, "ysb-producer", r"\bin ysb\)", "in count)")

    def perf_producer_for_ysb_too(c):
        sub(c, "perf-producer", r"\bin count\|filter\)", "in ysb|count|filter)")

    def job_reads_perf_records(c):
        sub(c, "submit", r"--workload ysb\b", "--workload count")

    def other_seed(c):
        sub(c, "ysb-producer", r"--seed \d+", "--seed 7")

    def other_table_file(c):
        sub(c, "submit", r"--ysb-campaigns \S+", "--ysb-campaigns /tmp/elsewhere.csv")

    def other_stream(c):
        sub(c, "ysb-producer", r'--stream "?[\w.-]+"?', "--stream elsewhere")

    def other_streamlets(c):
        sub(c, "ysb-producer", r"--streamlets \d+", "--streamlets 3")

    def submit_before_data(c):
        del c["services"]["submit"]["depends_on"]["wait-for-data"]

    def gate_only_started(c):
        c["services"]["submit"]["depends_on"]["wait-for-data"]["condition"] = "service_started"

    def public_port(c):
        ports = c["services"]["broker"]["ports"]
        ports[0] = str(ports[0]).replace("127.0.0.1:", "", 1)

    for mutate in (tm_without_ipc, default_shm, pull_mode, job_in_submit_container,
                   child_first_connector,
                   data_in_container, ysb_producer_for_count, perf_producer_for_ysb_too,
                   job_reads_perf_records, other_seed, other_table_file, other_stream,
                   other_streamlets, submit_before_data, gate_only_started, public_port):
        broken = copy.deepcopy(config)
        mutate(broken)
        yield mutate.__name__, broken


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", help="the WORKLOAD the model on stdin was rendered with "
                        "(default: unset, the compose file's default)")
    args = parser.parse_args()
    config = yaml.safe_load(sys.stdin)
    files = {p: (ROOT / p).read_text() for p in (FLINK_DOCKERFILE, BROKER_DOCKERFILE, STAGE_SCRIPT)}
    problems = check(config, files, args.workload or DEFAULT_WORKLOAD)
    label = f"WORKLOAD={args.workload}" if args.workload else "defaults"
    if problems:
        print(f"compose invariants broken ({label}):", *problems, sep="\n  ", file=sys.stderr)
        return 1
    if not args.workload:
        unnoticed = [name for name, broken in mutations(config) if not check(broken, files)]
        if unnoticed:
            print("compose invariants: the check misses these breakages:", *unnoticed,
                  sep="\n  ", file=sys.stderr)
            return 1
    services = config["services"]
    job = flag_values(service_words(services["submit"]), "workload")[0]
    producer = [n for n, s in services.items() if producer_of(s) and runs(s)][0]
    print(f"compose invariants: ok ({label}: the {job} job reads what {producer} writes, "
          f"taskmanager in the broker's IPC namespace, shm_size "
          f"{services['broker']['shm_size']}, connector in /opt/flink/lib, push mode)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
