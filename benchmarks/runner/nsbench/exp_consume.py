"""Figs. 4-8 of the pull-vs-push co-location paper (Marcu and Bouvry, "Colocating Real-time Storage
and Processing"): producers and consumers at the same time on one broker; consumers are Flink jobs
with the pull or the push source (and, for Fig. 7-8, nearstream-perf's C++ pull consumers),
iterating and counting (Fig. 4, 8) or filtering (Fig. 5-7) records (100 bytes unless
--record-sizes says otherwise), swept over the producer chunk size and any list given for Np, Nc,
Ns, broker workers or record size (every combination). Each point starts a fresh broker; modes run one after the other at the same
point, so their ratio is measured side by side."""
import itertools
import os
import statistics

from . import concurrent, plots
from .results import Results
from .sizes import cpu_list, int_list, size_list

# Figure of the co-location paper -> defaults scaled to a 2-core machine (all overridable by flags).
PRESETS = {
    "count": dict(fig="Fig. 4", workload="count", consumers="pull,push", chunk_sizes="16K,64K,128K",
                  streamlets=4, workers=2, fetch="128K"),
    "filter": dict(fig="Fig. 5/6", workload="filter", consumers="pull,push",
                   chunk_sizes="16K,64K,128K", streamlets=4, workers=2, fetch="128K"),
    "constrained": dict(fig="Fig. 7", workload="filter", consumers="cpp-pull,pull,push",
                        chunk_sizes="16K,32K,64K", streamlets=4, workers=1, fetch="same"),
    "small-chunks": dict(fig="Fig. 8", workload="count", consumers="cpp-pull,pull,push",
                         chunk_sizes="1K,2K,4K", streamlets=4, workers=2, fetch="8x"),
}


PLOTS_NOTE = ("Plots: [{n}-consumers.png]({n}-consumers.png) (records/s the consumers read) "
              "and [{n}-producers.png]({n}-producers.png) (records/s the producers wrote beside "
              "each kind of consumer), over the chunk size; lines join the medians of the "
              "repetitions, dots are the single runs.")


def add_arguments_for(preset):
    d = PRESETS[preset]

    def add(p):
        p.add_argument("--consumers", default=d["consumers"],
                       help="cpp-pull, pull, push, push-view (push with view slots)")
        p.add_argument("--workload", default=d["workload"], choices=["count", "filter"])
        p.add_argument("--chunk-sizes", default=d["chunk_sizes"], help="producer chunk sizes CS")
        # Every sweep flag takes a comma-separated list; the run covers every combination.
        p.add_argument("--producers", default="2", help="Np values")
        p.add_argument("--parallelism", default="2", help="Nc values: source parallelism")
        p.add_argument("--streamlets", default=str(d["streamlets"]), help="Ns values")
        p.add_argument("--workers", default=str(d["workers"]), help="broker --workers values")
        p.add_argument("--record-sizes", default="100", help="record bytes values")
        p.add_argument("--fetch", default=d["fetch"],
                       help="consumer chunk size per streamlet: a size, 'same' (= CS) or 'Nx'")
        p.add_argument("--duration-s", type=int, default=8)
        p.add_argument("--repeat", type=int, default=1, help="repetitions of every point")
        p.add_argument("--broker-cpus", default=d.get("broker_cpus", ""),
                       help="CPUs the broker is pinned to, e.g. 0 or 0-3 (default: not pinned)")
        p.add_argument("--client-cpus", default=d.get("client_cpus", ""),
                       help="CPUs the producers and consumers are pinned to (default: not pinned)")
        p.add_argument("--consumer-cpus", default="",
                       help="CPUs the Flink consumer job is pinned to instead of --client-cpus, "
                            "e.g. 8-15 on a node where producers and consumers get their own "
                            "cores, as the paper's separate client nodes (C++ consumers share "
                            "the producers' process and stay on --client-cpus)")
        p.add_argument("--replication", default="",
                       help="replication factors R (values, e.g. 1,2): each point then runs on "
                            "two brokers kept in ZooKeeper, each --workers W, with an async "
                            "stream of factor R whose leaders alternate between them (R = 2: "
                            "each broker leads half and backs up the other half); empty: one "
                            "standalone broker, the paper's setting")
        p.add_argument("--push-nice", type=int, default=0,
                       help="broker --push-nice: 1-19 let appends go first on a busy broker")
        p.add_argument("--push-segment-files", default="on-view", choices=["on-view", "always"],
                       help="broker --push-segment-files: always puts every segment in a file "
                            "of --push-dir (a tmpfs), also for binary and pull consumers")
    return add


def _fetch_bytes(spec, cs):
    if spec == "same":
        return cs
    if spec.endswith("x"):
        return int(spec[:-1]) * cs
    return size_list(spec)[0]


def _settings(args):
    """Every combination of the swept values other than the chunk size, in a stable order."""
    replication = int_list(args.replication) if args.replication else [None]
    return list(itertools.product(int_list(args.producers), int_list(args.parallelism),
                                  int_list(args.streamlets), int_list(args.workers),
                                  int_list(args.record_sizes), replication))


def _label(np_, nc, ns, workers, record_bytes, replication):
    label = f"Np={np_} Nc={nc} Ns={ns} W={workers} RS={record_bytes}"
    return label if replication is None else f"{label} R={replication}"


