"""Apache Kafka (KRaft, from the Maven Central artifacts built into kafka-server/target/lib) for
the kafka-mode baselines: the node runs in its own JVM, started through the benchmarks jar's
KafkaBroker launcher; KafkaProducerPerf is nearstream-perf's Kafka counterpart."""
import os
import re
import time

from . import paths
from .processes import Process, cpu_seconds

_READY = re.compile(r"^KAFKA bootstrap=(\S+) pid=(\d+)", re.M)
_RESULT = re.compile(r"^RESULT (.*)$", re.M)


class Kafka:
    def __init__(self, workdir, topics):
        """topics: {name: partitions}."""
        self.process = Process(
            "kafka", [paths.java(), "-cp", paths.benchmarks_jar(),
                      f"-Dnearstream.kafka.libs={os.path.join(paths.ROOT, 'kafka-server', 'target', 'lib')}",
                      "io.nearstream.benchmarks.kafka.KafkaBroker",
                      *[f"{t}:{p}" for t, p in topics.items()]],
            os.path.join(workdir, "kafka.log"))
        deadline = time.monotonic() + 180
        while True:
            m = _READY.search(self.process.output())
            if m:
                break
            if not self.process.running() or time.monotonic() > deadline:
                raise RuntimeError("Kafka did not start:\n" + self.process.output()[-3000:])
            time.sleep(0.2)
        self.bootstrap = m.group(1)
        self.node_pid = int(m.group(2))
        self._node_cpu = 0.0

    def cpu(self):
        """CPU seconds of the Kafka node's JVM (not the launcher)."""
        c = cpu_seconds(self.node_pid)
        if c is not None:
            self._node_cpu = c
        return self._node_cpu

    def produce(self, workdir, topic, producers, chunk_size, record_size=100, records=None,
                duration_s=None, name="kafka-perf"):
        argv = [paths.java(), "-Xmx1g", "-cp", paths.benchmarks_jar(),
                "io.nearstream.benchmarks.kafka.KafkaProducerPerf", "--broker", self.bootstrap,
                "--topic", topic, "--producers", str(producers), "--chunk-size", str(chunk_size),
                "--record-size", str(record_size)]
        if records is not None:
            argv += ["--records", str(records)]
        if duration_s is not None:
            argv += ["--duration-s", str(duration_s)]
        return Process(name, argv, os.path.join(workdir, f"{name}.log"))

    @staticmethod
    def produce_result(process, timeout):
        rc = process.wait(timeout)
        out = process.output()
        m = _RESULT.search(out)
        if rc != 0 or not m:
            raise RuntimeError(f"{process.name} failed (exit {rc}):\n{out[-2000:]}")
        fields = {}
        for kv in m.group(1).split():
            k, v = kv.split("=", 1)
            fields[k] = float(v)
        fields["cpu_s"] = process.cpu()
        return fields

    def stop(self):
        self.process.stop(grace=30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
