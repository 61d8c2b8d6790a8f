"""A nearstreamd process for one experiment point: its own data and push-region directories,
removed (with anything a crashed consumer left in them) when it stops."""
import os
import shutil
import subprocess
import tempfile
import time

from . import paths
from .processes import Process


class Broker:
    def __init__(self, workdir, workers=2, push_threads=1, extra=(), cpus=None):
        self.dir = tempfile.mkdtemp(prefix="broker-", dir=workdir)
        # Push regions live in a directory of their own under /dev/shm, so cleanup is one rmtree.
        self.push_dir = tempfile.mkdtemp(prefix="nsbench-", dir="/dev/shm")
        port_file = os.path.join(self.dir, "port")
        self.process = Process(
            "nearstreamd",
            [paths.binary("nearstreamd"), "--listen", "127.0.0.1:0", "--port-file", port_file,
             "--workers", str(workers), "--push-threads", str(push_threads),
             "--push-dir", self.push_dir, *extra],
            os.path.join(self.dir, "broker.log"), cpus=cpus)
        deadline = time.monotonic() + 30
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if not self.process.running() or time.monotonic() > deadline:
                raise RuntimeError("nearstreamd did not start:\n" + self.process.output())
            time.sleep(0.01)
        self.address = "127.0.0.1:" + open(port_file).read().strip()

    def cli(self, *args):
        out = subprocess.run([paths.binary("nearstream"), "--broker", self.address, *args],
                             check=True, capture_output=True, text=True)
        return out.stdout

    def create_stream(self, name, streamlets, segment_bytes=None, retention_bytes=None):
        args = ["create", name, "--streamlets", str(streamlets)]
        if segment_bytes:
            args += ["--segment-bytes", str(segment_bytes)]
        if retention_bytes:
            args += ["--retention-bytes", str(retention_bytes)]
        self.cli(*args)

    def stats(self):
        values = {}
        for line in self.cli("stats").splitlines():
            parts = line.rsplit(" ", 1)
            if len(parts) == 2 and parts[1].isdigit():
                values[parts[0]] = int(parts[1])
        return values

    def cpu(self):
        return self.process.cpu()

    def stop(self):
        self.process.stop()
        shutil.rmtree(self.push_dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
