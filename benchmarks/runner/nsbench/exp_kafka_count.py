"""Iterate-and-count over pre-loaded records: the Flink job with the Nearstream pull source, the
Nearstream push source and Flink's Kafka source (Kafka 4, KRaft, same host), side by side at each
source parallelism. Records/s from the job's first record to its end; CPU seconds per million
records of the job's JVM and of the broker (nearstreamd, or the Kafka node's JVM) while it ran."""
import statistics

from . import flinkjob, plots
from .kafka import Kafka
from .results import Results
from .sizes import int_list, parse_size

TOPIC = "bench"


PLOT_NOTE = ("Plot: [kafka-count.png](kafka-count.png), records/s over the source parallelism; "
             "lines join the medians of the repetitions, dots are the single runs.")


def add_arguments(p):
    p.add_argument("--records", type=int, default=10_000_000, help="records pre-loaded (100 B)")
    p.add_argument("--parallelism", default="1,2", help="source parallelism values")
    p.add_argument("--modes", default="pull,push,kafka")
    p.add_argument("--streamlets", type=int, default=4, help="streamlets = Kafka partitions")
    p.add_argument("--chunk-size", default="64K", help="producer chunk / Kafka batch.size")
    p.add_argument("--workers", type=int, default=2, help="nearstreamd --workers")
    p.add_argument("--repeat", type=int, default=3)


def run(args, out_dir, workdir):
    res = Results(out_dir, "kafka-count", ["parallelism", "mode", "rep", "records",
                                           "records_per_s", "job_cpu_s_per_m",
                                           "broker_cpu_s_per_m", "total_cpu_s_per_m"])
    modes = args.modes.split(",")
    kafka = None
    try:
        if "kafka" in modes:
            kafka = Kafka(workdir, {TOPIC: args.streamlets})
            p = kafka.produce(workdir, TOPIC, 2, parse_size(args.chunk_size), 100,
                              records=args.records)
            Kafka.produce_result(p, 1800)
        for par in int_list(args.parallelism):
            for rep in range(args.repeat):
                for mode in modes:
                    if mode == "kafka":
                        cpu0 = kafka.cpu()
                        job = flinkjob.start(workdir, "count", "kafka", TOPIC, par, kafka=kafka,
                                             records=args.records)
                        r = flinkjob.result(job, 1800)
                        broker_cpu = kafka.cpu() - cpu0
                    else:
                        job = flinkjob.start(workdir, "count", mode, "bench", par,
                                             preload=args.records,
                                             extra=["--workers", str(args.workers),
                                                    "--streamlets", str(args.streamlets),
                                                    "--chunk-bytes",
                                                    str(parse_size(args.chunk_size))])
                        r = flinkjob.result(job, 1800)
                        broker_cpu = r["broker_cpu_s"]
                    m = r["records"] / 1e6
                    res.add(parallelism=par, mode=mode, rep=rep, records=r["records"],
                            records_per_s=r["records_per_s"],
                            job_cpu_s_per_m=r["job_cpu_s"] / m,
                            broker_cpu_s_per_m=broker_cpu / m,
                            total_cpu_s_per_m=(r["job_cpu_s"] + broker_cpu) / m)
    finally:
        if kafka is not None:
            kafka.stop()
    notes = [f"{args.records:,} records of 100 bytes in {args.streamlets} streamlets/partitions, "
             f"chunk/batch {args.chunk_size}; medians over {args.repeat} repetitions below.",
             "CPU s/M: the job's JVM while the job ran, and the broker's process (nearstreamd or "
             "the Kafka node's JVM) over the same time."]
    notes += _ratios(res)
    notes += ["", PLOT_NOTE]
    res.markdown("Iterate-and-count: Nearstream pull and push vs Flink's Kafka source",
                 args.command, notes)
    draw(res.csv_path, out_dir)
    return res


def draw(csv_path, out_dir):
    """The job's records/s over the source parallelism, one line per source."""
    plots.line_plot(csv_path, f"{out_dir}/kafka-count.png", "parallelism", "records_per_s",
                    "mode", "Iterate-and-count: records/s by source (a fresh JVM per job)",
                    xlabel="source parallelism", ylabel="records/s (millions)", yscale=1e6,
                    labels=plots.MODE_LABELS)


def _ratios(res):
    lines = []
    for par in sorted({r["parallelism"] for r in res.rows}):
        med = {}
        for mode in {r["mode"] for r in res.rows}:
            rows = [r for r in res.rows if r["parallelism"] == par and r["mode"] == mode]
            med[mode] = {k: statistics.median(r[k] for r in rows)
                         for k in ("records_per_s", "total_cpu_s_per_m")}
        for other in ("kafka", "pull"):
            if "push" in med and other in med:
                lines.append(
                    f"- p={par}: push/{other} records/s "
                    f"{med['push']['records_per_s'] / med[other]['records_per_s']:.2f}x; "
                    f"{other}/push CPU s per M records "
                    f"{med[other]['total_cpu_s_per_m'] / med['push']['total_cpu_s_per_m']:.2f}x "
                    f"(push {med['push']['total_cpu_s_per_m']:.3f}, {other} "
                    f"{med[other]['total_cpu_s_per_m']:.3f})")
    return lines
