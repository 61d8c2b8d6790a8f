"""Broker cluster: aggregate ingestion and consumption over 1, 2 and 3 brokers kept in ZooKeeper
(docs/cluster.md), one nearstream-perf producer and one pull consumer per broker, each working
that broker's streamlets over its own connection. On a machine of few cores the brokers share
them, so the figure that should hold steady as brokers are added is each broker's CPU seconds per
million records it stores and serves, not the aggregate rate."""
from contextlib import ExitStack

from . import perf, plots
from .broker import Broker
from .broker_cluster import Bootstrap
from .results import Results
from .sizes import int_list, size_list
from .zookeeper import ZooKeeper


def add_arguments(p):
    p.add_argument("--brokers", default="1,2,3", help="broker counts")
    p.add_argument("--streamlets", type=int, default=6,
                   help="streamlets of the stream (a multiple of every broker count spreads it "
                        "evenly)")
    p.add_argument("--chunk-size", default="64K")
    p.add_argument("--record-size", type=int, default=100)
    p.add_argument("--workers", type=int, default=1, help="broker --workers")
    p.add_argument("--duration-s", type=int, default=10)
    p.add_argument("--retention", default="256M", help="per streamlet, bounds broker memory")
    p.add_argument("--repetitions", type=int, default=1)


def run(args, out_dir, workdir):
    res = Results(out_dir, "cluster", ["brokers", "repetition", "producer_rps", "consumer_rps",
                                       "produced", "broker_cpu_s", "cpu_s_per_m_per_broker"])
    chunk = size_list(args.chunk_size)[0]
    for repetition in range(args.repetitions):
        for n in int_list(args.brokers):
            with ExitStack() as stack:
                zk = stack.enter_context(ZooKeeper(workdir))
                brokers = [stack.enter_context(Broker(
                    workdir, workers=args.workers,
                    extra=["--zookeeper", zk.connect, "--broker-id", str(i + 1)]))
                    for i in range(n)]
                brokers[0].create_stream("cluster", args.streamlets,
                                         retention_bytes=args.retention)
                cpu0 = [b.cpu() for b in brokers]
                p = perf.start(Bootstrap(brokers), workdir, "cluster", n, chunk,
                               args.record_size, args.duration_s, consumers=n)
                r = perf.result(p, args.duration_s + 60)
                cpu = sum(b.cpu() - c for b, c in zip(brokers, cpu0))
            produced = r["produced"]
            # Every record is stored and served by one broker: per broker, its CPU over its
            # records, averaged = the brokers' CPU over all records.
            per_m = cpu / (produced / 1e6) if produced else 0.0
            res.add(brokers=n, repetition=repetition, producer_rps=r["producer_rps"],
                    consumer_rps=r["consumer_rps"], produced=int(produced), broker_cpu_s=cpu,
                    cpu_s_per_m_per_broker=per_m)
    res.markdown("Broker cluster: 1, 2 and 3 brokers", args.command,
                 [f"{args.streamlets} streamlets placed round-robin over the brokers, "
                  f"{args.record_size}-byte records in {args.chunk_size} chunks, one producer "
                  "and one consumer per broker (nearstream-perf over the bootstrap list), "
                  f"{args.duration_s} s per point, broker --workers {args.workers}; all "
                  "processes on one machine. producer_rps / consumer_rps: median records/s of "
                  "the run's seconds; cpu_s_per_m_per_broker: the brokers' CPU seconds (user + "
                  "system, from /proc) per million records, each record stored and served by "
                  "one broker."])
    draw(res.csv_path, out_dir)
    return res


def draw(csv_path, out_dir):
    """Per broker count: CPU seconds per million records per broker, and the aggregate rates."""
    plots.bar_plot(csv_path, f"{out_dir}/cluster.png", "brokers",
                   [("cpu_s_per_m_per_broker", "CPU s per million records, per broker", 1.0),
                    ("producer_rps", "records/s appended (millions)", 1e6),
                    ("consumer_rps", "records/s consumed (millions)", 1e6)],
                   "Broker cluster: 1, 2, 3 brokers on one machine",
                   labels={"1": "1 broker", "2": "2 brokers", "3": "3 brokers"})
