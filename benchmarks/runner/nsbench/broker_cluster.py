"""A broker cluster for one experiment point: ZooKeeper and N brokers kept in it (docs/cluster.md),
each with a data directory of its own, on this machine."""
import tempfile
import time
from contextlib import ExitStack

from .broker import Broker
from .zookeeper import ZooKeeper


class Bootstrap:
    """Brokers as a client's --broker: their bootstrap list."""

    def __init__(self, brokers):
        self.address = ",".join(b.address for b in brokers)


class BrokerCluster:
    """Context manager: ZooKeeper and `count` brokers (ids 1..count), started and registered."""

    def __init__(self, workdir, count, workers=1, session_ms=6000, cpus=None, extra=()):
        self._stack = ExitStack()
        try:
            zk = self._stack.enter_context(ZooKeeper(workdir))
            self.brokers = []
            for i in range(count):
                data = tempfile.mkdtemp(prefix="data-", dir=workdir)
                self.brokers.append(self._stack.enter_context(Broker(
                    workdir, workers=workers, cpus=cpus,
                    extra=["--zookeeper", zk.connect, "--broker-id", str(i + 1), "--data-dir",
                           data, "--zookeeper-session-ms", str(session_ms), *extra])))
            self._await_registered(count)
        except BaseException:
            self._stack.close()
            raise
        self.address = Bootstrap(self.brokers).address

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._stack.close()
        return False

    def cpu(self):
        """The brokers' CPU seconds (user + system) so far, all of them together."""
        return sum(b.cpu() for b in self.brokers)

    def create_stream(self, name, streamlets, retention_bytes, replication=1, durability="async"):
        """A durable stream (a replicated one must be), streamlets placed round-robin."""
        self.brokers[0].cli("create", name, "--streamlets", str(streamlets), "--durability",
                            durability, "--replication", str(replication), "--retention-bytes",
                            str(retention_bytes))

    def _await_registered(self, count):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            lines = self.brokers[0].cli("cluster").splitlines()
            if sum(1 for line in lines if line.startswith("  ") and "host" in line) >= count:
                return
            time.sleep(0.1)
        raise RuntimeError(f"broker {self.brokers[0].address} does not see {count} brokers")


def replica_set(broker, stream, streamlet):
    """(leader, in-sync set) of a replicated streamlet, as `nearstream cluster` prints them
    ("streamlet I  leader L  epoch E  replicas R,..  isr S,..")."""
    for line in broker.cli("cluster", stream).splitlines():
        parts = line.split()
        if parts[:2] == ["streamlet", str(streamlet)] and "leader" in parts and "isr" in parts:
            leader = int(parts[parts.index("leader") + 1])
            isr = [int(b) for b in parts[parts.index("isr") + 1].split(",")]
            return leader, isr
    raise RuntimeError(f"no replica set for streamlet {streamlet} of stream {stream}")

