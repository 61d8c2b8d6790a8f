#!/usr/bin/env python3
"""Asserts what docker/docker-compose.yml must keep for push mode to work across containers.

Reads the normalized model that `docker-compose config` prints (stdin) and the files the images
are built from. scripts/check-compose.sh runs it; run alone:

    docker-compose -f docker/docker-compose.yml config | scripts/compose_invariants.py

Then it breaks each invariant on purpose and checks that the check notices, so a check that can
no longer fail does not go unnoticed.
"""

import copy
import pathlib
import re
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLINK_DOCKERFILE = "docker/flink.Dockerfile"
BROKER_DOCKERFILE = "docker/broker.Dockerfile"
STAGE_SCRIPT = "docker/stage-jars.sh"
JOB_RUNNER = "io.nearstream.benchmarks.jobs.JobRunner"
BENCHMARKS_JAR = "/opt/nearstream/nearstream-benchmarks.jar"
FLINK_UID = "9999"  # the "flink" user of the official Flink images
DOCKER_DEFAULT_SHM = 64 << 20


def parse_size(text):
    """Docker's byte sizes: 2gb, 512m, 1073741824."""
    m = re.fullmatch(r"(\d+)\s*([kmg]?)b?", str(text).strip().lower())
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2)]


def flag_values(command, name):
    """Values of --name=V / --name V in a command given as a list or a string."""
    words = command.split() if isinstance(command, str) else list(command or [])
    values = []
    for i, w in enumerate(words):
        if w.startswith(f"--{name}="):
            values.append(w.split("=", 1)[1])
        elif w == f"--{name}" and i + 1 < len(words):
            values.append(words[i + 1])
    return values


def flink_properties(service):
    text = (service.get("environment") or {}).get("FLINK_PROPERTIES", "")
    props = {}
    for line in text.splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            props[key.strip()] = value.strip()
    return props


def check(config, files):
    """Returns the broken invariants (empty when all hold)."""
    problems = []
    services = config.get("services", {})
    for name in ("broker", "jobmanager", "taskmanager", "producer", "submit"):
        if name not in services:
            problems.append(f"service '{name}' is missing")
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
    for name in ("taskmanager", "submit"):
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

    # The job submission: push mode, against the broker service.
    cmd = submit.get("command")
    cmd = cmd if isinstance(cmd, str) else " ".join(cmd or [])
    for needed in (f"-c {JOB_RUNNER}", BENCHMARKS_JAR, "--mode push", "--workload",
                   "--stream", "--parallelism", "-m jobmanager:8081"):
        if needed not in cmd:
            problems.append(f"submit: command lacks '{needed}'")
    listen = flag_values(broker.get("command"), "listen")
    port = listen[0].rsplit(":", 1)[1] if listen else "7420"
    for name, brokers in (("submit", flag_values(cmd, "broker")),
                          ("producer", flag_values(services["producer"].get("command"), "broker"))):
        if brokers != [f"broker:{port}"]:
            problems.append(f"{name}: --broker must be broker:{port}, is {brokers}")
    return problems


def mutations(config):
    """Each breaks one invariant; check() must report every one of them."""
    def tm_without_ipc(c):
        del c["services"]["taskmanager"]["ipc"]

    def default_shm(c):
        c["services"]["broker"]["shm_size"] = "64m"

    def pull_mode(c):
        c["services"]["submit"]["command"] = c["services"]["submit"]["command"].replace(
            "--mode push", "--mode pull")

    def child_first_connector(c):
        env = c["services"]["taskmanager"]["environment"]
        env["FLINK_PROPERTIES"] = env["FLINK_PROPERTIES"].replace("io.nearstream.;", "")

    def data_in_container(c):
        c["services"]["broker"]["volumes"] = []

    for mutate in (tm_without_ipc, default_shm, pull_mode, child_first_connector,
                   data_in_container):
        broken = copy.deepcopy(config)
        mutate(broken)
        yield mutate.__name__, broken


def main():
    config = yaml.safe_load(sys.stdin)
    files = {p: (ROOT / p).read_text() for p in (FLINK_DOCKERFILE, BROKER_DOCKERFILE, STAGE_SCRIPT)}
    problems = check(config, files)
    if problems:
        print("compose invariants broken:", *problems, sep="\n  ", file=sys.stderr)
        return 1
    unnoticed = [name for name, broken in mutations(config) if not check(broken, files)]
    if unnoticed:
        print("compose invariants: the check misses these breakages:", *unnoticed, sep="\n  ",
              file=sys.stderr)
        return 1
    print("compose invariants: ok (taskmanager in the broker's IPC namespace, shm_size "
          f"{config['services']['broker']['shm_size']}, connector in /opt/flink/lib, push mode)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
