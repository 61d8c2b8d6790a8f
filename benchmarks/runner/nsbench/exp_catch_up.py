"""A follower catching up after a crash, by leader epoch vs whole: two brokers kept in ZooKeeper,
one streamlet with replication 2. Producers fill it, the follower is killed (SIGKILL), producers
write on the leader alone for a while, and the follower is started again: the time until it is
back in the in-sync set, the bytes it copied from the leader and kept of its own copy, and its
CPU seconds meanwhile. `epoch` keeps what the leader's epoch history proves equal to the
leader's copy and copies the rest (docs/protocol.md, "Catching up by leader epoch"); `whole`
(broker flag --catch-up whole) copies the whole streamlet, as followers did before."""
import os
import signal
import tempfile
import time
from contextlib import ExitStack

from . import perf
from .broker import Broker
from .broker_cluster import Bootstrap, replica_set
from .results import Results
from .sizes import parse_size
from .zookeeper import ZooKeeper

STREAM = "catchup"


def add_arguments(p):
    p.add_argument("--modes", default="epoch,whole")
    p.add_argument("--fill-s", type=int, default=20,
                   help="seconds of producing before the follower is killed")
    p.add_argument("--missed-s", type=int, default=3,
                   help="seconds of producing while the follower is down")
    p.add_argument("--chunk-size", default="64K")
    p.add_argument("--record-size", type=int, default=100)
    p.add_argument("--producers", type=int, default=1)
    p.add_argument("--workers", type=int, default=1, help="broker --workers")
    p.add_argument("--session-ms", type=int, default=6000)
    p.add_argument("--repetitions", type=int, default=3)


def _point(workdir, args, mode):
    with ExitStack() as stack:
        zk = stack.enter_context(ZooKeeper(workdir))

        def start(broker_id, data):
            return Broker(workdir, workers=args.workers, extra=[
                "--zookeeper", zk.connect, "--broker-id", str(broker_id), "--data-dir", data,
                "--zookeeper-session-ms", str(args.session_ms), "--catch-up", mode])

        data = [tempfile.mkdtemp(prefix="data-", dir=workdir) for _ in range(2)]
        brokers = [start(i + 1, data[i]) for i in range(2)]
        stack.callback(lambda: [b.stop() for b in brokers])
        time.sleep(1)
        brokers[0].cli("create", STREAM, "--streamlets", "1", "--durability", "async",
                       "--replication", "2", "--retention-bytes", "64G")
        chunk = parse_size(args.chunk_size)
        perf.result(perf.start(Bootstrap(brokers), workdir, STREAM, args.producers, chunk,
                               args.record_size, args.fill_s, consumers=0), args.fill_s + 60)
        leader, _ = replica_set(brokers[0], STREAM, 0)
        follower = 3 - leader
        os.kill(brokers[follower - 1].process.pid, signal.SIGKILL)
        brokers[follower - 1].stop()
        perf.result(perf.start(brokers[leader - 1], workdir, STREAM, args.producers, chunk,
                               args.record_size, args.missed_s, consumers=0), args.missed_s + 60)
        started = time.monotonic()
        brokers[follower - 1] = start(follower, data[follower - 1])
        deadline = started + 600
        while follower not in replica_set(brokers[leader - 1], STREAM, 0)[1]:
            if time.monotonic() > deadline:
                raise RuntimeError("the follower did not catch up in 600 s")
            time.sleep(0.05)
        seconds = time.monotonic() - started
        stats = brokers[follower - 1].stats()
        return {"catch_up_s": seconds,
                "copied_mb": stats.get("nearstream_catch_up_copied_bytes_total", 0) / 1e6,
                "kept_mb": stats.get("nearstream_catch_up_kept_bytes_total", 0) / 1e6,
                "follower_cpu_s": brokers[follower - 1].cpu()}


def run(args, out_dir, workdir):
    res = Results(out_dir, "catch_up", ["mode", "repetition", "catch_up_s", "copied_mb",
                                        "kept_mb", "follower_cpu_s"])
    modes = args.modes.split(",")
    for repetition in range(args.repetitions):
        for mode in modes:
            res.add(mode=mode, repetition=repetition, **_point(workdir, args, mode))
    res.markdown(
        "A follower catching up: by leader epoch vs the whole streamlet", args.command,
        [f"Two brokers (--workers {args.workers}) and ZooKeeper on one machine; one streamlet, "
         f"replication 2, durability async. {args.producers} nearstream-perf producer(s) "
         f"({args.record_size}-byte records, {args.chunk_size} chunks) fill it for "
         f"{args.fill_s} s, the follower is killed (SIGKILL), they write {args.missed_s} s more "
         "on the leader alone, then the follower starts again. catch_up_s: from its start to "
         "its return to the in-sync set (it starts, registers, reads the cluster and catches "
         "up); copied_mb / kept_mb: its catch-up counters; follower_cpu_s: its CPU seconds "
         "(user + system) from its start. Modes alternate within each repetition."])
    return res
