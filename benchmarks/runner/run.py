#!/usr/bin/env python3
"""Runs one experiment of the pull-vs-push evaluation and writes CSV, Markdown and PNG: the figures
of Marcu and Bouvry, "Colocating Real-time Storage and Processing: An Analysis of Pull-based versus
Push-based Streaming" (Figs. 3-9), the Yahoo Streaming Benchmark as AIR (Venugopal et al.)
runs it, the Flink sinks side by side (`sink`), a broker cluster of 1, 2 and 3 brokers
(`cluster`), the count job over a cluster, AUTO vs PULL (`cluster-count`), and producers with
replication 1 vs 2 plus the failover time (`replication`).

  benchmarks/runner/run.py EXPERIMENT [--out DIR] [experiment flags]
  benchmarks/runner/run.py EXPERIMENT --help
  benchmarks/runner/run.py plot [DIR ...]    redraw the PNGs from the CSVs (default: docs/results)

Every process it starts (brokers, producers, Flink jobs, Kafka) and every /dev/shm region they
create is removed when it ends, also on Ctrl-C. Build first: mvn -B package -DskipTests.
"""
import argparse
import functools
import os
import shlex
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from nsbench import (  # noqa: E402
    exp_catch_up, exp_cluster, exp_cluster_count, exp_consume, exp_ingest, exp_kafka_count,
    exp_replication, exp_sink, exp_wordcount, exp_ysb)


class _Preset:
    """An exp_consume preset as an experiment module."""

    def __init__(self, name):
        self.name = name
        self.__doc__ = f"{exp_consume.PRESETS[name]['fig']}: " + exp_consume.__doc__
        self.add_arguments = exp_consume.add_arguments_for(name)

    def run(self, args, out, workdir):
        return exp_consume.run_preset(self.name, args, out, workdir)


# A result CSV's file name -> the function that draws its figures from it (csv_path, out_dir).
DRAWERS = {
    "cluster.csv": exp_cluster.draw,
    "cluster-count.csv": exp_cluster_count.draw,
    "fig3-ingest.csv": exp_ingest.draw,
    "kafka-count.csv": exp_kafka_count.draw,
    "replication.csv": exp_replication.draw,
    "sink-throughput.csv": exp_sink.draw,
    "wordcount.csv": exp_wordcount.draw,
    "ysb.csv": exp_ysb.draw,
    **{f"{name}.csv": functools.partial(exp_consume.draw, name) for name in exp_consume.PRESETS},
}


def plot(dirs):
    """Redraws the figures of every result directory in `dirs` (and their subdirectories) from
    the CSVs found there, without running anything."""
    drawn = 0
    for top in dirs:
        for d, _, files in sorted(os.walk(os.path.abspath(top))):
            for name in sorted(files):
                if name in DRAWERS:
                    print(f"plot {os.path.join(d, name)}")
                    DRAWERS[name](os.path.join(d, name), d)
                    drawn += 1
    if drawn == 0:
        raise SystemExit(f"no result CSV found under {', '.join(dirs)}")


EXPERIMENTS = {
    "catch-up": exp_catch_up,
    "cluster": exp_cluster,
    "cluster-count": exp_cluster_count,
    "ingest": exp_ingest,
    "kafka-count": exp_kafka_count,
    "replication": exp_replication,
    "sink": exp_sink,
    "wordcount": exp_wordcount,
    "ysb": exp_ysb,
    **{name: _Preset(name) for name in exp_consume.PRESETS},
}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="experiment", required=True)
    p = sub.add_parser("plot", help="redraw the PNGs of result directories from their CSVs",
                       description=plot.__doc__)
    p.add_argument("dirs", nargs="*", help="result directories (default docs/results)")
    for name, module in EXPERIMENTS.items():
        p = sub.add_parser(name, help=module.__doc__.splitlines()[0], description=module.__doc__)
        p.add_argument("--out", default=None, help="results directory (default docs/results/<experiment>)")
        module.add_arguments(p)
    args = parser.parse_args()
    from nsbench import paths
    if args.experiment == "plot":
        plot(args.dirs or [os.path.join(paths.ROOT, "docs", "results")])
        return
    args.command = "benchmarks/runner/run.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    # Absolute: the plots are drawn by a subprocess that runs in the runner's directory.
    out = os.path.abspath(args.out or os.path.join(paths.ROOT, "docs", "results", args.experiment))
    with tempfile.TemporaryDirectory(prefix=f"nsbench-{args.experiment}-") as workdir:
        EXPERIMENTS[args.experiment].run(args, out, workdir)
    print(f"results in {out}")


if __name__ == "__main__":
    main()
