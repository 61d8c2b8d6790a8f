"""The benchmarks jar's small Java tools (producers, table writer, summaries), run to completion
with their JSON line parsed. Parallel GC, as the jobs: the producers allocate an array per event
and want throughput, not short pauses."""
import json
import os

from . import paths
from .processes import Process


def run(workdir, name, main_class, args, timeout, heap="1g", jvm_args=()):
    """Runs `main_class args`; returns the last line of its output that parses as JSON (or None
    when there is none) with the process's CPU seconds added as `process_cpu_s`, failing with the
    log tail on a non-zero exit."""
    # Heap committed and touched at start, as the jobs' (flinkjob.py).
    argv = [paths.java(), f"-Xmx{heap}", f"-Xms{heap}", "-XX:+AlwaysPreTouch",
            "-XX:+UseParallelGC", *jvm_args, "-cp",
            paths.benchmarks_jar(), main_class, *map(str, args)]
    p = Process(name, argv, os.path.join(workdir, f"{name}.log"))
    rc = p.wait(timeout)
    out = p.output()
    if rc != 0:
        raise RuntimeError(f"{name} failed (exit {rc}), log {p.log_path}:\n{out[-3000:]}")
    p.stop()
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            result = json.loads(line)
            if isinstance(result, dict):
                result["process_cpu_s"] = p.cpu()
            return result
    return None

