"""How a benchmark job reads its input, per source mode: one function per mode that starts the
JobRunner JVM for a workload, so an experiment runs its modes from a list and a new mode (e.g.
kafka, whose job needs the Kafka bootstrap servers rather than the broker) is one more entry."""
import json

from . import flinkjob


def _nearstream(workdir, workload, mode, stream, parallelism, inputs, **kw):
    return flinkjob.start(workdir, workload, mode, stream, parallelism, broker=inputs["broker"],
                          **kw)


def _kafka(workdir, workload, mode, stream, parallelism, inputs, **kw):
    # Flink's Kafka source: --broker names the Kafka node's bootstrap servers, --stream the topic.
    return flinkjob.start(workdir, workload, mode, stream, parallelism, kafka=inputs["kafka"], **kw)


# mode -> start(workdir, workload, mode, stream, parallelism, inputs, records=..., duration_s=...,
# extra=..., name=...); `inputs` holds what the modes read from ({"broker": Broker, ...}).
STARTERS = {
    "pull": _nearstream,
    "push": _nearstream,
    "auto": _nearstream,
    "kafka": _kafka,
}


def start(mode, workdir, workload, stream, parallelism, inputs, **kw):
    if mode not in STARTERS:
        raise SystemExit(f"unknown mode '{mode}', expected one of {sorted(STARTERS)}")
    return STARTERS[mode](workdir, workload, mode, stream, parallelism, inputs, **kw)


def bounded_result(process, timeout):
    """The JSON line a bounded JobRunner run prints last, with the JVM's CPU seconds added."""
    rc = process.wait(timeout)
    out = process.output()
    lines = [l for l in out.splitlines() if l.startswith('{"workload"')]
    if rc != 0 or not lines:
        raise RuntimeError(f"{process.name} failed (exit {rc}), log {process.log_path}:\n"
                           f"{out[-3000:]}")
    fields = json.loads(lines[-1])
    fields["process_cpu_s"] = process.cpu()
    return fields
