"""One measurement point of the consumer experiments (Figs. 4-8 of the pull-vs-push co-location
paper, Marcu and Bouvry): producers (nearstream-perf) and
consumers running at the same time against one broker, consumers being a Flink job (pull or push
source) or nearstream-perf's C++ pull consumers. Throughput figures are medians of per-second
samples taken while both ran; CPU seconds are read from /proc for broker, producers and job."""
import statistics
import time
from contextlib import ExitStack

from . import flinkjob, perf
from .broker import Broker
from .broker_cluster import BrokerCluster

# How long a Flink job gets to start its MiniCluster before the producers start.
JOB_START_TIMEOUT_S = 120


def _median_in_window(samples, start_ms, end_ms):
    values = [n for t, n in samples if start_ms <= t <= end_ms]
    return statistics.median(values) if values else 0.0


def measure(workdir, consumer, workload, producers, chunk_size, streamlets, parallelism,
            fetch_bytes, workers, duration_s, record_size=100, retention="512M",
            push_slot_bytes=None, broker_cpus=None, client_cpus=None, consumer_cpus=None,
            broker_extra=(), replication=None, cluster_brokers=2):
    """consumer: 'cpp-pull', 'pull', 'push' or 'push-view' (push with binary_view slots, records
    described in the broker's segment files instead of copied; docs/shm-layout.md). broker_cpus / client_cpus: CPU numbers the broker /
    the producers and consumers are pinned to (None: not pinned); consumer_cpus: the Flink job's
    own CPUs instead of client_cpus (the C++ consumers share the producers' process, so they stay
    on client_cpus); broker_extra: more nearstreamd flags. replication: None for one standalone
    broker; otherwise a cluster of `cluster_brokers` brokers (each with `workers`) and a durable
    (async) stream of that replication factor, its leaders spread over the brokers, whose CPU
    seconds are added up. Returns a dict of figures."""
    with ExitStack() as stack:
        if replication is None:
            broker = stack.enter_context(
                Broker(workdir, workers=workers, cpus=broker_cpus, extra=broker_extra))
            broker.create_stream("bench", streamlets, retention_bytes=retention)
        else:
            broker = stack.enter_context(BrokerCluster(
                workdir, cluster_brokers, workers=workers, cpus=broker_cpus, extra=broker_extra))
            broker.create_stream("bench", streamlets, retention, replication=replication)
        cpu0 = broker.cpu()
        if consumer == "cpp-pull":
            p = perf.start(broker, workdir, "bench", producers, chunk_size, record_size,
                           duration_s, consumers=parallelism, fetch_bytes=fetch_bytes,
                           cpus=client_cpus)
            r = perf.result(p, duration_s + 120)
            return dict(producer_rps=r["producer_rps"], consumer_rps=r["consumer_rps"],
                        broker_cpu_s=broker.cpu() - cpu0, producer_cpu_s=r["cpu_s"],
                        consumer_cpu_s=0.0, consumed=r["consumed"], produced=r["produced"])
        extra = ["--fetch-bytes", str(fetch_bytes)]
        if push_slot_bytes:
            extra += ["--push-slot-bytes", str(push_slot_bytes)]
        mode = consumer
        if consumer == "push-view":
            mode, extra = "push", extra + ["--push-slot-format", "binary-view"]
        job = flinkjob.start(workdir, workload, mode, "bench", parallelism, broker=broker,
                             duration_s=duration_s + JOB_START_TIMEOUT_S, extra=extra,
                             name=f"job-{workload}-{consumer}",
                             cpus=consumer_cpus if consumer_cpus else client_cpus)
        _wait_for_line(job, "SOURCE RUNNING", JOB_START_TIMEOUT_S)
        job_cpu0 = job.cpu()
        cpu0 = broker.cpu()
        start_ms = time.time() * 1000
        p = perf.start(broker, workdir, "bench", producers, chunk_size, record_size, duration_s,
                       cpus=client_cpus)
        r = perf.result(p, duration_s + 120)
        end_ms = time.time() * 1000
        broker_cpu = broker.cpu() - cpu0
        job_cpu = job.cpu() - job_cpu0
        job.stop()  # the job's samples are in its log already
        samples = _samples(job.output())
        # Skip the first and the last second, as nearstream-perf does.
        consumer_rps = _median_in_window(samples, start_ms + 1000, end_ms - 1000)
        return dict(producer_rps=r["producer_rps"], consumer_rps=consumer_rps,
                    broker_cpu_s=broker_cpu, producer_cpu_s=r["cpu_s"], consumer_cpu_s=job_cpu,
                    consumed=sum(n for t, n in samples if start_ms <= t <= end_ms + 5000),
                    produced=r["produced"])


def _wait_for_line(process, marker, timeout):
    deadline = time.monotonic() + timeout
    while marker not in process.output():
        if not process.running():
            raise RuntimeError(f"{process.name} exited before '{marker}':\n{process.output()[-3000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{process.name}: no '{marker}' within {timeout} s")
        time.sleep(0.1)


def _samples(output):
    """SAMPLE <epoch_ms> <records> lines: records counted by the job in the second ending then."""
    out = []
    for line in output.splitlines():
        if line.startswith("SAMPLE "):
            _, t, n = line.split()
            out.append((float(t), float(n)))
    return out