def run_preset(preset, args, out_dir, workdir):
    d = PRESETS[preset]
    name = f"{preset}"
    settings = _settings(args)
    res = Results(out_dir, name, ["setting", "producers", "parallelism", "streamlets", "workers",
                                  "record_bytes", "chunk_kib", "consumer", "rep", "producer_rps",
                                  "consumer_rps", "broker_cpu_s_per_m", "consumer_cpu_s_per_m",
                                  "producer_cpu_s_per_m"])
    broker_cpus, client_cpus = cpu_list(args.broker_cpus), cpu_list(args.client_cpus)
    consumer_cpus = cpu_list(args.consumer_cpus)
    for np_, nc, ns, workers, record_bytes, replication in settings:
        for cs in size_list(args.chunk_sizes):
            for rep in range(args.repeat):
                for consumer in args.consumers.split(","):
                    r = concurrent.measure(workdir, consumer, args.workload, np_, cs, ns, nc,
                                           _fetch_bytes(args.fetch, cs), workers,
                                           args.duration_s, record_size=record_bytes,
                                           broker_cpus=broker_cpus, client_cpus=client_cpus,
                                           consumer_cpus=consumer_cpus,
                                           broker_extra=["--push-nice", str(args.push_nice),
                                                         "--push-segment-files",
                                                         args.push_segment_files],
                                           replication=replication)
                    m = max(r["consumed"], 1) / 1e6
                    res.add(setting=_label(np_, nc, ns, workers, record_bytes, replication),
                            producers=np_,
                            parallelism=nc, streamlets=ns, workers=workers,
                            record_bytes=record_bytes, chunk_kib=cs >> 10, consumer=consumer,
                            rep=rep, producer_rps=r["producer_rps"],
                            consumer_rps=r["consumer_rps"],
                            broker_cpu_s_per_m=r["broker_cpu_s"] / m,
                            consumer_cpu_s_per_m=r["consumer_cpu_s"] / m,
                            producer_cpu_s_per_m=r["producer_cpu_s"] / max(r["produced"], 1) * 1e6)
    notes = [f"{d['fig']} setting: producers (Np) and consumers of parallelism Nc at the same "
             f"time, Ns streamlets, broker --workers W, records of RS bytes (values swept: Np "
             f"{args.producers}, Nc {args.parallelism}, Ns {args.streamlets}, W {args.workers}, "
             f"RS {args.record_sizes}), consumer chunk {args.fetch}, {args.workload}, "
             f"{args.duration_s} s per point; medians of per-second samples."
             + (f" Replication R {args.replication}: two brokers kept in ZooKeeper, an async "
                "stream whose leaders alternate between them; broker CPU is both brokers'."
                if args.replication else ""),
             "CPU seconds per million records consumed: broker (all its threads, appends "
             "included) and consumer (the Flink job's JVM, or 0 for the C++ consumers that share "
             "the producers' process); producers' CPU seconds per million records produced (the "
             "nearstream-perf process, C++ consumers included for cpp-pull).",
             f"CPU pinning: broker {args.broker_cpus or 'not pinned'}, producers and consumers "
             f"{args.client_cpus or 'not pinned'}"
             + (f" (Flink consumers {args.consumer_cpus})" if args.consumer_cpus else "")
             + f"; broker --push-nice {args.push_nice}"
             + f", --push-segment-files {args.push_segment_files}."]
    notes += _ratios(res)
    notes += ["", PLOTS_NOTE.format(n=name)]
    res.markdown(f"{d['fig']} - {preset}", args.command, notes)
    draw(preset, res.csv_path, out_dir, args.workload)
    return res


def draw(preset, csv_path, out_dir, workload=None):
    """The two figures of a preset from its CSV: consumers' and producers' records/s over the
    chunk size, one line per consumer kind, one panel per setting when several were swept."""
    d = PRESETS[preset]
    base = os.path.join(out_dir, preset)
    plots.line_plot(csv_path, base + "-consumers.png", "chunk_kib", "consumer_rps", "consumer",
                    f"{d['fig']}: consumers ({workload or d['workload']} job, producers writing)",
                    xlabel="producer chunk size (KiB)", ylabel="records/s consumed (millions)",
                    logx=True, yscale=1e6, labels=plots.MODE_LABELS, panels="setting")
    plots.line_plot(csv_path, base + "-producers.png", "chunk_kib", "producer_rps", "consumer",
                    f"{d['fig']}: producers, by the consumers reading beside them",
                    xlabel="producer chunk size (KiB)", ylabel="records/s produced (millions)",
                    logx=True, yscale=1e6, labels=plots.PRODUCER_LABELS, panels="setting")


def _ratios(res):
    """push/pull ratios per setting and chunk size (medians over repetitions)."""
    lines = []
    settings = list(dict.fromkeys(r["setting"] for r in res.rows))
    for setting, cs in itertools.product(settings, sorted({r["chunk_kib"] for r in res.rows})):
        by = {}
        for r in res.rows:
            if r["chunk_kib"] == cs and r["setting"] == setting:
                by.setdefault(r["consumer"], []).append(r)
        def med(c, k):
            return statistics.median(x[k] for x in by[c])
        prefix = f"{setting}, " if len(settings) > 1 else ""
        for push in ("push", "push-view"):
            if push not in by or "pull" not in by:
                continue
            lines.append(
                f"- {prefix}CS {cs} KiB: {push}/pull consumer throughput "
                f"{med(push, 'consumer_rps') / max(med('pull', 'consumer_rps'), 1):.2f}x, "
                f"producers with {push} / with pull "
                f"{med(push, 'producer_rps') / max(med('pull', 'producer_rps'), 1):.2f}x, "
                f"broker CPU s/M {push}/pull "
                f"{med(push, 'broker_cpu_s_per_m') / max(med('pull', 'broker_cpu_s_per_m'), 1e-9):.2f}")
    return lines
