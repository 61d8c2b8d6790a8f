"""Iterate-and-count over a broker cluster: three brokers kept in ZooKeeper, one reporting the
Flink job's host (`--host localhost`) and two reporting other hosts, so that AUTO pushes the local
broker's streamlets and pulls the others' (docs/flink-connector.md, "Over a broker cluster"); PULL
over the same stream side by side. Records/s from the job's first record to its end; the share
of the records each path carried, from the brokers' own counters (records pushed by the local
broker, records fetched from each broker)."""
import statistics
from contextlib import ExitStack

from . import flinkjob, perf, plots
from .broker import Broker
from .results import Results
from .sizes import int_list, parse_size
from .zookeeper import ZooKeeper

HOSTS = ["localhost", "remote-2", "remote-3"]


def add_arguments(p):
    p.add_argument("--fill-s", type=int, default=10,
                   help="seconds nearstream-perf fills the stream for (one producer per broker)")
    p.add_argument("--parallelism", default="2", help="source parallelism values")
    p.add_argument("--modes", default="pull,auto")
    p.add_argument("--streamlets", type=int, default=6, help="two per broker")
    p.add_argument("--chunk-size", default="64K")
    p.add_argument("--workers", type=int, default=1, help="broker --workers")
    p.add_argument("--repeat", type=int, default=3)


def run(args, out_dir, workdir):
    res = Results(out_dir, "cluster-count",
                  ["parallelism", "mode", "rep", "records", "records_per_s", "pushed_share",
                   "pulled_share", "job_cpu_s_per_m", "brokers_cpu_s_per_m"])
    modes = args.modes.split(",")
    with ExitStack() as stack:
        zk = stack.enter_context(ZooKeeper(workdir))
        brokers = [stack.enter_context(Broker(
            workdir, workers=args.workers,
            extra=["--zookeeper", zk.connect, "--broker-id", str(i + 1), "--host", host]))
            for i, host in enumerate(HOSTS)]
        brokers[0].create_stream("bench", args.streamlets)
        fill = perf.start(_Bootstrap(brokers), workdir, "bench", len(brokers),
                          parse_size(args.chunk_size), 100, args.fill_s, name="fill")
        records = int(perf.result(fill, args.fill_s + 120)["produced"])
        for par in int_list(args.parallelism):
            for rep in range(args.repeat):
                for mode in modes:
                    before = [b.stats() for b in brokers]
                    cpu0 = [b.cpu() for b in brokers]
                    job = flinkjob.start(workdir, "count", mode, "bench", par,
                                         broker=_Bootstrap(brokers), records=records)
                    r = flinkjob.result(job, 1800)
                    after = [b.stats() for b in brokers]
                    brokers_cpu = sum(b.cpu() - c for b, c in zip(brokers, cpu0))
                    pushed = sum(_delta(a, b, "nearstream_push_records_total")
                                 for a, b in zip(after, before))
                    pulled = sum(_delta(a, b, "nearstream_fetch_records_total")
                                 for a, b in zip(after, before))
                    m = r["records"] / 1e6
                    res.add(parallelism=par, mode=mode, rep=rep, records=r["records"],
                            records_per_s=r["records_per_s"],
                            pushed_share=pushed / r["records"], pulled_share=pulled / r["records"],
                            job_cpu_s_per_m=r["job_cpu_s"] / m,
                            brokers_cpu_s_per_m=brokers_cpu / m)
    notes = [f"{records:,} records of 100 bytes in {args.streamlets} streamlets over 3 brokers "
             f"(hosts {', '.join(HOSTS)}; the job runs on localhost), chunks of "
             f"{args.chunk_size}; medians over {args.repeat} repetitions below. pushed_share / "
             "pulled_share: records the brokers pushed / served by fetches during the job, over "
             "the records the job counted (a push ring may carry a slot more than the job reads "
             "before its stop position)."]
    notes += _ratios(res)
    res.markdown("Iterate-and-count over a broker cluster: AUTO (push from the local broker, "
                 "pull from the others) vs PULL", args.command, notes)
    draw(res.csv_path, out_dir)
    return res


class _Bootstrap:
    """The brokers as the job's and nearstream-perf's --broker: their bootstrap list."""

    def __init__(self, brokers):
        self.address = ",".join(b.address for b in brokers)


def _delta(after, before, name):
    return after.get(name, 0) - before.get(name, 0)


def _ratios(res):
    lines = []
    for par in sorted({r["parallelism"] for r in res.rows}):
        med = {}
        for mode in {r["mode"] for r in res.rows}:
            rows = [r for r in res.rows if r["parallelism"] == par and r["mode"] == mode]
            med[mode] = {k: statistics.median(r[k] for r in rows)
                         for k in ("records_per_s", "pushed_share", "job_cpu_s_per_m")}
        if "auto" in med and "pull" in med:
            lines.append(
                f"- p={par}: auto/pull records/s "
                f"{med['auto']['records_per_s'] / med['pull']['records_per_s']:.2f}x; auto "
                f"pushed {100 * med['auto']['pushed_share']:.0f} % of the records; job CPU s "
                f"per M records pull/auto "
                f"{med['pull']['job_cpu_s_per_m'] / med['auto']['job_cpu_s_per_m']:.2f}x")
    return lines


def draw(csv_path, out_dir):
    """The job's records/s per mode."""
    plots.bar_plot(csv_path, f"{out_dir}/cluster-count.png", "mode",
                   [("records_per_s", "records/s (millions)", 1e6),
                    ("pushed_share", "share of records pushed", 1.0)],
                   "Iterate-and-count over 3 brokers, one on the job's host",
                   labels=plots.MODE_LABELS)
