"""nearstream-perf producers (and C++ pull consumers) as one process, its RESULT line parsed."""
import os
import re

from . import paths
from .processes import Process

_RESULT = re.compile(r"^RESULT (.*)$", re.M)


def start(broker, workdir, stream, producers, chunk_size, record_size=100, duration_s=10,
          consumers=0, inflight=4, fetch_bytes=None, rate=0, name="perf", cpus=None,
          txn_chunks=0, all_streamlets=False):
    """txn_chunks > 0: the producers write transactions of that many chunks per streamlet
    (nearstream-perf --txn-chunks), up to `inflight` TxnAppends in flight, every other request
    one at a time. all_streamlets: each request carries one chunk for every streamlet its broker
    leads (KerA's request)."""
    argv = [paths.binary("nearstream-perf"), "--broker", broker.address, "--stream", stream,
            "--producers", str(producers), "--chunk-size", str(chunk_size),
            "--record-size", str(record_size), "--duration-s", str(duration_s),
            "--consumers", str(consumers), "--inflight", str(inflight), "--rate", str(rate)]
    if fetch_bytes:
        argv += ["--fetch-bytes", str(fetch_bytes)]
    if txn_chunks:
        argv += ["--txn-chunks", str(txn_chunks)]
    if all_streamlets:
        argv += ["--all-streamlets"]
    return Process(name, argv, os.path.join(workdir, f"{name}.log"), cpus=cpus)


def result(process, timeout):
    """Waits for the process and returns its RESULT fields (numbers as floats) + cpu_s."""
    rc = process.wait(timeout)
    out = process.output()
    m = _RESULT.search(out)
    if rc != 0 or not m:
        raise RuntimeError(f"{process.name} failed (exit {rc}):\n{out[-2000:]}")
    fields = {}
    for kv in m.group(1).split():
        k, v = kv.split("=", 1)
        try:
            fields[k] = float(v)
        except ValueError:
            fields[k] = v
    fields["cpu_s"] = process.cpu()
    return fields
