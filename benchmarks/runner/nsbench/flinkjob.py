"""A Flink job of the benchmarks jar (io.nearstream.benchmarks.jobs.JobRunner) on a local
MiniCluster in its own JVM, so its CPU seconds are its own; its RESULT line parsed."""
import json
import os
import re

from . import paths
from .processes import Process

# Timed runs end with "RESULT {json}"; bounded runs print their JSON line bare.
_RESULT = re.compile(r"^(?:RESULT )?(\{.*\})\s*$", re.M)


def start(workdir, workload, mode, stream, parallelism, broker=None, kafka=None, records=None,
          duration_s=None, preload=None, heap="2g", extra=(), name=None, cpus=None):
    """Bounded with `records` (reads the stream up to its tail at job start), or unbounded for
    `duration_s` seconds; `preload` N: JobRunner starts a broker and loads N records first."""
    # Arrow (the push reader's slot view) needs java.nio opened on Java 17+. The heap is committed
    # and touched at start (-Xms = -Xmx, AlwaysPreTouch): otherwise the kernel zeroes pages for
    # the heap's first laps during the measurement (7 % of the YSB job's CPU in a profile).
    argv = [paths.java(), f"-Xmx{heap}", f"-Xms{heap}", "-XX:+AlwaysPreTouch", "-XX:+UseParallelGC",
            "--add-opens=java.base/java.nio=org.apache.arrow.memory.core,ALL-UNNAMED",
            "-cp", paths.benchmarks_jar(),
            "io.nearstream.benchmarks.jobs.JobRunner", "--workload", workload, "--mode", mode,
            "--stream", stream, "--parallelism", str(parallelism)]
    if broker is not None:
        argv += ["--broker", broker.address]
    if kafka is not None:
        argv += ["--broker", kafka.bootstrap]  # kafka mode: the bootstrap servers
    if preload is not None:
        argv += ["--preload", str(preload)]  # JobRunner starts and fills its own broker
    if records is not None:
        argv += ["--records", str(records)]
    if duration_s is not None:
        argv += ["--duration-s", str(duration_s)]
    argv += list(extra)
    name = name or f"job-{workload}-{mode}-p{parallelism}"
    return Process(name, argv, os.path.join(workdir, f"{name}.log"), cpus=cpus)


def result(process, timeout):
    rc = process.wait(timeout)
    out = process.output()
    matches = _RESULT.findall(out)
    if rc != 0 or not matches:
        raise RuntimeError(f"{process.name} failed (exit {rc}), log {process.log_path}:\n"
                           f"{out[-3000:]}")
    fields = json.loads(matches[-1])
    fields["process_cpu_s"] = process.cpu()
    return fields
