"""A ZooKeeper server for one experiment point: the jars the zookeeper-server module assembles
(zookeeper-server/target/lib), in a JVM of its own, on a free port of 127.0.0.1."""
import os
import socket
import tempfile
import time

from . import paths
from .processes import Process


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ruok(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False


class ZooKeeper:
    def __init__(self, workdir):
        lib = os.path.join(paths.ROOT, "zookeeper-server", "target", "lib")
        if not os.path.isdir(lib):
            raise SystemExit(f"{lib} not found: build first (mvn -B package -DskipTests)")
        self.dir = tempfile.mkdtemp(prefix="zookeeper-", dir=workdir)
        self.port = _free_port()
        cfg = os.path.join(self.dir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write(f"tickTime=500\ndataDir={self.dir}/data\nclientPortAddress=127.0.0.1\n"
                    f"clientPort={self.port}\nadmin.enableServer=false\n"
                    "4lw.commands.whitelist=ruok\nforceSync=no\n")
        self.process = Process(
            "zookeeper",
            [paths.java(), "-Xmx256m", "-cp", os.path.join(lib, "*"),
             "org.apache.zookeeper.server.ZooKeeperServerMain", cfg],
            os.path.join(self.dir, "zookeeper.log"))
        deadline = time.monotonic() + 30
        while not _ruok(self.port):
            if not self.process.running() or time.monotonic() > deadline:
                raise RuntimeError("ZooKeeper did not start:\n" + self.process.output())
            time.sleep(0.1)
        self.connect = f"127.0.0.1:{self.port}/nearstream"

    def stop(self):
        self.process.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
