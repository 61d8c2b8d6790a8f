"""Flink sinks side by side: the Nearstream sink under at-least-once and exactly-once and Flink's
KafkaSink under both against a local Kafka node, a DataGeneratorSource job of 100-byte records with
1 s checkpoints, every sink run R times interleaved. Records/s, CPU seconds per million records (the
job's JVM and the sink's broker) and, for Nearstream exactly-once, checkpoint completion to
visible-to-readers (p50/p99). Runs io.nearstream.benchmarks.sink.SinkThroughputBenchmark in a JVM
of its own (it starts nearstreamd, Kafka and a MiniCluster itself) and draws sink-throughput.png
from its CSV."""
import os
import shlex

from . import paths, plots
from .processes import Process
from .sizes import parse_size

MAIN = "io.nearstream.benchmarks.sink.SinkThroughputBenchmark"

LABELS = {"nearstream-alo": "Nearstream\nALO", "nearstream-eo": "Nearstream\nEO",
          "kafka-alo": "KafkaSink\nALO", "kafka-eo": "KafkaSink\nEO"}


def add_arguments(p):
    p.add_argument("--sinks", default="nearstream-alo,nearstream-eo,kafka-alo,kafka-eo",
                   help="in the order each repetition runs them; 'discard' adds a baseline")
    p.add_argument("--repetitions", type=int, default=2)
    p.add_argument("--warmup-s", type=int, default=5, help="after the job's first record")
    p.add_argument("--measure-s", type=int, default=25, help="the measurement window")
    p.add_argument("--checkpoint-ms", type=int, default=1000)
    p.add_argument("--record-bytes", type=int, default=100)
    p.add_argument("--parallelism", type=int, default=1)
    p.add_argument("--streamlets", type=int, default=4, help="streamlets = Kafka partitions")
    p.add_argument("--workers", type=int, default=2, help="nearstreamd --workers")
    p.add_argument("--durability", default="async", choices=["none", "async", "sync"])
    p.add_argument("--batch-size", default="64K", help="Nearstream chunk / Kafka batch.size")
    p.add_argument("--linger-ms", type=int, default=5)
    p.add_argument("--retention-mb", type=int, default=256, help="per streamlet / partition")
    p.add_argument("--heap", default="2g", help="the benchmark JVM's heap")


def run(args, out_dir, workdir):
    # A relative --out when it is in the repository, so the page quotes no local path.
    rel = os.path.relpath(out_dir, paths.ROOT)
    out = out_dir if rel.startswith("..") else rel
    argv = [paths.java(), f"-Xms{args.heap}", f"-Xmx{args.heap}", "-XX:+AlwaysPreTouch",
            "-XX:+UseParallelGC", "--add-opens=java.base/java.lang=ALL-UNNAMED",
            "--add-opens=java.base/java.util=ALL-UNNAMED",
            "--add-opens=java.base/java.nio=ALL-UNNAMED",
            "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
            "-Dio.netty.tryReflectionSetAccessible=true",
            f"-Dnearstream.bench.command={args.command}",
            "-cp", os.path.relpath(paths.benchmarks_jar(), paths.ROOT), MAIN,
            "--sinks", args.sinks, "--repetitions", str(args.repetitions),
            "--warmup-s", str(args.warmup_s), "--measure-s", str(args.measure_s),
            "--checkpoint-ms", str(args.checkpoint_ms), "--record-bytes", str(args.record_bytes),
            "--parallelism", str(args.parallelism), "--streamlets", str(args.streamlets),
            "--workers", str(args.workers), "--durability", args.durability,
            "--batch-bytes", str(parse_size(args.batch_size)), "--linger-ms", str(args.linger_ms),
            "--retention-mb", str(args.retention_mb), "--out", out]
    runs = args.repetitions * len(args.sinks.split(","))
    timeout = 300 + runs * (args.warmup_s + args.measure_s + 60)
    print("$ " + " ".join(shlex.quote(a) for a in argv), flush=True)
    p = Process("sink-benchmark", argv, os.path.join(workdir, "sink-benchmark.log"), cwd=paths.ROOT)
    rc = p.wait(timeout)
    output = p.output()
    if rc != 0:
        raise RuntimeError(f"the sink benchmark failed (exit {rc}), log {p.log_path}:\n"
                           f"{output[-4000:]}")
    print(output[output.find("# Flink sinks"):] if "# Flink sinks" in output else output[-4000:])
    draw(os.path.join(out_dir, "sink-throughput.csv"), out_dir)


def draw(csv_path, out_dir):
    """Records/s and total CPU seconds per million records, a bar per sink (the discarding
    sink's baseline is left out: it is in the table)."""
    plots.bar_plot(csv_path, os.path.join(out_dir, "sink-throughput.png"), "sink",
                   [("records_per_s", "records/s (millions)", 1e6),
                    ("total_cpu_s_per_m", "CPU s per million records (job + broker)", 1.0)],
                   "Flink sinks, 100-byte records, 1 s checkpoints; ALO = at least once, EO ="
                   " exactly once", labels=LABELS, only=list(LABELS))

